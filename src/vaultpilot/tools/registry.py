"""The tool registry: the three vault tools, their schemas, and the one way to call them.

Transports (the agent loop, the HTTP server, MCP, the CLI) use only this module:

* ``TOOLS`` / ``get_tool(name)``: each ``Tool`` has a ``name``, a ``description`` (the tool
  function's docstring, written for the model), its parameters model and ``schema()``, the JSON
  Schema of its parameters (self-contained: no ``$ref``, no titles).
* ``tool_schemas()``: ``[{name, description, parameters}]`` for every tool, the shape LLM tool
  lists and MCP expect.
* ``call_tool(ctx, name, arguments)`` validates ``arguments`` (a JSON object), runs the tool and
  returns its JSON result. It never raises for a bad call: a validation problem, a
  ``VaultpilotError`` or an unexpected failure becomes the tool's failure result with a message
  saying what went wrong and what to do instead (never a traceback or raw exception text).
  ``run_tool`` does the same and also returns the error, for transports that map it to a code.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable, Mapping, Sized
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from vaultpilot.errors import InternalError, InvalidArgumentError, VaultpilotError
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import obsidian_vault_manager
from vaultpilot.tools.models import GetContextParams, QueryVaultParams, VaultManagerParams
from vaultpilot.tools.query import obsidian_query_vault
from vaultpilot.tools.read import obsidian_get_context
from vaultpilot.tools.tokens import estimate_tokens

__all__ = [
    "TOOLS",
    "Tool",
    "ToolOutcome",
    "call_tool",
    "get_tool",
    "is_error",
    "run_tool",
    "tool_schemas",
]

log = logging.getLogger(__name__)
Runner = Callable[[ToolContext, Any], Mapping[str, Any]]


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """One plain schema: ``$ref``s resolved, no titles, and ``X | null`` (default null) as ``X``.

    An optional parameter is shown as its type alone (null is still accepted); that halves the
    schema the model reads without hiding anything it needs.
    """
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **rest})
            options = node.get("anyOf")
            if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
                (other,) = [o for o in options if o != {"type": "null"}]
                rest = {k: v for k, v in node.items() if k != "anyOf"}
                if rest.get("default", 0) is None:
                    del rest["default"]
                target = other if "$ref" not in other else walk(other)
                return walk({**target, **rest})
            return {k: walk(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    out.pop("description", None)
    return out


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    params: type[BaseModel]
    run: Runner
    failure: Callable[[str, Mapping[str, Any]], dict[str, Any]]

    @property
    def description(self) -> str:
        return inspect.getdoc(self.run) or ""

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's parameters (camelCase names, as on the wire)."""
        return _inline(self.params.model_json_schema(by_alias=True))

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.schema()}


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


TOOLS: tuple[Tool, ...] = (
    Tool("obsidian_query_vault", QueryVaultParams, obsidian_query_vault, _query_failure),
    Tool("obsidian_get_context", GetContextParams, obsidian_get_context, _context_failure),
    Tool("obsidian_vault_manager", VaultManagerParams, obsidian_vault_manager, _manager_failure),
)
_BY_NAME = {t.name: t for t in TOOLS}


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


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


# What a length limit protects and what to do instead, by parameter (the last name in the
# error's location, camelCase as on the wire): (what happens to the allowed part, advice).
_NAME_ADVICE = ("are read", "Pass a shorter path or title")
_STRING_ADVICE: dict[str, tuple[str, str]] = {
    "query": ("are searched", "Ask with fewer words"),
    "content": ("fit in a note", "Split it into several notes"),
    "contains": ("are compared", "Search for a shorter text"),
    "tags": ("are read", "Use a shorter tag"),
    "expectedVersion": ("are read", "Pass the 'version' exactly as you read it"),
    "date": ("are read", "Write a date as YYYY-MM-DD"),
    "from": ("are read", "Write a date as YYYY-MM-DD"),
    "to": ("are read", "Write a date as YYYY-MM-DD"),
    **dict.fromkeys(
        ("target", "targets", "destination", "referenceNote", "path", "folder"), _NAME_ADVICE
    ),
}
_LIST_ADVICE: dict[str, tuple[str, str]] = {
    "targets": ("are taken in one call", "Split them into several calls"),
    "tags": ("are combined", "Filter on fewer tags"),
    "properties": ("are combined", "Filter on fewer properties"),
    "metadata": ("are set in one call", "Split them into several calls"),
    "metadataChanges": ("are set in one call", "Split them into several calls"),
}


def _too_long(loc: str, item: Mapping[str, Any]) -> str:
    """A length limit in the caller's terms: how long it was, the limit, what to do instead."""
    ctx = item.get("ctx") or {}
    given = item.get("input")
    names = [p for p in loc.split(".") if not p.isdigit()]
    name = to_camel(names[-1]) if names else loc
    match item["type"]:
        case "note_too_large":
            return (
                f"'{loc}' is {ctx['size']:,} bytes in UTF-8; at most {ctx['max_bytes']:,} "
                "fit in a note. Split it into several notes"
            )
        case "too_many_filters":
            return (
                f"'{loc}' has {ctx['count']:,} conditions and values; at most "
                f"{ctx['max_items']:,} are combined. Filter on fewer tags, properties or values"
            )
        case "filter_value_too_long":
            return (
                f"a property name or value in '{loc}' has {ctx['length']:,} characters; at most "
                f"{ctx['max_length']:,} are compared. Filter on a shorter value"
            )
        case "string_too_long":
            length = len(given) if isinstance(given, str) else 0
            done, advice = _STRING_ADVICE.get(name, ("are accepted", "Shorten it"))
            unit = "characters"
        case _:  # too_long: a list or an object
            length = ctx.get("actual_length") or (len(given) if isinstance(given, Sized) else 0)
            done, advice = _LIST_ADVICE.get(name, ("are accepted", "Pass fewer"))
            unit = "entries" if ctx.get("field_type") == "Dictionary" else "items"
    limit = int(ctx.get("max_length", 0))
    return f"'{loc}' has {length:,} {unit}; at most {limit:,} {done}. {advice}"


_LENGTH_ERRORS = (
    "string_too_long",
    "too_long",
    "note_too_large",
    "too_many_filters",
    "filter_value_too_long",
)


def _explain(tool: Tool, err: ValidationError) -> str:
    """A validation error in the model's terms: which parameter, what is wrong, what is valid."""
    problems: list[str] = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"]) or "arguments"
        kind = item["type"]
        if kind == "extra_forbidden":
            valid = ", ".join(_field_names(tool.params))
            problems.append(f"unknown parameter '{loc}' (valid parameters: {valid})")
        elif kind == "literal_error" and loc in ("operation", "queryType", "contextType"):
            valid = (item.get("ctx") or {}).get("expected", "")
            problems.append(f"unknown {loc} {item['input']!r}; valid values: {valid}")
        elif kind == "missing":
            problems.append(f"'{loc}' is required")
        elif kind in _LENGTH_ERRORS:
            problems.append(_too_long(loc, item))
        else:
            problems.append(f"'{loc}': {item['msg']}")
    return f"Invalid arguments for {tool.name}: " + "; ".join(problems) + "."


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
        err = InvalidArgumentError(_explain(tool, exc))
        return ToolOutcome(tool.failure(err.message, args), err)
    try:
        result = dict(tool.run(ctx, params))
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
