"""Append-only SQLite migrations: named functions, one transaction each, recorded in a table.

A database module declares ``MIGRATIONS = [create_notes, add_aliases, ...]`` and calls
``apply(conn, MIGRATIONS)`` after connecting. Each function runs inside its own transaction and
its name is recorded in ``_migrations``; a function already recorded is never run again, so
migrations are only ever appended, never edited. The runner both databases share
(``index/db.py`` for index.db, ``memory/db.py`` for memory.db).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

__all__ = ["Migration", "applied", "apply", "prepare", "run_statements"]

Migration = Callable[[sqlite3.Connection], None]


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations recorded in this database, in the order they ran."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def apply(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Run the migrations not yet recorded; returns the names that ran now."""
    done = set(applied(conn))
    ran: list[str] = []
    for fn in migrations:
        name = fn.__name__
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        # Another process may have run it between our read and this write lock: check again.
        if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
            conn.execute("ROLLBACK")
            continue
        try:
            fn(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, time.time())
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        ran.append(name)
    return ran


def prepare(
    conn: sqlite3.Connection, pragmas: Sequence[str], migrations: Sequence[Migration]
) -> None:
    """Run ``pragmas`` then the migrations not yet recorded, on a connection just opened.

    Two connections opening a new database at once (a server's watcher and its first tool call,
    two processes) can meet mid-creation, where SQLite answers "locked" at once instead of
    waiting (a write on a snapshot another connection has just moved past), or both try to
    record the same migration: each is tried again, for up to five seconds, as waiting would
    have done.
    """
    for attempt in range(50):
        try:
            for pragma in pragmas:
                conn.execute(pragma)
            apply(conn, migrations)
            return
        except (sqlite3.OperationalError, sqlite3.IntegrityError) as exc:
            locked = isinstance(exc, sqlite3.IntegrityError) or "locked" in str(exc)
            if not locked or attempt == 49:
                raise
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            time.sleep(0.1)


def run_statements(conn: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL statements inside the current transaction.

    (``executescript`` would commit the migration's transaction first, so it is not used.)
    """
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)
