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
* ``call(name, arguments)`` sends one read tool call to the least busy ready child and returns
  its ``ToolOutcome``; it returns None when no child can take it (none ready yet, all stopped,
  or the child stopped during the call): the caller then runs the call itself. Only reads may
  be sent (by the tool's facts), and only while the watcher keeps the index live: a child
  never syncs the index nor writes.
* A child that stops is logged and left out; one that does not answer a call within
  ``deadline`` seconds (stopped, or stuck on a disk) is killed, logged and left out, and its
  calls run in the server. ``close()`` ends them all (their stdin closes, so they exit even
  when the server is killed).

Each child answers its calls in order, one at a time (``tools.readworker``). Its ``Semantic``
loads the default embedder when a semantic search first needs it, as the server's does.
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
from typing import Any

from vaultpilot.tools.readworker import HEADER, Setup, frame, frame_size
from vaultpilot.tools.registry import ToolOutcome
from vaultpilot.tools.rules import VaultRules

__all__ = ["ReadWorkers"]

log = logging.getLogger(__name__)

# Seconds a read may take in a worker before the worker is taken for stuck: far above any read
# (the slowest, a first semantic search loading the model and a 50k vector snapshot, ~3 s).
DEADLINE = 60.0


class _Child:
    """One child process and the futures of its calls, in the order they were sent."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: collections.deque[asyncio.Future[ToolOutcome]] = collections.deque()
        self.ready = False
        self.stopped = False


class ReadWorkers:
    """Child processes running read tool calls for one vault (see the module doc)."""

    def __init__(
        self,
        root: Path,
        db_path: Path,
        *,
        rules: VaultRules | None,
        count: int,
        name: str,
        deadline: float = DEADLINE,
    ) -> None:
        self._setup = Setup(root, db_path, rules)
        self.deadline = deadline
        self._count = count
        self._name = name
        self._children: list[_Child] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.answered = 0  # calls the children answered
        self._turn = 0

    async def start(self) -> None:
        for _ in range(self._count):
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "vaultpilot.tools.readworker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
            child = _Child(proc)
            assert proc.stdin is not None
            proc.stdin.write(frame(self._setup))
            self._children.append(child)
            self._tasks.append(asyncio.create_task(self._answers(child)))

    def ready(self) -> int:
        """How many children take calls now."""
        return sum(c.ready and not c.stopped for c in self._children)

    def pids(self) -> list[int]:
        """The children's process IDs (stopped ones included)."""
        return [c.proc.pid for c in self._children]

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolOutcome | None:
        ready = [c for c in self._children if c.ready and not c.stopped]
        if not ready:
            return None
        self._turn += 1  # among the least busy, each in turn (all warm up, none sits idle)
        child = min(ready[self._turn % len(ready) :] + ready, key=lambda c: len(c.pending))
        future: asyncio.Future[ToolOutcome] = asyncio.get_running_loop().create_future()
        child.pending.append(future)
        assert child.proc.stdin is not None
        try:
            child.proc.stdin.write(frame((name, dict(arguments or {}))))
        except (OSError, RuntimeError):
            self._stopped(child)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.deadline)
        except _ChildStopped:
            return None
        except TimeoutError:  # stuck (stopped, or a disk that does not answer): not waited for
            if not child.stopped:
                log.warning(
                    "a read worker of vault %s did not answer in %g s; it was stopped and its "
                    "reads run in the server",
                    self._name,
                    self.deadline,
                )
                self._stopped(child)  # before its end of output is read: no second log line
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()
            return None

    async def close(self) -> None:
        for child in self._children:
            child.stopped = True
            if child.proc.stdin is not None:
                child.proc.stdin.close()
        for child in self._children:
            try:
                await asyncio.wait_for(child.proc.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()
                await child.proc.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _answers(self, child: _Child) -> None:
        out = child.proc.stdout
        assert out is not None
        try:
            while True:
                head = await out.readexactly(HEADER)
                answer = pickle.loads(await out.readexactly(frame_size(head)))  # noqa: S301
                if not child.ready:  # the first frame says the child has opened the index
                    child.ready = True
                    continue
                future = child.pending.popleft()
                self.answered += 1
                if not future.done():  # the caller may have gone (a closed connection)
                    future.set_result(answer)
        except (asyncio.IncompleteReadError, OSError, pickle.UnpicklingError, IndexError):
            pass
        if not child.stopped:
            code = await child.proc.wait()
            log.warning(
                "a read worker of vault %s stopped (exit code %s); its reads run in the server",
                self._name,
                code,
            )
        self._stopped(child)

    def _stopped(self, child: _Child) -> None:
        child.stopped = True
        while child.pending:
            future = child.pending.popleft()
            if not future.done():
                future.set_exception(_ChildStopped())


class _ChildStopped(Exception):
    """The child ended before it answered (the caller runs the call itself)."""
