"""The tools an agent run may call: one small protocol and its implementations.

``ToolSet`` is what the loop needs: ``specs()`` (name, description, JSON Schema of the
parameters) and ``call(name, arguments) -> dict``, which is synchronous (the loop runs it in a
worker thread) and never raises for a bad call: it returns a failure result the model can read
(``{"error": ...}`` or ``{"success": false, ...}``; ``result_ok`` tells them apart).

* ``VaultTools``: the three vault tools of ``vaultpilot.tools.registry`` on one ``ToolContext``.
  A lock makes sure one thread at a time uses the context's SQLite connection. It also gives the
  loop what it needs about the vault: note paths and text (for ``@`` mentions) and the facts the
  system prompt states.
* ``ProcessTools``: tools registered in memory.db's ``tool_registry`` (programs speaking the
  ActionRequest/ActionResponse contract). Their tagged command schema is flattened for the model;
  ``call`` splits ``{"type": action, ...}`` into the action and payload, adds the arguments the
  transport fixed and hands them to ``runner``, which the transport supplies (the contract
  orchestrator lives in a transport layer the agent may not import).

  Where a tool works is never the model's choice: a prompt injected into any note could point it
  at another folder or repository of the machine. ``ProcessTools.for_vault`` fixes every
  ``vault_path`` and ``repo_path`` a tool takes (``VAULT_ARGUMENTS``) to the run's vault; fixed
  arguments are left out of the schemas the model sees, and a call that names one anyway, names
  an argument its action's schema does not list, or names an unknown action, gets a failure
  result saying what to do instead, without running anything. A tool whose ``repo_path`` is fixed
  (git_agent) works on the vault's own repository only: when the vault has no ``.git`` at its
  top, the call fails with a message saying so (git would otherwise find a repository above it).
* ``FunctionTools``: plain typed Python functions; the schema is derived from the signature and the
  description is the docstring (for custom tools and tests).
* ``CombinedTools``: several sets in order; the first set offering a name wins.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from vaultpilot.agent.schemas import flatten_tagged_union, tagged_variants
from vaultpilot.errors import VaultpilotError
from vaultpilot.memory.registry import ProcessTool
from vaultpilot.tools.schema import compact_schema, render_schema, unwrap_text
from vaultpilot.tools.validation import explain

__all__ = [
    "VAULT_ARGUMENTS",
    "CombinedTools",
    "FunctionTools",
    "ProcessRunner",
    "ProcessTools",
    "RunScoped",
    "ToolSet",
    "ToolSpec",
    "failure",
    "for_run",
    "result_ok",
    "vault_arguments",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


class ToolSet(Protocol):
    def specs(self) -> Sequence[ToolSpec]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class RunScoped(Protocol):
    """A tool set whose changes can be grouped per run (``VaultTools``: one change set)."""

    def for_run(self, run_id: str) -> ToolSet: ...


def for_run(tools: ToolSet, run_id: str) -> ToolSet:
    """``tools`` as one run uses them: every change it makes joins the change set ``run_id``."""
    return tools.for_run(run_id) if isinstance(tools, RunScoped) else tools


def failure(message: str) -> dict[str, Any]:
    """The generic failure result: ``{"error": message}``."""
    return {"error": message}


def result_ok(result: Mapping[str, Any]) -> bool:
    """False when a tool result reports a failed call."""
    return not ("error" in result or result.get("success") is False)


def _unknown(name: str, names: Sequence[str]) -> dict[str, Any]:
    return failure(f"Unknown tool '{name}'. Valid tools: {', '.join(names)}.")


# A process tool, its action, and the payload → the JSON result (ActionResponse, or {"error"}).
ProcessRunner = Callable[[ProcessTool, str, dict[str, Any]], dict[str, Any]]


# The arguments that say where a process tool works; the transport fixes them to the run's vault.
VAULT_ARGUMENTS = ("vault_path", "repo_path")


@dataclass(frozen=True, slots=True)
class ProcessTools:
    tools: tuple[ProcessTool, ...]
    runner: ProcessRunner
    # tool name -> the arguments the transport sets for every call; the model cannot change them.
    fixed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_vault(
        cls, tools: Sequence[ProcessTool], runner: ProcessRunner, vault: Path | str
    ) -> ProcessTools:
        """The tools bound to one vault: each ``vault_path``/``repo_path`` a tool takes is it."""
        fixed: dict[str, Mapping[str, Any]] = {}
        for tool in tools:
            pinned = {name: str(vault) for name in vault_arguments(tool)}
            if pinned:
                fixed[tool.name] = MappingProxyType(pinned)
        return cls(tuple(tools), runner, MappingProxyType(fixed))

    def specs(self) -> list[ToolSpec]:
        """What the model is offered; a tool bound to a vault that is not a git repository is
        left out until it is one (each of its calls could only fail)."""
        out = []
        for tool in self.tools:
            repo = self.fixed.get(tool.name, {}).get("repo_path")
            if repo is not None and _not_a_repository(tool.name, str(repo)) is not None:
                continue
            fixed = list(self.fixed.get(tool.name, {}))  # set by the transport, not the model
            params = flatten_tagged_union(tool.payload_schema, omit=fixed)
            description = tool.description
            if fixed:
                them = "it" if len(fixed) == 1 else "them"
                description += f" In this run {_fixed_phrase(fixed)}: leave {them} out."
            out.append(ToolSpec(tool.name, unwrap_text(description), compact_schema(params)))
        return out

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            return _unknown(name, [t.name for t in self.tools])
        fixed = self.fixed.get(name, {})
        chosen = [arg for arg in arguments if arg in fixed]
        if chosen:
            return failure(
                f"{_fixed_phrase(chosen)} and cannot be changed. {name} works on this vault "
                "only; call it again without "
                f"{' and '.join(repr(arg) for arg in chosen)}."
            )
        action = arguments.get("type")
        if not isinstance(action, str) or not action:
            return failure(
                f'{name} needs the action in \'type\', e.g. {{"type": "...", ...}}; see the '
                "tool's schema for the actions."
            )
        variants = tagged_variants(tool.payload_schema)
        if variants and action not in variants:
            return failure(
                f"{name} has no action '{action}'; set 'type' to one of: {', '.join(variants)}."
            )
        schema = variants.get(action) or flatten_tagged_union(tool.payload_schema)
        problem = _extra_arguments(name, action, schema, arguments, fixed)
        if problem is None and "repo_path" in fixed:
            problem = _not_a_repository(name, str(fixed["repo_path"]))
        if problem is not None:
            return failure(problem)
        taken = schema.get("properties")
        payload = {k: v for k, v in arguments.items() if k != "type"}
        payload.update({k: v for k, v in fixed.items() if taken is None or k in taken})
        try:
            return self.runner(tool, action, payload)
        except Exception as exc:  # a runner must not take the run down, nor leak its text
            log.exception("process tool %s failed", name)
            return failure(
                f"{name} could not be run ({type(exc).__name__}). Don't retry it; tell the user, "
                "who can see the details in the log."
            )


def vault_arguments(tool: ProcessTool) -> list[str]:
    """The arguments of ``VAULT_ARGUMENTS`` that ``tool`` takes (where it works)."""
    taken = _argument_names(tool.payload_schema)
    return [name for name in VAULT_ARGUMENTS if name in taken]


def _argument_names(schema: dict[str, Any]) -> set[str]:
    """Every argument any action of a (tagged-union or plain) payload schema takes."""
    variants = list(tagged_variants(schema).values()) or [flatten_tagged_union(schema)]
    return {name for v in variants for name in v.get("properties", {})}


def _fixed_phrase(names: Sequence[str]) -> str:
    verb = "is" if len(names) == 1 else "are"
    return f"{' and '.join(names)} {verb} set by vaultpilot to this run's vault"


def _extra_arguments(
    name: str,
    action: str,
    schema: Mapping[str, Any],
    arguments: Mapping[str, Any],
    fixed: Mapping[str, Any],
) -> str | None:
    """A message naming the arguments the action's schema does not list, or None.

    The shipped tools ignore unknown fields; a model whose argument was silently dropped would
    believe it had been used. Only a schema that says so (``additionalProperties`` true or a
    schema) takes more, and one that lists no properties at all is not checked.
    """
    props = schema.get("properties")
    extra = schema.get("additionalProperties", False)
    if not isinstance(props, Mapping) or (extra is not False and extra is not None):
        return None
    unknown = [arg for arg in arguments if arg != "type" and arg not in props]
    if not unknown:
        return None
    valid = [p for p in props if p != "type" and p not in fixed]
    return (
        f"{name} {action} does not take {', '.join(repr(a) for a in unknown)}; its arguments "
        f"are: {', '.join(valid) or 'none besides type'}. Call it again without the others."
    )


def _not_a_repository(name: str, vault: str) -> str | None:
    # git looks for a repository upwards from the folder it runs in: a vault inside a larger
    # repository (or the home folder's) would hand the model that repository instead.
    found = os.path.join(vault, ".git")
    if os.path.isdir(found) and not os.path.islink(found):  # a .git file or link leads away
        return None
    return (
        f"The vault is not a git repository (it has no .git folder at its top), and {name} "
        "works on the vault's own repository only. Don't retry; tell the user, who can run "
        "'git init' in the vault to use it."
    )


@dataclass(frozen=True, slots=True)
class _Function:
    fn: Callable[..., Any]
    params: type[BaseModel]
    spec: ToolSpec


def _function(fn: Callable[..., Any]) -> _Function:
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn, eval_str=True).parameters.items():
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    model = create_model(f"{fn.__name__}_params", __config__=ConfigDict(extra="forbid"), **fields)
    spec = ToolSpec(
        fn.__name__, unwrap_text(inspect.getdoc(fn) or ""), render_schema(model, by_alias=False)
    )
    return _Function(fn, model, spec)


class FunctionTools:
    """Typed Python functions as tools: ``FunctionTools([read_note, search])``."""

    def __init__(self, functions: Sequence[Callable[..., Any]]) -> None:
        self._by_name = {f.spec.name: f for f in map(_function, functions)}

    def specs(self) -> list[ToolSpec]:
        return [f.spec for f in self._by_name.values()]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        entry = self._by_name.get(name)
        if entry is None:
            return _unknown(name, list(self._by_name))
        try:
            params = entry.params.model_validate(arguments)
        except ValidationError as exc:
            return failure(explain(exc, subject=name, model=entry.params))
        try:
            value = entry.fn(**dict(params))
        except VaultpilotError as exc:
            return failure(exc.message)
        except Exception as exc:  # never hand the model raw exception text
            log.exception("tool %s failed", name)
            return failure(f"{name} stopped on an unexpected error ({type(exc).__name__}).")
        return value if isinstance(value, dict) else {"result": value}


class CombinedTools:
    """Several tool sets as one; a name offered by two sets goes to the first. What the sets
    offer is read again by ``specs`` and ``for_run`` (a vault may have become a git repository);
    ``call`` routes by what they offered when this object was made (a run's, by ``for_run``)."""

    def __init__(self, *sets: ToolSet) -> None:
        self._sets = sets
        self._owner = self._owners()

    def _owners(self) -> dict[str, tuple[ToolSet, ToolSpec]]:
        owner: dict[str, tuple[ToolSet, ToolSpec]] = {}
        for tool_set in self._sets:
            for spec in tool_set.specs():
                owner.setdefault(spec.name, (tool_set, spec))
        return owner

    def specs(self) -> list[ToolSpec]:
        return [spec for _, spec in self._owners().values()]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner.get(name)
        if owner is None:
            return _unknown(name, list(self._owner))
        return owner[0].call(name, arguments)

    def for_run(self, run_id: str) -> CombinedTools:
        return CombinedTools(*(for_run(s, run_id) for s in self._sets))
