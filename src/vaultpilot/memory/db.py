"""Opening memory.db and its schema.

Contract:

* ``connect(path)`` creates the folder (0700) and the file (0600, so its ``-wal``/``-shm`` files
  are too) if needed and tightens looser existing ones (``locations.private_database``), sets
  WAL mode and a busy timeout (several agent processes may start at once), applies every
  migration not yet recorded, and returns a connection in autocommit mode
  (``isolation_level=None``; callers that need a transaction issue ``BEGIN``). Failures raise
  ``StorageError`` with the path in the message.
* ``MIGRATIONS`` is append-only: to change the schema, write a new named function and append it.
  Each migration uses ``IF NOT EXISTS`` so that two processes migrating the same new database at
  the same moment both succeed (see ``connect``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vaultpilot.errors import StorageError, database_advice, map_os_errors
from vaultpilot.locations import private_database
from vaultpilot.memory.migrations import Migration, prepare

__all__ = [
    "BUSY_TIMEOUT_S",
    "MIGRATIONS",
    "connect",
    "create_change_journal",
    "create_conversations",
    "create_tool_registry",
]

BUSY_TIMEOUT_S = 10.0


def create_tool_registry(conn: sqlite3.Connection) -> None:
    """Tools the agent can use: built-in (in-process) and process tools (a command to spawn).

    ``payload_schema`` and ``command`` hold JSON text: a JSON Schema object, and the argv list
    (NULL for a built-in tool).
    """
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS tool_registry (
            name TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('builtin', 'process')),
            description TEXT NOT NULL,
            payload_schema TEXT NOT NULL,
            command TEXT,
            registered_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            CHECK ((kind = 'process') = (command IS NOT NULL))
        )
        """
    )


def create_conversations(conn: sqlite3.Connection) -> None:
    """Agent conversations (``agent.conversations``): the history, each run's events, tokens.

    ``message`` and ``event`` hold JSON text: an OpenAI-shaped chat message, and an agent event
    (``agent.events.event_to_dict``).
    """
    for statement in (
        """
        CREATE TABLE IF NOT EXISTS conversations (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            vault TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS conversation_messages (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            message TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS conversation_events (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            event TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, seq)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS conversation_usage (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            step INTEGER NOT NULL,
            model TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            total_tokens INTEGER NOT NULL,
            estimated INTEGER NOT NULL,
            created_at REAL NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at)",
        "CREATE INDEX IF NOT EXISTS conversation_events_by_conversation"
        " ON conversation_events (conversation_id, run_id)",
        "CREATE INDEX IF NOT EXISTS conversation_usage_by_conversation"
        " ON conversation_usage (conversation_id)",
    ):
        conn.execute(statement)


def create_change_journal(conn: sqlite3.Connection) -> None:
    """The change journal (``memory.journal``): change sets, their file changes, and blobs.

    A file change names its contents by SHA-256 (``hash_before``/``hash_after``, NULL for none);
    the bytes live once in ``journal_blobs``, however many changes share them.
    """
    for statement in (
        """
        CREATE TABLE IF NOT EXISTS change_sets (
            id TEXT PRIMARY KEY,
            vault TEXT NOT NULL,
            source TEXT NOT NULL,
            run_id TEXT,
            summary TEXT NOT NULL,
            undo_of TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS file_changes (
            set_id TEXT NOT NULL REFERENCES change_sets (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            operation TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('create', 'update', 'delete', 'move', 'mkdir')),
            path_before TEXT,
            path_after TEXT,
            hash_before TEXT,
            hash_after TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (set_id, seq)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS journal_blobs (
            hash TEXT PRIMARY KEY,
            data BLOB NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS change_sets_by_vault ON change_sets (vault, updated_at)",
    ):
        conn.execute(statement)


MIGRATIONS: list[Migration] = [create_tool_registry, create_conversations, create_change_journal]


def connect(path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """Open (creating if needed) the memory database at ``path`` and bring its schema up to date.

    ``check_same_thread=False`` is for a connection its owner guards with a lock across threads.
    """
    with map_os_errors(path, "open the memory database"):
        private_database(path)  # conversations: 0600 in a 0700 folder, -wal/-shm alike
    try:
        conn = sqlite3.connect(
            path,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_S,
            check_same_thread=check_same_thread,
        )
    except sqlite3.Error as exc:
        raise StorageError(
            f"Could not open the memory database '{path}': {exc}. {database_advice(exc, path)}"
        ) from None
    try:
        wait = f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}"
        pragmas = [wait, "PRAGMA journal_mode = WAL"]
        prepare(conn, pragmas, MIGRATIONS)  # a racing opener is waited for (see there)
    except sqlite3.Error as exc:
        conn.close()
        raise StorageError(
            f"Could not prepare the memory database '{path}': {exc}. {database_advice(exc, path)}"
        ) from None
    return conn
