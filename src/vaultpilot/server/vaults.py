"""The vaults one server serves, each with its tool context, reached from async code safely.

Contract:

* ``Vaults.get(vault_id)`` returns the ``VaultHandle`` of a configured vault. An unknown ID is a
  ``NotFoundError`` listing the known IDs; a missing ID is accepted only when the server has one
  vault (it is then that one), else an ``InvalidArgumentError`` listing them.
* ``VaultHandle.run(fn)`` runs ``fn(ctx)`` in a worker thread while holding the vault's lock:
  the ``ToolContext`` owns one SQLite connection, which one thread at a time may use. The context
  is opened on first use (``open``, also called at start-up to bring the index up to date) and
  closed by ``close``.
* ``VaultHandle.open_run_context()`` opens a second, private context for an agent run (its own
  connection; SQLite's WAL mode lets it read while the server's context writes).
* Writes take the vault's write lock, shared with every other vaultpilot process; a write waits
  at most ``lock_wait`` seconds (``write_lock_wait`` in ``[server]``) for another process to
  finish, then fails with ``VaultBusyError`` (answered ``vault_busy``, retryable).
* Every context of a vault shares one ``Semantic`` (the embedder, loaded once, and the vector
  cache), so ``semantic_search`` ranks by meaning as soon as chunks are embedded.
* ``start_embedding()`` starts the vault's ``BackgroundEmbedder`` (its own connection); ``call``
  and ``changed()`` wake it, so what a tool call or an agent run synced is embedded soon after,
  and every ``poll`` seconds it syncs the index itself, so notes edited in Obsidian follow too.
  ``embedding()`` is its progress plus the coverage in the index, for ``GET /vaults`` and
  GetVaultContext, counted on a connection of its own, never under the vault's lock.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.index.background import BackgroundEmbedder, EmbedProgress
from vaultpilot.index.db import connect
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.index.semantic import EmbeddingStatus, embedding_status, select_embedder
from vaultpilot.index.vectors import VectorCache
from vaultpilot.tools import ToolContext, open_context
from vaultpilot.tools.semantic import Semantic
from vaultpilot.vault.lock import DEFAULT_WAIT

__all__ = ["VaultHandle", "Vaults"]

T = TypeVar("T")

# While the background embedder commits a batch every fraction of a second, searches reuse a
# vector snapshot for up to this long instead of refreshing it for every query
# (bench/bench_background.py; figures in docs/benchmarks.md).
_RELOAD_INTERVAL = 2.0


@dataclass(slots=True)
class VaultHandle:
    vault_id: str
    root: Path
    db_path: Path
    semantic: Semantic = field(default_factory=Semantic)
    background: BackgroundEmbedder | None = None
    lock_wait: float = DEFAULT_WAIT  # seconds a write waits for another process's write lock
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ctx: ToolContext | None = None
    # A read-only connection of its own for coverage counts (~20 ms at 50k chunks), so status
    # requests never hold the vault's lock and delay tool calls.
    _status_lock: threading.Lock = field(default_factory=threading.Lock)
    _status_conn: sqlite3.Connection | None = None

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder's name."""
        return self.root.name

    def note_uri(self, path: str) -> str:
        """``obsidian://open?vault=<name>&file=<path>`` for a note of this vault."""
        return f"obsidian://open?vault={quote(self.name, safe='')}&file={quote(path, safe='')}"

    def _context(self) -> ToolContext:
        if self._ctx is None:
            self._ctx = open_context(
                self.root,
                self.db_path,
                semantic=self.semantic,
                lock_wait=self.lock_wait,
                source="server",
            )
        return self._ctx

    def open(self) -> None:
        """Open the context and sync the index (blocking; call from a worker thread)."""
        self.sync()

    def call(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` under the vault's lock in this thread."""
        try:
            with self._lock:
                return fn(self._context())
        finally:
            self.changed()

    async def run(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` under the vault's lock in a worker thread."""
        return await asyncio.to_thread(self.call, fn)

    def open_run_context(self) -> ToolContext:
        """A private context for one agent run; the caller closes ``ctx.conn``."""
        return open_context(
            self.root,
            self.db_path,
            semantic=self.semantic,
            lock_wait=self.lock_wait,
            source="agent",
        )

    def start_embedding(self, *, poll: float = 30.0) -> None:
        """Keep the vectors up to date from a background thread (see the module doc); every
        ``poll`` seconds it also syncs the index, so edits made outside reach the vectors."""
        if self.background is None:
            self.background = BackgroundEmbedder(
                self.db_path,
                self.semantic.require,
                role="server",
                poll=poll,
                refresh=self.sync,
            )
            self.background.start()

    def sync(self) -> None:
        """Bring the index up to date with the vault (blocking), without waking the embedder."""
        with self._lock:
            self._context().fresh(force=True)

    def changed(self) -> None:
        """The index may have changed: let the background embedder look (cheap)."""
        if self.background is not None:
            self.background.wake()

    def embedding(self) -> tuple[EmbedProgress | None, EmbeddingStatus]:
        """The background embedder's progress (None when off) and the index's coverage."""
        with self._status_lock:
            if self._status_conn is None:
                self._status_conn = connect(self.db_path)
            status = embedding_status(self._status_conn)
        return (self.background.progress() if self.background else None), status

    def close(self) -> None:
        if self.background is not None:
            self.background.stop()
        with self._lock:
            if self._ctx is not None:
                self._ctx.conn.close()
                if self._ctx.journal is not None:
                    self._ctx.journal.close()
                self._ctx = None
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
    ) -> None:
        self._by_id = {
            vid: VaultHandle(
                vid,
                root,
                db_path(vid),
                Semantic(load=embedder, cache=VectorCache(min_interval=_RELOAD_INTERVAL)),
                lock_wait=lock_wait,
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
