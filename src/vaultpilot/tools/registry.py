"""The tool registry: the three vault tools, each described once, and the one way to call them.

A ``Tool`` is the one description of a vault tool, as MCP's ``Tool`` with its annotations is:

* ``name``, ``title``, ``description`` (the tool function's docstring, written for the model,
  unwrapped) and ``schema()`` (its parameters, rendered by ``tools.schema``: exactly what the
  model and MCP clients receive);
* ``params`` (the typed parameters model) and ``run`` (the typed function), and ``failure``, the
  shape of a failed call's result;
* ``selector``, the argument that picks the operation, and ``operations``: the facts of each
  (``tools.operations``: writes, destructive, guarded, which arguments name files, dry run).
  ``read_only``/``destructive``/``idempotent`` of the whole tool derive from them;
* ``versions(result)``, the ``(path, version)`` pairs a result reports (what the agent passes back
  as ``expectedVersion``).

Transports (the agent loop, the HTTP server, MCP, the CLI) use only this module and the typed
functions of ``tools.api``:

* ``TOOLS`` / ``get_tool(name)``; ``tool_schemas()``: ``[{name, description, parameters}]``.
* ``call_tool(ctx, name, arguments)`` validates ``arguments`` (a JSON object), runs the tool and
  returns its JSON result. It never raises for a bad call: a validation problem, a
  ``VaultpilotError`` or an unexpected failure becomes the tool's failure result with a message
  saying what went wrong and what to do instead (never a traceback or raw exception text).
  ``run_tool`` does the same and also returns the error, for transports that map it to a code.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from vaultpilot.errors import InternalError, InvalidArgumentError, VaultpilotError
from vaultpilot.tools import enforce
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import obsidian_vault_manager
from vaultpilot.tools.models import GetContextParams, QueryVaultParams, VaultManagerParams
from vaultpilot.tools.operations import (
    CONTEXT_OPERATIONS,
    MANAGER_OPERATIONS,
    QUERY_OPERATIONS,
    Operation,
    is_dry_run,
)
from vaultpilot.tools.query import obsidian_query_vault
from vaultpilot.tools.read import obsidian_get_context
from vaultpilot.tools.schema import render_schema, unwrap_text
from vaultpilot.tools.tokens import estimate_tokens
from vaultpilot.tools.validation import explain

__all__ = [
    "TOOLS",
    "Tool",
    "ToolOutcome",
    "call_operation",
    "call_tool",
    "get_tool",
    "is_dry_run",
    "is_error",
    "run_tool",
    "tool_schemas",
]

log = logging.getLogger(__name__)
Runner = Callable[[ToolContext, Any], Mapping[str, Any]]
Versions = Callable[[Mapping[str, Any]], list[tuple[str, str]]]


def _no_versions(_result: Mapping[str, Any]) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    title: str
    params: type[BaseModel]
    run: Runner
    failure: Callable[[str, Mapping[str, Any]], dict[str, Any]]
    selector: str  # the wire name of the argument that picks the operation
    operations: Mapping[str, Operation]
    versions: Versions = _no_versions

    @property
    def description(self) -> str:
        return unwrap_text(inspect.getdoc(self.run) or "")

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's parameters, as the model and MCP clients receive it."""
        return render_schema(self.params)

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.schema()}

    @property
    def read_only(self) -> bool:
        return not any(op.writes for op in self.operations.values())

    @property
    def destructive(self) -> bool:
        return any(op.destructive for op in self.operations.values())

    @property
    def idempotent(self) -> bool:
        return all(op.idempotent for op in self.operations.values())

    def operation(self, arguments: Mapping[str, Any] | None) -> Operation | None:
        """The operation a call's arguments pick (None when they name no known one)."""
        value = (arguments or {}).get(self.selector)
        return self.operations.get(value) if isinstance(value, str) else None

    def files(self, arguments: Mapping[str, Any] | None) -> list[str]:
        """The notes and folders a call names, in the order its operation lists them."""
        op = self.operation(arguments)
        return list(dict.fromkeys(_names(arguments or {}, op.files if op else ())))


def _names(arguments: Mapping[str, Any], fields: tuple[str, ...]) -> Iterator[str]:
    for key in fields:
        value = arguments.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                yield item


def _query_failure(message: str, _args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "results": [],
        "totalFound": 0,
        "truncated": False,
        "suggestion": message,
        "error": message,
    }


def _context_failure(message: str, _args: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"primaryNote": None, "error": message}
    out["tokenEstimate"] = estimate_tokens(out) + 4
    return out


def _manager_failure(message: str, args: Mapping[str, Any]) -> dict[str, Any]:
    operation = args.get("operation")
    return {
        "success": False,
        "operation": operation if isinstance(operation, str) else "",
        "affectedCount": 0,
        "affectedPaths": [],
        "message": message,
    }


def _read_versions(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    notes = [result.get("primaryNote"), *(result.get("relatedNotes") or [])]
    return [
        (str(n["path"]), str(n["version"]))
        for n in notes
        if isinstance(n, Mapping) and isinstance(n.get("version"), str) and n.get("path")
    ]


def _write_versions(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    # A single-note write reports the note's new version beside the path it now has.
    version, paths = result.get("version"), result.get("affectedPaths") or []
    if result.get("success") is False or not isinstance(version, str) or not paths:
        return []
    return [(str(paths[0]), version)]


TOOLS: tuple[Tool, ...] = (
    Tool(
        "obsidian_query_vault",
        "Find notes in the vault",
        QueryVaultParams,
        obsidian_query_vault,
        _query_failure,
        "queryType",
        QUERY_OPERATIONS,
    ),
    Tool(
        "obsidian_get_context",
        "Read notes with their context",
        GetContextParams,
        obsidian_get_context,
        _context_failure,
        "contextType",
        CONTEXT_OPERATIONS,
        _read_versions,
    ),
    Tool(
        "obsidian_vault_manager",
        "Change notes and folders",
        VaultManagerParams,
        obsidian_vault_manager,
        _manager_failure,
        "operation",
        MANAGER_OPERATIONS,
        _write_versions,
    ),
)
_BY_NAME = {t.name: t for t in TOOLS}


def call_operation(name: str, arguments: Mapping[str, Any] | None) -> Operation | None:
    """The operation a call of tool ``name`` asks for, with its facts; None when ``name`` is no
    vault tool or the arguments name no known operation."""
    tool = _BY_NAME.get(name)
    return tool.operation(arguments) if tool is not None else None


def _selector_values(tool: Tool) -> set[str]:
    by_alias = {f.alias or n: f for n, f in tool.params.model_fields.items()}
    return set(typing.get_args(by_alias[tool.selector].annotation))


# The facts and the parameter models must name the same operations; a mismatch is our bug.
for _tool in TOOLS:
    if _selector_values(_tool) != set(_tool.operations):  # pragma: no cover - caught by any test
        raise InternalError(f"{_tool.name}: tools.operations and tools.models disagree")


def get_tool(name: str) -> Tool:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidArgumentError(
            f"Unknown tool '{name}'. Valid tools: {', '.join(_BY_NAME)}."
        ) from None


def tool_schemas() -> list[dict[str, Any]]:
    """``{name, description, parameters}`` for every tool."""
    return [t.spec() for t in TOOLS]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    result: dict[str, Any]
    error: VaultpilotError | None = None


def run_tool(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> ToolOutcome:
    """Validate and run one tool call; failures become the tool's failure result (see module)."""
    args: Mapping[str, Any] = arguments if arguments is not None else {}
    tool = _BY_NAME.get(name)
    if tool is None:
        err = InvalidArgumentError(f"Unknown tool '{name}'. Valid tools: {', '.join(_BY_NAME)}.")
        return ToolOutcome({"error": err.message}, err)
    if not isinstance(args, Mapping):
        err = InvalidArgumentError(f"Arguments for {name} must be a JSON object.")
        return ToolOutcome(tool.failure(err.message, {}), err)
    try:
        params = tool.params.model_validate(dict(args))
    except ValidationError as exc:
        err = InvalidArgumentError(explain(exc, subject=tool.name, model=tool.params))
        return ToolOutcome(tool.failure(err.message, args), err)
    try:
        enforce.before(ctx, tool, args)
        result = enforce.after(ctx, dict(tool.run(ctx, params)))
    except VaultpilotError as exc:
        return ToolOutcome(tool.failure(exc.message, args), exc)
    except Exception as exc:  # a bug or an unexpected OS error: never leak it raw
        log.exception("tool %s failed", name)
        failed = InternalError(
            f"{name} stopped on an unexpected internal error ({type(exc).__name__}). Check the "
            "vault's state (e.g. with obsidian_query_vault) before retrying."
        )
        return ToolOutcome(tool.failure(failed.message, args), failed)
    return ToolOutcome(result)


def call_tool(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run one tool call and return its JSON result (a failure result when it failed)."""
    return run_tool(ctx, name, arguments).result


def is_error(result: Mapping[str, Any]) -> bool:
    """Whether a tool result reports a failed call."""
    return "error" in result or result.get("success") is False
