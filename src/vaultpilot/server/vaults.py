"""The vaults one server serves, each with its tool context, reached from async code safely.

Contract:

* ``Vaults.get(vault_id)`` returns the ``VaultHandle`` of a configured vault. An unknown ID is a
  ``NotFoundError`` listing the known IDs; a missing ID is accepted only when the server has one
  vault (it is then that one), else an ``InvalidArgumentError`` listing them.
* Each ``VaultHandle`` is the vault's ``tools.session.VaultRuntime`` (the same per-vault session
  object MCP and chat use) under its VaultID. ``open()`` (at start-up, in a worker thread) syncs
  the index and starts the file watcher; ``close()`` stops it.
* ``VaultHandle.run(fn)`` runs ``fn(ctx)`` in a worker thread on a context lent for the call:
  reads run in parallel, each on its thread's read-only connection, and do not walk the vault
  while the watcher is live; a write takes the vault's write turn (one at a time in this
  process) and then its write lock. ``run_tool(name, arguments)`` does the same for one vault
  tool, deciding from the tool's facts whether it writes before it starts.
* ``VaultHandle.open_run_context()`` opens a private context for an agent run (its own
  connection; its syncs and writes go through the same runtime).
* Writes take the vault's write lock, shared with every other vaultpilot process; a write waits
  at most ``lock_wait`` seconds (``write_lock_wait`` in ``[server]``) for another process to
  finish, then fails with ``VaultBusyError`` (answered ``vault_busy``, retryable).
* Every context of a vault shares one ``Semantic`` (the embedder, loaded once, and the vector
  cache), so ``semantic_search`` ranks by meaning as soon as chunks are embedded.
* ``start_embedding()`` starts the vault's ``BackgroundEmbedder`` (its own connection); every
  sync (the watcher's, a write's) wakes it, so what changed is embedded soon after. Without a
  live watcher it also syncs the index every ``poll`` seconds, so notes edited in Obsidian
  follow. ``embedding()`` is its progress plus the coverage in the index, and ``live()`` the
  watcher's state, for ``GET /vaults`` and GetVaultContext, counted on a connection of their
  own, never waiting for tool calls.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.index.background import BackgroundEmbedder, EmbedProgress
from vaultpilot.index.db import connect
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.index.semantic import EmbeddingStatus, embedding_status, select_embedder
from vaultpilot.server.readers import ReadWorkers
from vaultpilot.tools import ToolContext, ToolOutcome
from vaultpilot.tools.semantic import Semantic, live
from vaultpilot.tools.session import LiveInfo, VaultRuntime, writes
from vaultpilot.vault.lock import DEFAULT_WAIT

__all__ = ["VaultHandle", "Vaults"]

T = TypeVar("T")

_WORKERS = 8


class VaultHandle:
    """One served vault: its ``VaultRuntime`` (see ``tools.session``) under its VaultID."""

    def __init__(
        self,
        vault_id: str,
        root: Path,
        db_path: Path,
        semantic: Semantic | None = None,
        *,
        lock_wait: float = DEFAULT_WAIT,
        watch: bool = True,
        rules_file: Path | None = None,
        read_workers: int = 0,
    ) -> None:
        self.vault_id = vault_id
        self.root = root
        self.db_path = db_path
        self.runtime = VaultRuntime(
            root,
            db_path,
            source="server",
            holder="vaultpilot serve",
            semantic=semantic,
            lock_wait=lock_wait,
            watch=watch,
            rules_file=rules_file,
        )
        # Its own worker threads, so writes waiting for the write turn never leave reads without
        # one (the runtime bounds how many calls run at once).
        self._pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix=f"vault-{vault_id}")
        self._readers = (
            ReadWorkers(root, db_path, count=read_workers, name=vault_id)
            if read_workers > 0
            else None
        )
        # A read-only connection of its own for coverage counts (~20 ms at 50k chunks), so
        # status requests never wait for tool calls.
        self._status_lock = threading.Lock()
        self._status_conn: sqlite3.Connection | None = None

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder's name."""
        return self.root.name

    @property
    def semantic(self) -> Semantic:
        return self.runtime.semantic

    @property
    def background(self) -> BackgroundEmbedder | None:
        return self.runtime.background

    def note_uri(self, path: str) -> str:
        """``obsidian://open?vault=<name>&file=<path>`` for a note of this vault."""
        return f"obsidian://open?vault={quote(self.name, safe='')}&file={quote(path, safe='')}"

    def open(self) -> None:
        """Sync the index and start the watcher (blocking; call from a worker thread)."""
        self.runtime.open()

    def call(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` in this thread (reads in parallel, writes one at a time)."""
        return self.runtime.call(fn)

    async def run(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` in a worker thread (see ``call``)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.runtime.call, fn)

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any] | None, *, source: str | None = None
    ) -> ToolOutcome:
        """Run one vault tool: a read in a read worker process while the index is live, else
        in a worker thread; the tool's facts say whether it takes the write turn. ``source``
        names the entry point its changes are journaled as (``mcp``), when not ``server``."""
        if self._readers is not None and self.runtime.live() and not writes(name, arguments):
            outcome = await self._readers.call(name, arguments, self.runtime.current_rules())
            if outcome is not None:
                return outcome
        loop = asyncio.get_running_loop()
        call = functools.partial(self.runtime.call_tool, name, arguments, source=source)
        return await loop.run_in_executor(self._pool, call)

    async def start_readers(self) -> None:
        """Start the read worker processes, if any (they take calls once each is ready)."""
        if self._readers is not None:
            await self._readers.start()

    @property
    def readers(self) -> ReadWorkers | None:
        """The read worker processes (None when reads run in this process)."""
        return self._readers

    async def stop_readers(self) -> None:
        if self._readers is not None:
            await self._readers.close()

    def open_run_context(self) -> ToolContext:
        """A private context for one agent run; the caller closes ``ctx.conn``."""
        return self.runtime.open_run_context(source="agent")

    def start_embedding(self, *, poll: float = 30.0) -> None:
        """Keep the vectors up to date from a background thread (see the module doc)."""
        self.runtime.start_embedding(poll=poll)

    def sync(self) -> None:
        """Bring the index up to date with the vault (blocking)."""
        self.runtime.sync()

    def changed(self) -> None:
        """The index may have changed: let the background embedder look (cheap)."""
        self.runtime.changed()

    def live(self) -> LiveInfo:
        """The file watcher's state (``off`` when the server does not watch)."""
        return self.runtime.live_info()

    def embedding(self) -> tuple[EmbedProgress | None, EmbeddingStatus]:
        """The background embedder's progress (None when off) and the index's coverage."""
        with self._status_lock:
            if self._status_conn is None:
                self._status_conn = connect(self.db_path)
            status = embedding_status(self._status_conn)
        background = self.runtime.background
        return (background.progress() if background else None), status

    def close(self) -> None:
        self.runtime.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._status_lock:
            if self._status_conn is not None:
                self._status_conn.close()
                self._status_conn = None


class Vaults:
    """The configured vaults by ID, in configuration order."""

    def __init__(
        self,
        vaults: Mapping[str, Path],
        db_path: Callable[[str], Path],
        *,
        embedder: Callable[[], Embedder] = select_embedder,
        lock_wait: float = DEFAULT_WAIT,
        watch: bool = True,
        config_file: Path | None = None,
        read_workers: int = 0,
    ) -> None:
        """``read_workers`` processes per vault run read tool calls (see ``server.readers``).
        Each vault's rules are the ``[rules]`` of ``config_file`` (None: the default config
        file), read here and again whenever the file changes, so a rule added while the server
        runs holds from the next call on (see ``tools.session``)."""
        self._by_id = {
            vid: VaultHandle(
                vid,
                root,
                db_path(vid),
                live(embedder),
                lock_wait=lock_wait,
                watch=watch,
                rules_file=config_file,
                read_workers=read_workers,
            )
            for vid, root in vaults.items()
        }

    def handles(self) -> list[VaultHandle]:
        return list(self._by_id.values())

    def ids(self) -> list[str]:
        return list(self._by_id)

    def get(self, vault_id: str | None) -> VaultHandle:
        known = ", ".join(self._by_id)
        if vault_id is None or vault_id == "":
            if len(self._by_id) == 1:
                return next(iter(self._by_id.values()))
            raise InvalidArgumentError(
                f"Name the vault with VaultID: this server serves several ({known})."
            )
        handle = self._by_id.get(vault_id)
        if handle is None:
            raise NotFoundError(f"Unknown VaultID '{vault_id}'. Known vaults: {known}.")
        return handle
