"""Conversations in memory.db: the store (``agent.conversations`` runs and records them).

Tables (created by ``memory.db``'s migration ``create_conversations``): ``conversations``
(id, title, vault, model, times), ``conversation_messages`` (the history in OpenAI chat shape, in
order), ``conversation_events`` (every event of every run), ``conversation_usage`` (one row per
model call). Every function reads and writes through a connection it is given
(``memory.db.connect``), from one thread. ``save_rows`` writes a batch of a run's rows in one
transaction.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vaultpilot.errors import NotFoundError

__all__ = [
    "Conversation",
    "delete_conversation",
    "get_conversation",
    "list_conversations",
    "load_history",
    "new_conversation",
    "next_message_seq",
    "run_ids",
    "run_transcripts",
    "save_rows",
]

_TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    title: str
    vault: str
    model: str
    created_at: float
    updated_at: float
    messages: int  # the person's messages (the model's and the tools' are not counted)


def new_conversation(
    conn: sqlite3.Connection, *, title: str, vault: str = "", model: str = ""
) -> Conversation:
    now = time.time()
    conv_id = uuid.uuid4().hex[:12]
    flat = " ".join(title.split())
    short = flat if len(flat) <= _TITLE_CHARS else flat[: _TITLE_CHARS - 1] + "…"
    conn.execute(
        "INSERT INTO conversations (id, title, vault, model, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (conv_id, short, vault, model, now, now),
    )
    return Conversation(conv_id, short, vault, model, now, now, 0)


_SELECT = """
    SELECT c.id, c.title, c.vault, c.model, c.created_at, c.updated_at,
           (SELECT COUNT(*) FROM conversation_messages m
             WHERE m.conversation_id = c.id AND json_extract(m.message, '$.role') = 'user')
    FROM conversations c
"""


def list_conversations(
    conn: sqlite3.Connection, *, vault: str | None = None, limit: int = 20
) -> list[Conversation]:
    """The most recently updated conversations first (of one vault, if given)."""
    where, args = ("WHERE c.vault = ?", (vault,)) if vault is not None else ("", ())
    rows = conn.execute(
        f"{_SELECT} {where} ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?",
        (*args, limit),
    )
    return [Conversation(*row) for row in rows]


def get_conversation(conn: sqlite3.Connection, conversation_id: str) -> Conversation:
    """The conversation with this id (or a unique prefix of it); NotFoundError otherwise."""
    rows = conn.execute(
        f"{_SELECT} WHERE c.id = ? OR c.id LIKE ? LIMIT 2",
        (conversation_id, conversation_id.replace("%", "") + "%"),
    ).fetchall()
    exact = [r for r in rows if r[0] == conversation_id]
    if exact or len(rows) == 1:
        return Conversation(*(exact or rows)[0])
    raise NotFoundError(
        f"No conversation '{conversation_id}'"
        + (" (several match; give more of the id)." if rows else ".")
        + " `vaultpilot chat --list` shows them."
    )


def delete_conversation(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Remove a conversation with its messages, events and usage (one transaction)."""
    with conn:
        conn.execute("BEGIN")
        for table in ("conversation_usage", "conversation_events", "conversation_messages"):
            conn.execute(f"DELETE FROM {table} WHERE conversation_id = ?", (conversation_id,))  # noqa: S608
        conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))


def load_history(conn: sqlite3.Connection, conversation_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT message FROM conversation_messages WHERE conversation_id = ? ORDER BY seq",
        (conversation_id,),
    )
    return [json.loads(r[0]) for r in rows]


def run_transcripts(
    conn: sqlite3.Connection, conversation_id: str
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """Each run of a conversation, in the order they began: (run id, the person's first
    message in it, its stored events as ``{"event": ..., "time": created_at}``)."""
    goals: dict[str, str] = {}
    for run_id, text in conn.execute(
        "SELECT run_id, message FROM conversation_messages WHERE conversation_id = ? ORDER BY seq",
        (conversation_id,),
    ):
        message = json.loads(text)
        if run_id in goals or not isinstance(message, dict) or message.get("role") != "user":
            continue
        if isinstance(message.get("content"), str):
            goals[run_id] = message["content"]
    events: dict[str, list[dict[str, Any]]] = {}
    for run_id, text, created in conn.execute(
        "SELECT run_id, event, created_at FROM conversation_events"
        " WHERE conversation_id = ? ORDER BY rowid",
        (conversation_id,),
    ):
        events.setdefault(run_id, []).append({"event": json.loads(text), "time": created})
    return [(run_id, goals.get(run_id, ""), evs) for run_id, evs in events.items()]


def run_ids(conn: sqlite3.Connection, conversation_id: str) -> list[str]:
    """The ids of a conversation's runs, in the order they began (each run's change set in
    the journal has the same id)."""
    rows = conn.execute(
        "SELECT run_id FROM conversation_messages WHERE conversation_id = ? AND run_id IS NOT"
        " NULL GROUP BY run_id ORDER BY MIN(seq)",
        (conversation_id,),
    )
    return [str(r[0]) for r in rows]


def next_message_seq(conn: sqlite3.Connection, conversation_id: str) -> int:
    """The position the conversation's next message takes."""
    row = conn.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM conversation_messages WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    return int(row[0]) + 1


def save_rows(
    conn: sqlite3.Connection,
    conversation_id: str,
    *,
    messages: Sequence[tuple[Any, ...]],
    events: Sequence[tuple[Any, ...]],
    usage: Sequence[tuple[Any, ...]],
    model: str,
) -> None:
    """Store a run's messages, events and usage rows and touch the conversation, at once."""
    with conn:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO conversation_messages VALUES (?, ?, ?, ?, ?)", messages)
        conn.executemany("INSERT INTO conversation_events VALUES (?, ?, ?, ?, ?, ?)", events)
        conn.executemany("INSERT INTO conversation_usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", usage)
        conn.execute(
            "UPDATE conversations SET updated_at = ?, model = COALESCE(NULLIF(?, ''), model)"
            " WHERE id = ?",
            (time.time(), model, conversation_id),
        )
