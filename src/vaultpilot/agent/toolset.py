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
  ``call`` splits ``{"type": action, ...}`` into the action and payload, adds per-tool defaults
  (e.g. ``vault_path``) and hands them to ``runner``, which the transport supplies (the contract
  orchestrator lives in a transport layer the agent may not import).
* ``FunctionTools``: plain typed Python functions; the schema is derived from the signature and the
  description is the docstring (for custom tools and tests).
* ``CombinedTools``: several sets in order; the first set offering a name wins.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from vaultpilot.agent.schemas import flatten_tagged_union
from vaultpilot.memory.registry import ProcessTool

__all__ = [
    "CombinedTools",
    "FunctionTools",
    "ProcessRunner",
    "ProcessTools",
    "ToolSet",
    "ToolSpec",
    "failure",
    "result_ok",
]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


class ToolSet(Protocol):
    def specs(self) -> Sequence[ToolSpec]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


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


@dataclass(frozen=True, slots=True)
class ProcessTools:
    tools: tuple[ProcessTool, ...]
    runner: ProcessRunner
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def specs(self) -> list[ToolSpec]:
        out = []
        for tool in self.tools:
            params = flatten_tagged_union(tool.payload_schema)
            props = params.get("properties", {})
            for name in self.defaults.get(tool.name, {}):  # supplied by us, not the model
                props.pop(name, None)
                if name in params.get("required", []):
                    params["required"].remove(name)
            out.append(ToolSpec(tool.name, tool.description, params))
        return out

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            return _unknown(name, [t.name for t in self.tools])
        action = arguments.get("type")
        if not isinstance(action, str) or not action:
            return failure(
                f'{name} needs the action in \'type\', e.g. {{"type": "...", ...}}; see the '
                "tool's schema for the actions."
            )
        payload = {**self.defaults.get(name, {}), **arguments}
        payload.pop("type")
        try:
            return self.runner(tool, action, payload)
        except Exception as exc:  # a runner must not take the run down
            return failure(f"{name} could not be run: {type(exc).__name__}: {exc}.")


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
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    spec = ToolSpec(fn.__name__, inspect.getdoc(fn) or "", schema)
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
            problems = "; ".join(
                f"'{'.'.join(map(str, e['loc'])) or 'arguments'}': {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            return failure(f"Invalid arguments for {name}: {problems}.")
        try:
            value = entry.fn(**dict(params))
        except Exception as exc:
            return failure(f"{name} failed: {exc}")
        return value if isinstance(value, dict) else {"result": value}


class CombinedTools:
    """Several tool sets as one; a name offered by two sets goes to the first."""

    def __init__(self, *sets: ToolSet) -> None:
        self._owner: dict[str, ToolSet] = {}
        self._specs: list[ToolSpec] = []
        for tool_set in sets:
            for spec in tool_set.specs():
                if spec.name not in self._owner:
                    self._owner[spec.name] = tool_set
                    self._specs.append(spec)

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner.get(name)
        if owner is None:
            return _unknown(name, list(self._owner))
        return owner.call(name, arguments)
