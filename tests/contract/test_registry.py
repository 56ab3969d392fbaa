"""memory.db and its tool_registry table, on real SQLite files."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.contract.catalog import register_shipped, shipped_tools
from vaultpilot.errors import InvalidArgumentError, NotFoundError, StorageError
from vaultpilot.memory.db import MIGRATIONS, connect
from vaultpilot.memory.migrations import applied, apply
from vaultpilot.memory.registry import (
    BuiltinTool,
    ProcessTool,
    get_tool,
    list_tools,
    upsert_tool,
)

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(tmp_path / "deep" / "memory.db")
    yield connection
    connection.close()


def test_connect_creates_the_file_and_records_migrations(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.db"
    first = connect(path)
    assert applied(first) == [m.__name__ for m in MIGRATIONS]
    assert first.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    first.close()
    again = connect(path)
    assert apply(again, MIGRATIONS) == []  # nothing runs twice
    again.close()


def test_connect_reports_an_unusable_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(StorageError, match="Could not open the memory database"):
        connect(blocker / "memory.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="Could not prepare the memory database"):
        connect(garbage)


def test_upsert_is_idempotent_and_keeps_registered_at(conn: sqlite3.Connection) -> None:
    tool = ProcessTool("echo_tool", "Echo.", SCHEMA, ("prog", "--flag"))
    assert upsert_tool(conn, tool, now=100.0) is True
    assert upsert_tool(conn, tool, now=200.0) is False
    stamps = "SELECT registered_at, updated_at FROM tool_registry WHERE name = 'echo_tool'"
    assert conn.execute(stamps).fetchone() == (100.0, 100.0)
    changed = ProcessTool("echo_tool", "Echo, better.", SCHEMA, ("prog",))
    assert upsert_tool(conn, changed, now=300.0) is True
    assert conn.execute(stamps).fetchone() == (100.0, 300.0)
    assert get_tool(conn, "echo_tool") == changed


def test_builtin_and_process_tools(conn: sqlite3.Connection) -> None:
    upsert_tool(conn, BuiltinTool("obsidian_query_vault", "Search.", SCHEMA))
    upsert_tool(conn, ProcessTool("zz_tool", "Z.", SCHEMA, ("z",)))
    assert [t.name for t in list_tools(conn)] == ["obsidian_query_vault", "zz_tool"]
    assert [t.kind for t in list_tools(conn, kind="builtin")] == ["builtin"]
    assert list_tools(conn, kind="process") == [ProcessTool("zz_tool", "Z.", SCHEMA, ("z",))]
    # A tool may change kind; the row follows.
    upsert_tool(conn, BuiltinTool("zz_tool", "Z.", SCHEMA))
    assert isinstance(get_tool(conn, "zz_tool"), BuiltinTool)
    assert conn.execute("SELECT command FROM tool_registry WHERE name='zz_tool'").fetchone() == (
        None,
    )


def test_bad_registrations_are_refused(conn: sqlite3.Connection) -> None:
    with pytest.raises(InvalidArgumentError, match="Tool name 'has space'"):
        upsert_tool(conn, BuiltinTool("has space", "x", SCHEMA))
    with pytest.raises(InvalidArgumentError, match="must be a non-empty list"):
        upsert_tool(conn, ProcessTool("p", "x", SCHEMA, ()))
    with pytest.raises(InvalidArgumentError, match="must be a non-empty list"):
        upsert_tool(conn, ProcessTool("p", "x", SCHEMA, ("prog", "")))
    with pytest.raises(InvalidArgumentError, match="must be a JSON object"):
        upsert_tool(conn, BuiltinTool("b", "x", ["not", "an", "object"]))  # type: ignore[arg-type]
    assert list_tools(conn) == []
    with pytest.raises(sqlite3.IntegrityError):  # the table itself refuses a command-less process
        conn.execute("INSERT INTO tool_registry VALUES ('p', 'process', 'x', '{}', NULL, 0, 0)")


def test_get_unknown(conn: sqlite3.Connection) -> None:
    register_shipped(conn)
    with pytest.raises(NotFoundError, match=r"Registered tools: git_agent, obsidian_agent\."):
        get_tool(conn, "nope")


def test_register_shipped_is_idempotent(conn: sqlite3.Connection) -> None:
    register_shipped(conn)
    before = conn.execute("SELECT * FROM tool_registry ORDER BY name").fetchall()
    register_shipped(conn)
    assert conn.execute("SELECT * FROM tool_registry ORDER BY name").fetchall() == before
    assert list_tools(conn) == sorted(shipped_tools(), key=lambda t: t.name)
