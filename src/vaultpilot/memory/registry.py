"""The ``tool_registry`` table: which tools exist, what they take, and how to start them.

Two kinds of tool, a tagged union on ``kind``:

* ``BuiltinTool``: runs inside vaultpilot; the registry only describes it.
* ``ProcessTool``: a program speaking the stdin/stdout contract (one ``ActionRequest`` in, one
  ``ActionResponse`` out), started with ``command`` (an argv list, never a shell string).

``payload_schema`` is a JSON Schema object. For process tools it describes the tool's command in
the canonical tagged shape: an object whose ``type`` is the action and whose other fields are the
payload (as ``ObsidianAgentCommandV1`` and ``GitAgentCommandV1`` do).

``upsert_tool`` is idempotent: registering the same tool again changes nothing (not even
``updated_at``); registering it with a new description, schema or command updates the row and
keeps ``registered_at``. Every function takes an open connection (``memory.db.connect``).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vaultpilot.errors import InvalidArgumentError, NotFoundError

__all__ = [
    "BuiltinTool",
    "ProcessTool",
    "RegisteredTool",
    "ToolKind",
    "get_tool",
    "list_tools",
    "upsert_tool",
]

ToolKind = Literal["builtin", "process"]
# What model APIs accept as a function name.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A tool that runs inside vaultpilot."""

    name: str
    description: str
    payload_schema: dict[str, Any]
    kind: Literal["builtin"] = "builtin"


@dataclass(frozen=True, slots=True)
class ProcessTool:
    """A program that speaks the ActionRequest/ActionResponse contract."""

    name: str
    description: str
    payload_schema: dict[str, Any]
    command: tuple[str, ...]
    kind: Literal["process"] = "process"


RegisteredTool = BuiltinTool | ProcessTool

_SELECT = "SELECT name, kind, description, payload_schema, command FROM tool_registry"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check(tool: RegisteredTool) -> None:
    if not _NAME.fullmatch(tool.name):
        raise InvalidArgumentError(
            f"Tool name {tool.name!r} is not allowed; use 1 to 64 letters, digits, '_' or '-'."
        )
    if not isinstance(tool.payload_schema, dict):
        raise InvalidArgumentError(f"The payload schema of '{tool.name}' must be a JSON object.")
    if isinstance(tool, ProcessTool) and (
        not tool.command or not all(isinstance(a, str) and a for a in tool.command)
    ):
        raise InvalidArgumentError(
            f"The command of process tool '{tool.name}' must be a non-empty list of "
            "non-empty strings (the program and its arguments)."
        )


def upsert_tool(
    conn: sqlite3.Connection, tool: RegisteredTool, *, now: float | None = None
) -> bool:
    """Insert or update ``tool``; returns True if the row was created or changed."""
    _check(tool)
    stamp = time.time() if now is None else now
    command = _canonical(list(tool.command)) if isinstance(tool, ProcessTool) else None
    before = conn.total_changes
    conn.execute(
        """
        INSERT INTO tool_registry
            (name, kind, description, payload_schema, command, registered_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET
            kind = excluded.kind,
            description = excluded.description,
            payload_schema = excluded.payload_schema,
            command = excluded.command,
            updated_at = excluded.updated_at
        WHERE (kind, description, payload_schema, command)
            IS NOT (excluded.kind, excluded.description, excluded.payload_schema,
                    excluded.command)
        """,
        (
            tool.name,
            tool.kind,
            tool.description,
            _canonical(tool.payload_schema),
            command,
            stamp,
            stamp,
        ),
    )
    return conn.total_changes != before


def _from_row(row: Sequence[Any]) -> RegisteredTool:
    name, kind, description, schema, command = row
    if kind == "process":
        return ProcessTool(name, description, json.loads(schema), tuple(json.loads(command)))
    return BuiltinTool(name, description, json.loads(schema))


def get_tool(conn: sqlite3.Connection, name: str) -> RegisteredTool:
    """The tool called ``name``; NotFoundError lists the registered names."""
    row = conn.execute(_SELECT + " WHERE name = ?", (name,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT name FROM tool_registry ORDER BY name")]
        raise NotFoundError(
            f"No tool named '{name}' is registered. Registered tools: {', '.join(known) or 'none'}."
        )
    return _from_row(row)


def list_tools(conn: sqlite3.Connection, *, kind: ToolKind | None = None) -> list[RegisteredTool]:
    """Every registered tool (or those of one kind), by name."""
    if kind is None:
        rows = conn.execute(_SELECT + " ORDER BY name")
    else:
        rows = conn.execute(_SELECT + " WHERE kind = ? ORDER BY name", (kind,))
    return [_from_row(r) for r in rows]
