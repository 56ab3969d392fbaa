"""Read tool calls in worker processes, so the server's reads use every CPU.

One Python process runs one thread of Python at a time: the server's reads, its HTTP and its
event loop take turns on one CPU, and handing the GIL between worker threads and the loop costs
a third of a read. ``ReadWorkers`` runs read tool calls in ``count`` child processes instead,
each with its own read-only connection to the vault's index (WAL: a read sees every committed
write), while the server process keeps HTTP, WebSockets, agent runs, writes and the watcher.

Contract (parent side, on the event loop):

* ``start()`` launches the children (``python -m vaultpilot.tools.readworker``, in a session of
  their own so a Ctrl-C meant for the server does not reach them) and returns at once; each
  takes calls once it has opened the index.
* ``call(name, arguments, rules)`` sends one read tool call to the least busy ready child and
  returns its ``ToolOutcome``, held to ``rules`` (the vault's current rules: a child is sent
  them again, before the call, whenever they are not the ones it last had); it returns None
  when no child can take it (none ready yet, all stopped, or the child stopped during the
  call): the caller then runs the call itself. Only reads may
  be sent (by the tool's facts), and only while the watcher keeps the index live: a child
  never syncs the index nor writes.
* A child that stops is logged and left out; one that does not answer a call within
  ``deadline`` seconds (stopped, or stuck on a disk) is killed, logged and left out, and its
  calls run in the server. ``close()`` ends them all (their stdin closes, so they exit even
  when the server is killed).

Each child answers its calls in order, one at a time (``tools.readworker``). Its ``Semantic``
loads the default embedder when a semantic search first needs it, as the server's does.

The pipes are read by an asyncio protocol that cuts the frames as the bytes arrive (no stream
reader and no task per child), and the deadline is kept by one watchdog looking at each child's
oldest unanswered call (no timer per call): a call costs the server process ~0.1 ms less than
with ``asyncio.wait_for`` on a stream reader.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import pickle
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from vaultpilot.tools.readworker import HEADER, Setup, frame, frame_size
from vaultpilot.tools.registry import ToolOutcome
from vaultpilot.tools.rules import VaultRules

__all__ = ["ReadWorkers"]

log = logging.getLogger(__name__)

# Seconds a read may take in a worker before the worker is taken for stuck: far above any read
# (the slowest, a first semantic search loading the model and a 50k vector snapshot, ~3 s).
DEADLINE = 60.0


class _Child(asyncio.SubprocessProtocol):
    """One child process: its pipes, and its unanswered calls (future, time sent), in the order
    they were sent (it answers in that order)."""

    def __init__(self, workers: ReadWorkers) -> None:
        self.workers = workers
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.pending: collections.deque[tuple[asyncio.Future[ToolOutcome], float]] = (
            collections.deque()
        )
        self.ready = False
        self.stopped = False
        self.rules: VaultRules | None = None  # the rules it was last sent
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._buffer = bytearray()
        self._unlogged = False  # output ended, exit not yet logged

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not isinstance checks: uvloop's transports (uvicorn runs on uvloop when it is
        # installed) do not derive from asyncio's classes.
        self.transport = cast(asyncio.SubprocessTransport, transport)
        self.stdin = cast(asyncio.WriteTransport, self.transport.get_pipe_transport(0))

    def send(self, data: bytes) -> None:
        assert self.stdin is not None
        self.stdin.write(data)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        start = 0
        try:
            while len(buffer) - start >= HEADER:
                end = start + HEADER + frame_size(buffer[start : start + HEADER])
                if len(buffer) < end:
                    break
                answer = pickle.loads(buffer[start + HEADER : end])  # noqa: S301 (our own child)
                start = end
                self._answer(answer)
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError, IndexError):
            self._lost("sent a frame that could not be read")
        finally:
            del buffer[:start]

    def _answer(self, answer: Any) -> None:
        if not self.ready:  # the first frame says the child has opened the index
            self.ready = True
            return
        future, _ = self.pending.popleft()
        self.workers.answered += 1
        result, error = answer
        if not future.done():  # the caller may have gone (a closed connection)
            future.set_result(ToolOutcome(result, error))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.stopped:  # its output ended: it is ending; logged when it has
            self.stopped = self._unlogged = True
            self.fail_pending()

    def process_exited(self) -> None:
        if not self.stopped or self._unlogged:
            self.stopped, self._unlogged = True, False
            self.fail_pending()
            assert self.transport is not None
            self._log(f"exit code {self.transport.get_returncode()}")
        if not self.exited.done():
            self.exited.set_result(None)

    def _lost(self, why: str) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.fail_pending()
        assert self.transport is not None
        with contextlib.suppress(ProcessLookupError):  # it cannot be trusted any more
            self.transport.kill()
        self._log(why)

    def _log(self, why: str) -> None:
        log.warning(
            "a read worker of vault %s stopped (%s); its reads run in the server",
            self.workers.name,
            why,
        )

    def fail_pending(self) -> None:
        while self.pending:
            future, _ = self.pending.popleft()
            if not future.done():
                future.set_exception(_ChildStopped())


class ReadWorkers:
    """Child processes running read tool calls for one vault (see the module doc)."""

    def __init__(
        self,
        root: Path,
        db_path: Path,
        *,
        count: int,
        name: str,
        deadline: float = DEADLINE,
    ) -> None:
        self._setup = Setup(root, db_path)
        self.deadline = deadline
        self._count = count
        self.name = name
        self._children: list[_Child] = []
        self._watchdog: asyncio.Task[None] | None = None
        self.answered = 0  # calls the children answered
        self._turn = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(self._count):
            _, child = await loop.subprocess_exec(
                lambda: _Child(self),
                sys.executable,
                "-m",
                "vaultpilot.tools.readworker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,
                start_new_session=True,
            )
            child.send(frame(self._setup))
            self._children.append(child)
        self._watchdog = asyncio.create_task(self._watch())

    def ready(self) -> int:
        """How many children take calls now."""
        return sum(c.ready and not c.stopped for c in self._children)

    def pids(self) -> list[int]:
        """The children's process IDs (stopped ones included)."""
        return [c.transport.get_pid() for c in self._children if c.transport is not None]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, rules: VaultRules
    ) -> ToolOutcome | None:
        ready = [c for c in self._children if c.ready and not c.stopped]
        if not ready:
            return None
        self._turn += 1  # among the least busy, each in turn (all warm up, none sits idle)
        child = min(ready[self._turn % len(ready) :] + ready, key=lambda c: len(c.pending))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ToolOutcome] = loop.create_future()
        child.pending.append((future, loop.time()))
        try:
            if child.rules is not rules:
                child.send(frame(rules))
                child.rules = rules
            child.send(frame((name, dict(arguments or {}))))
        except (OSError, RuntimeError):
            child.stopped = True
            child.fail_pending()
        try:
            # A caller that goes away cancels only its own future; the child's answer to it is
            # still taken off in order.
            return await future
        except _ChildStopped:
            return None

    async def _watch(self) -> None:
        """Stop (kill) a child whose oldest unanswered call is older than ``deadline``."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(1.0, self.deadline / 4))
            now = loop.time()
            for child in self._children:
                if child.stopped or not child.pending or now - child.pending[0][1] < self.deadline:
                    continue
                # stuck (stopped, or a disk that does not answer): not waited for
                log.warning(
                    "a read worker of vault %s did not answer in %g s; it was stopped and its "
                    "reads run in the server",
                    self.name,
                    self.deadline,
                )
                child.stopped = True  # before it is killed: no second log line
                child.fail_pending()
                assert child.transport is not None
                with contextlib.suppress(ProcessLookupError):
                    child.transport.kill()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for child in self._children:
            child.stopped = True
            if child.stdin is not None:
                child.stdin.close()
        for child in self._children:
            assert child.transport is not None
            try:
                await asyncio.wait_for(asyncio.shield(child.exited), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    child.transport.kill()
                await child.exited
            child.fail_pending()
            child.transport.close()


class _ChildStopped(Exception):
    """The child ended before it answered (the caller runs the call itself)."""
