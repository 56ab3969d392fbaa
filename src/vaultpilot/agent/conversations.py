"""Conversations in memory.db: their messages, the events of each run, and the tokens used.

Tables (created by ``memory.db``'s migration ``create_conversations``): ``conversations``
(id, title, vault, model, times), ``conversation_messages`` (the history in OpenAI chat shape, in
order), ``conversation_events`` (every event of every run, streamed text and thoughts merged into
one event per step), ``conversation_usage`` (one row per model call).

* ``new_conversation``, ``list_conversations``, ``get_conversation``, ``load_history`` and
  ``delete_conversation`` (a run that failed before anything was said is not worth keeping) read
  and write through a connection they are given (``memory.db.connect``), from one thread.
* ``run_conversation(conn, conversation_id, agent, message, ...)`` loads the history, runs the
  loop, records as it goes (one transaction per model step and at the end, so recording costs
  little per event) and yields the loop's events unchanged.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from vaultpilot.agent.controls import RunControls
from vaultpilot.agent.events import AgentEvent, event_to_dict
from vaultpilot.agent.loop import Agent, StepGate, run
from vaultpilot.agent.model import ChatMessage
from vaultpilot.agent.versions import NoteVersions
from vaultpilot.errors import NotFoundError

__all__ = [
    "Conversation",
    "delete_conversation",
    "get_conversation",
    "list_conversations",
    "load_history",
    "new_conversation",
    "run_conversation",
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
    messages: int


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
           (SELECT COUNT(*) FROM conversation_messages m WHERE m.conversation_id = c.id)
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


def load_history(conn: sqlite3.Connection, conversation_id: str) -> list[ChatMessage]:
    rows = conn.execute(
        "SELECT message FROM conversation_messages WHERE conversation_id = ? ORDER BY seq",
        (conversation_id,),
    )
    return [json.loads(r[0]) for r in rows]


class _Recorder:
    """Buffers a run's rows and writes them in one transaction per flush."""

    def __init__(self, conn: sqlite3.Connection, conversation_id: str, run_id: str) -> None:
        self.conn = conn
        self.conv = conversation_id
        self.run_id = run_id
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), -1) FROM conversation_messages WHERE conversation_id = ?",
            (conversation_id,),
        ).fetchone()
        self.message_seq = int(row[0]) + 1
        self.event_seq = 0
        self.messages: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.usage: list[tuple[Any, ...]] = []
        self.stream: dict[str, Any] | None = None  # text or thoughts being merged
        self.model = ""

    def add_event(self, data: dict[str, Any]) -> None:
        now = time.time()
        self.events.append(
            (self.conv, self.run_id, self.event_seq, data["kind"], json.dumps(data), now)
        )
        self.event_seq += 1

    def observe(self, event: AgentEvent) -> None:
        if event.kind in ("text_chunk", "thought"):
            stream = self.stream
            if stream is not None and stream["kind"] == event.kind and stream["step"] == event.step:
                stream["text"] += event.text
            else:
                self._close_stream()
                self.stream = event_to_dict(event)
            return
        self._close_stream()
        now = time.time()
        match event.kind:
            case "message":
                row = (self.conv, self.message_seq, self.run_id, json.dumps(event.message), now)
                self.messages.append(row)
                self.message_seq += 1
                return  # the history is stored once, in conversation_messages
            case "run_started":
                self.model = event.model
            case "usage":
                self.usage.append(
                    (
                        self.conv,
                        self.run_id,
                        event.step,
                        self.model,
                        event.prompt_tokens,
                        event.completion_tokens,
                        event.total_tokens,
                        int(event.estimated),
                        now,
                    )
                )
            case _:
                pass
        self.add_event(event_to_dict(event))
        if event.kind in ("usage", "approval_required", "run_finished"):
            self.flush()

    def _close_stream(self) -> None:
        if self.stream is not None:
            self.add_event(self.stream)
            self.stream = None

    def flush(self) -> None:
        self._close_stream()
        if not (self.messages or self.events or self.usage):
            return
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.executemany(
                "INSERT INTO conversation_messages VALUES (?, ?, ?, ?, ?)", self.messages
            )
            self.conn.executemany(
                "INSERT INTO conversation_events VALUES (?, ?, ?, ?, ?, ?)", self.events
            )
            self.conn.executemany(
                "INSERT INTO conversation_usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self.usage
            )
            self.conn.execute(
                "UPDATE conversations SET updated_at = ?, model = COALESCE(NULLIF(?, ''), model)"
                " WHERE id = ?",
                (time.time(), self.model, self.conv),
            )
        self.messages, self.events, self.usage = [], [], []


async def run_conversation(
    conn: sqlite3.Connection,
    conversation_id: str,
    agent: Agent,
    message: str,
    *,
    controls: RunControls | None = None,
    versions: NoteVersions | None = None,
    run_id: str | None = None,
    gate: StepGate | None = None,
) -> AsyncIterator[AgentEvent]:
    """Run ``message`` in the stored conversation, recording it; yields the run's events.
    ``run_id`` names the run (default: a new random id); ``gate`` pauses it between steps."""
    get_conversation(conn, conversation_id)  # NotFoundError early
    history = load_history(conn, conversation_id)
    run_id = run_id or uuid.uuid4().hex
    recorder = _Recorder(conn, conversation_id, run_id)
    try:
        async for event in run(
            agent,
            message,
            history=history,
            controls=controls,
            versions=versions,
            run_id=run_id,
            gate=gate,
        ):
            recorder.observe(event)
            yield event
    finally:
        recorder.flush()
