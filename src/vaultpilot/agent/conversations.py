"""Conversations: a run recorded in memory.db as it goes (the store is ``memory.conversations``).

* ``new_conversation``, ``list_conversations``, ``get_conversation``, ``load_history`` and
  ``delete_conversation`` (a run that failed before anything was said is not worth keeping) are
  the store's, re-exported here; the events of a run are stored with streamed text and thoughts
  merged into one event per step.
* ``run_conversation(conn, conversation_id, agent, message, ...)`` loads the history, runs the
  loop, records as it goes (one transaction per model step and at the end, so recording costs
  little per event) and yields the loop's events unchanged.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator
from typing import Any

from vaultpilot.agent.controls import RunControls
from vaultpilot.agent.events import AgentEvent, event_to_dict
from vaultpilot.agent.loop import Agent, StepGate, run
from vaultpilot.agent.versions import NoteVersions
from vaultpilot.memory.conversations import (
    Conversation,
    delete_conversation,
    get_conversation,
    list_conversations,
    load_history,
    new_conversation,
    next_message_seq,
    save_rows,
)
from vaultpilot.memory.journal import new_run_id

__all__ = [
    "Conversation",
    "delete_conversation",
    "get_conversation",
    "list_conversations",
    "load_history",
    "new_conversation",
    "run_conversation",
]


class _Recorder:
    """Buffers a run's rows and writes them in one transaction per flush."""

    def __init__(self, conn: sqlite3.Connection, conversation_id: str, run_id: str) -> None:
        self.conn = conn
        self.conv = conversation_id
        self.run_id = run_id
        self.message_seq = next_message_seq(conn, conversation_id)
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
        save_rows(
            self.conn,
            self.conv,
            messages=self.messages,
            events=self.events,
            usage=self.usage,
            model=self.model,
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
    run_id = run_id or new_run_id()
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
