"""One vault held open by a long-running process (server, MCP, chat): its index kept live.

``VaultRuntime(root, db_path, source=...)`` is the one per-vault session object the transports
share. It holds:

* the **writer**: one writable ``ToolContext`` (its connection, the vault's settings, the
  journal); every sync of the index from this process runs on its connection, one at a time;
* **readers**: a read-only connection per worker thread (``index.pool.ReaderPool``);
* the shared ``Semantic`` (embedder and vector cache), the ``BackgroundEmbedder`` and the
  ``LiveIndex`` (a file watcher keeping the index in line with the vault).

``open()`` (with ``watch``) starts the watcher and waits for its first scan, then syncs the index
(clearing temp files a killed write left; a sync failure is raised). ``close()`` stops it all.

``call(fn)`` runs ``fn(ctx)`` in the calling thread on a context lent for that call: its
``conn`` is the thread's read-only connection, so calls run in parallel, and its ``upkeep`` is
the call's own:

* a read's ``fresh()`` does nothing while the watcher is ``live`` (tool calls do not walk the
  vault); otherwise (watcher off, starting, rescanning or failed) it syncs on the writer;
* a write (its first ``fresh(force=True)`` or ``writing()``) takes the process's **write turn**
  and keeps it until the call ends, so writes run one at a time; ``writing()`` then takes the
  vault's cross-process write lock as before;
* a write's ``fresh(force=True, paths=[...])`` (the paths it changed; ``()`` before planning)
  syncs just those paths while live (``index.sync.sync_paths``: the watcher keeps the rest
  fresh, so a write does not walk the vault), and the whole vault otherwise;
  ``fresh(force=True)`` without ``paths`` always syncs the whole vault.

At most ``slots`` calls (default: one per CPU) run at once: more threads than CPUs only queue on
the GIL and delay the server's event loop. A write waiting for the turn gives its slot up, so
reads never wait behind a queue of writes.

``call_tool(name, arguments)`` runs one vault tool by name and reads the tool's facts
(``Tool.operation(arguments).writes``): a write operation takes the turn before it starts, a
read never takes it. ``open_run_context()`` opens a context of its own for an agent run (the
caller closes ``ctx.conn``): its syncs also go through the writer and skip while live, and its
``writing()`` holds the turn for the length of the block.

The person's rules for the vault (``[rules]`` of config.toml) are read from the config file
(``rules_file``, default the one ``configfile.config_path()`` names; ``tools.context.read_rules``)
and read again when the file changes (``current_rules()``, a stat per call; a file that no longer
reads keeps the last good rules, with a warning in the log): the server, MCP and chat follow an
edit at once. Rules given by the caller (``rules=``) are fixed. Every context the runtime lends
or opens carries the current ones.

``live_info()`` is the watcher's state for status lines and the server's API (``off`` when not
watching). ``live_session(root, db_path)`` is the context manager a one-process client (chat)
uses: an opened runtime, closed on exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

from vaultpilot.configfile import config_path, file_stamp
from vaultpilot.errors import VaultpilotError
from vaultpilot.index.background import BackgroundEmbedder
from vaultpilot.index.pool import ReaderPool
from vaultpilot.index.sync import SyncReport, sync_paths
from vaultpilot.index.watch import LiveIndex, LiveState, LiveStatus
from vaultpilot.tools.context import ToolContext, open_context, read_rules, sync_index
from vaultpilot.tools.registry import ToolOutcome, call_operation, run_tool
from vaultpilot.tools.rules import VaultRules
from vaultpilot.tools.semantic import Semantic
from vaultpilot.vault.lock import DEFAULT_WAIT, write_lock

__all__ = ["IndexState", "LiveInfo", "VaultRuntime", "live_session", "writes"]

log = logging.getLogger(__name__)


T = TypeVar("T")


# The watcher's state, or "off" when the process does not watch.
IndexState = Literal["off", LiveState]


class LiveInfo(TypedDict):
    """The live index as the server's API and GetVaultContext show it."""

    state: IndexState
    reason: str | None
    lastSync: float | None
    lastFullSync: float | None


class VaultRuntime:
    """A vault's index, contexts, background embedding and file watcher (see the module doc)."""

    def __init__(
        self,
        root: Path,
        db_path: Path,
        *,
        source: str,
        semantic: Semantic | None = None,
        lock_wait: float = DEFAULT_WAIT,
        watch: bool = True,
        rescan_every: float = 600.0,
        slots: int | None = None,
        rules: VaultRules | None = None,
        rules_file: Path | None = None,
        holder: str | None = None,
    ) -> None:
        """``source`` names the transport in the journal; ``holder`` the program, as a second
        process shows the holder of the embedding lock (default: ``source``)."""
        self.root = root.resolve()
        self.db_path = db_path
        self.source = source
        self.holder = holder or source
        self.semantic = semantic if semantic is not None else Semantic()
        self.lock_wait = lock_wait
        self.watch = watch
        # Given, or read from the config file and again when it changes (see the module doc).
        self._rules_file = None if rules is not None else (rules_file or config_path())
        self._rules_stamp = file_stamp(self._rules_file)
        self.rules = rules if rules is not None else read_rules(self.root, self._rules_file)
        self.background: BackgroundEmbedder | None = None
        self._rescan_every = rescan_every
        self._writer: ToolContext | None = None
        self._index_lock = threading.Lock()  # the writer's connection, one sync at a time
        self._open_lock = threading.Lock()
        self._turn = threading.RLock()  # writes one at a time (re-entrant: nested writing())
        # Calls running at once (default: one per CPU). More threads than CPUs only queue on the
        # GIL and delay the server's event loop; a write waiting for the turn gives its slot up.
        self._slots = threading.BoundedSemaphore(slots or os.cpu_count() or 2)
        self._readers = ReaderPool(db_path)
        self._live: LiveIndex | None = None
        self._closed = False

    # --- lifecycle

    def open(self, *, workers: int | None = 1, wait: float = 600.0) -> None:
        """With ``watch``, start the watcher and wait for its first scan; then sync the index
        (blocking; call from a worker thread; a failed sync is raised)."""
        if self.watch and self._live is None and not self._closed:
            # Watching starts before the first scan, so nothing changed during it is missed.
            self._live = LiveIndex(
                self.root, self.db_path, on_change=self._changed, rescan_every=self._rescan_every
            )
            self._live.start(wait=wait)
        self.sync(workers=workers)  # after the watcher's scan: no work left but old temp files

    def start_embedding(self, *, poll: float = 30.0) -> None:
        """Keep the vectors up to date from a background thread, woken by every change; every
        ``poll`` seconds it also syncs the index unless the watcher keeps it fresh."""
        if self.background is None and not self._closed:
            self.background = BackgroundEmbedder(
                self.db_path,
                self.semantic.require,
                role=self.holder,
                poll=poll,
                refresh=self._refresh,
            )
            self.background.start()

    def close(self) -> None:
        self._closed = True
        if self._live is not None:
            self._live.stop()
        if self.background is not None:
            self.background.stop()
        with self._turn, self._index_lock:
            if self._writer is not None:
                self._writer.conn.close()
                if self._writer.journal is not None:
                    self._writer.journal.close()
                self._writer = None
        self._readers.close()

    # --- the index

    def live(self) -> bool:
        """Whether the watcher keeps the index fresh right now (reads then skip their sync)."""
        return self._live is not None and self._live.status().live

    def live_status(self) -> LiveStatus | None:
        return self._live.status() if self._live is not None else None

    def live_info(self) -> LiveInfo:
        status = self.live_status()
        if status is None:
            return LiveInfo(state="off", reason=None, lastSync=None, lastFullSync=None)
        return LiveInfo(
            state=status.state,
            reason=status.reason,
            lastSync=status.last_sync,
            lastFullSync=status.last_full_sync,
        )

    def sync(self, *, workers: int | None = 1) -> None:
        """Bring the index up to date with the vault on the writer connection (blocking)."""
        with self._index_lock:
            ctx = self._writer_context()
            sync_index(ctx.conn, ctx.root, self.lock_path, workers=workers)
        self.changed()

    def sync_paths(self, paths: Collection[str]) -> None:
        """Sync just ``paths`` (vault paths a write changed) on the writer connection."""
        if not paths:
            return
        with self._index_lock:
            ctx = self._writer_context()
            sync_paths(ctx.conn, ctx.root, paths, workers=1)
        self.changed()

    def _sync_for_write(self, paths: Collection[str] | None) -> None:
        """A write's sync: only its ``paths`` while the watcher is live, else the vault."""
        if paths is not None and self.live():
            self.sync_paths(paths)
        else:
            self.sync()

    def changed(self) -> None:
        """The index may have changed: let the background embedder look (cheap)."""
        if self.background is not None:
            self.background.wake()

    @property
    def lock_path(self) -> Path:
        return self._writer_context().write_lock_path()

    def _writer_context(self) -> ToolContext:
        with self._open_lock:
            if self._writer is None:
                self._writer = open_context(
                    self.root,
                    self.db_path,
                    semantic=self.semantic,
                    lock_wait=self.lock_wait,
                    source=self.source,
                    rules=self.rules,
                )
            return self._writer

    def _changed(self, _report: SyncReport, _paths: list[str]) -> None:
        self.changed()  # from the watcher thread: just a wake

    def _refresh(self) -> None:
        if not self.live():
            self.sync()

    # --- calls

    def current_rules(self) -> VaultRules:
        """The rules, read again if they came from the config file and it changed."""
        stamp = file_stamp(self._rules_file)
        if self._rules_file is not None and stamp != self._rules_stamp:
            self._rules_stamp = stamp
            try:
                self.rules = read_rules(self.root, self._rules_file)
            except VaultpilotError as err:
                log.warning("kept the vault's rules: %s", err.message)
        return self.rules

    def call(self, fn: Callable[[ToolContext], T], *, write: bool = False) -> T:
        """Run ``fn(ctx)`` in this thread on a context lent for the call (see the module doc);
        ``write`` takes the write turn up front."""
        base = self._writer_context()
        upkeep = _CallUpkeep(self)
        if write:
            upkeep.claim()
        try:
            with self._slots:
                upkeep.slotted = True
                lent = replace(
                    base, conn=self._readers.connection(), upkeep=upkeep, rules=self.current_rules()
                )
                return fn(lent)
        finally:
            upkeep.slotted = False
            upkeep.end()

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, *, source: str | None = None
    ) -> ToolOutcome:
        """Run one vault tool; a write operation (by the tool's facts) takes the turn first.
        ``source`` names the entry point its changes are journaled as, when not this runtime's."""
        write = writes(name, arguments)
        return self.call(
            lambda ctx: run_tool(replace(ctx, source=source), name, arguments), write=write
        )

    def open_run_context(self, *, source: str = "agent") -> ToolContext:
        """A context of its own for an agent run; the caller closes ``ctx.conn``."""
        ctx = open_context(
            self.root,
            self.db_path,
            semantic=self.semantic,
            lock_wait=self.lock_wait,
            source=source,
            rules=self.current_rules(),
        )
        return replace(ctx, upkeep=_RunUpkeep(self))


def writes(name: str, arguments: Mapping[str, Any] | None) -> bool:
    """Whether a call of tool ``name`` may write, by its facts (an unknown tool or operation
    counts as a write: it fails in validation, on the write path)."""
    operation = call_operation(name, arguments)
    return operation is None or operation.writes


class _CallUpkeep:
    """The upkeep of one lent context: reads skip while live, a write holds the turn."""

    __slots__ = ("_held", "_rt", "slotted")

    def __init__(self, runtime: VaultRuntime) -> None:
        self._rt = runtime
        self._held = False
        self.slotted = False  # the call holds one of the runtime's slots

    def claim(self) -> None:
        if self._held:
            return
        if not self._rt._turn.acquire(blocking=False):
            if self.slotted:  # wait for the write in progress without holding a slot
                self._rt._slots.release()
                try:
                    self._rt._turn.acquire()
                finally:
                    self._rt._slots.acquire()
            else:
                self._rt._turn.acquire()
        self._held = True

    def end(self) -> None:
        if self._held:
            self._held = False
            self._rt._turn.release()

    def fresh(self, *, force: bool, paths: Collection[str] | None = None) -> None:
        if force:
            self.claim()
            self._rt._sync_for_write(paths)
        elif not self._rt.live():
            self._rt.sync()

    def writing(self) -> AbstractContextManager[None]:
        self.claim()
        return write_lock(self._rt.lock_path, timeout=self._rt.lock_wait)


class _RunUpkeep:
    """The upkeep of an agent run's context: the turn only while a write holds the lock."""

    __slots__ = ("_rt",)

    def __init__(self, runtime: VaultRuntime) -> None:
        self._rt = runtime

    def fresh(self, *, force: bool, paths: Collection[str] | None = None) -> None:
        if not force:
            if not self._rt.live():
                self._rt.sync()
            return
        with self._rt._turn:
            self._rt._sync_for_write(paths)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._rt._turn, write_lock(self._rt.lock_path, timeout=self._rt.lock_wait):
            yield


@contextlib.contextmanager
def live_session(
    root: Path,
    db_path: Path,
    *,
    source: str = "cli",
    holder: str | None = None,
    semantic: Semantic | None = None,
    embed: bool = False,
    watch: bool = True,
) -> Iterator[VaultRuntime]:
    """An opened ``VaultRuntime`` for one process's lifetime (e.g. ``vaultpilot chat``): the
    index synced, the watcher started and, with ``embed``, background embedding (its lock held
    as ``holder``, the program's name); closed on exit. Use ``runtime.open_run_context()`` (or
    ``call``) for the agent's context."""
    runtime = VaultRuntime(
        root, db_path, source=source, holder=holder, semantic=semantic, watch=watch
    )
    try:
        runtime.open()
        if embed:
            runtime.start_embedding()
        yield runtime
    finally:
        runtime.close()
