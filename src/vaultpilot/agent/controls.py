"""What an interface can do to a run while it goes: approve, deny, interrupt, override.

The interface creates a ``RunControls``, passes it to ``loop.run`` and calls its methods from the
event loop's thread (a CLI, a WebSocket handler) or from any other thread (they hop onto the
loop). Each returns at once.

* ``approve(call_id, files=None)`` / ``deny(call_id, reason)``: answer an
  ``approval_required`` event. ``files`` approves part of a multi-file change: the files the
  person ticked (paths from the event's diffs); the tool then changes only those. An answer given
  before the event arrives is kept for it.
* ``override(call_id, result)``: use ``result`` (a JSON object) as the tool's result instead of
  running it. It takes effect for a call waiting for approval, and for any call the loop has
  announced with ``tool_call`` but not started: the loop starts a tool only after the consumer
  has taken its ``tool_call`` event and asked for the next one, so an override given while
  handling ``tool_call`` always applies. Returns False when the call has already run.
* ``interrupt()``: cancel the run now: the model stream is closed, a tool waiting for approval is
  abandoned, and a tool already running in its worker thread is no longer waited for (vault
  writes are atomic; its result is discarded and the history says the outcome is unknown). The
  run ends with ``run_finished`` (reason "interrupted").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RunControls", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    approved: bool
    reason: str | None = None
    override: dict[str, Any] | None = None
    files: tuple[str, ...] | None = None  # part of a multi-file change; None: all of it
    nobody: bool = False  # refused because nobody could be asked (no terminal), not by a person


class RunControls:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._interrupted = False
        self._waiting: dict[str, asyncio.Future[Verdict]] = {}
        self._early: dict[str, Verdict] = {}
        self._overrides: dict[str, dict[str, Any]] = {}
        self._done: set[str] = set()

    # ----- the interface's side
    def interrupt(self) -> None:
        self._interrupted = True
        self._on_loop(self._cancel)

    def approve(self, call_id: str, files: list[str] | None = None) -> None:
        chosen = tuple(files) if files is not None else None
        self._on_loop(lambda: self._answer(call_id, Verdict(True, files=chosen)))

    def deny(self, call_id: str, reason: str | None = None, *, nobody: bool = False) -> None:
        """Refuse the call; ``nobody``: no person could be asked (e.g. no terminal)."""
        self._on_loop(lambda: self._answer(call_id, Verdict(False, reason, nobody=nobody)))

    def override(self, call_id: str, result: dict[str, Any]) -> bool:
        if call_id in self._done:
            return False
        value = dict(result)
        self._on_loop(lambda: self._answer(call_id, Verdict(True, None, value), override=True))
        return True

    # ----- the loop's side
    def bind(self, task: asyncio.Task[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._task = task
        if self._interrupted:
            task.cancel()

    def take_override(self, call_id: str) -> dict[str, Any] | None:
        return self._overrides.pop(call_id, None)

    def started(self, call_id: str) -> None:
        self._done.add(call_id)

    async def verdict(self, call_id: str) -> Verdict:
        if call_id in self._early:
            return self._early.pop(call_id)
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        try:
            return await future
        finally:
            self._waiting.pop(call_id, None)

    # ----- internals
    def _on_loop(self, fn: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None or threading.get_ident() == self._thread:
            fn()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(fn)

    def _cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _answer(self, call_id: str, verdict: Verdict, *, override: bool = False) -> None:
        future = self._waiting.get(call_id)
        if future is not None and not future.done():
            future.set_result(verdict)
        elif override and verdict.override is not None:
            self._overrides[call_id] = verdict.override
        else:
            self._early[call_id] = verdict
