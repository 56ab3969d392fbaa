"""What every tool call runs against: the vault folder, its index connection and its settings.

``ToolContext`` is a small frozen value built once by a transport (CLI, agent, server, MCP) and
passed to every call. It owns no resources: whoever opened the connection closes it.

* ``fresh()`` brings the index up to date with the vault. Read tools call it first (unless
  ``sync_before_read`` is off because a file watcher keeps the index fresh); write tools call
  it before planning (``paths=()``) and after writing with every path they changed (both sides
  of a move, and the notes whose links they rewrote), so a search right after a write sees the
  change. Without an ``upkeep`` it syncs the whole vault and removes the ``.vaultpilot-*.tmp``
  files a killed write left, when the write lock is free (``sync_index``).
* ``semantic`` (optional) gives the vector side: an embedder loaded on first use and the vector
  cache. With it, ``semantic_search`` uses hybrid ranking and related notes count similar
  meaning; without it both use keywords only. ``ranker`` can replace the ranking entirely.
* ``now`` is the clock for "today", "last 7 days" and template dates; tests pin it.
* ``writing()`` holds the vault's write lock (``vault.lock``), a file beside the index
  (``lock_path``, set by ``open_context`` from the index's folder, i.e. the vault's data folder),
  shared with every other vaultpilot process; it waits at most ``lock_wait`` seconds, then
  VaultBusyError. Every change to the vault is made while holding it.
* ``journal`` (optional) records every change in memory.db's change journal
  (``memory.journal``); ``open_context`` opens the data root's memory.db when the index lives
  in it (``<root>/vaults/<vault>/index.db``). ``change_set`` makes every call join that change
  set (an agent run's id) instead of making one per call. Without a journal nothing is recorded.
* ``rules`` are the person's rules for the vault (``tools.rules``: denied, read-only and private
  notes, the run mode), read by ``open_context`` from config.toml unless given; the registry
  enforces them on every call. ``read_rules`` is the one place they are read from the file.
* ``upkeep`` (optional) is set by a long-running process's ``tools.session.VaultRuntime``: then
  ``fresh()`` and ``writing()`` go through it, so the index is synced on the process's one
  writer connection (``conn`` may then be a read-only connection of the calling thread), reads
  skip the sync while a file watcher keeps the index fresh (a write syncs just its paths), and
  writes take the process's write turn (one at a time) before the vault's write lock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from vaultpilot.configfile import config_path, read_config
from vaultpilot.index.db import connect
from vaultpilot.index.lookup import database_file
from vaultpilot.index.sync import sync_vault
from vaultpilot.locations import data_root, memory_db_path, vault_data_dir
from vaultpilot.memory.journal import Journal
from vaultpilot.tools.ranking import Ranker, hybrid_ranker, keyword_ranker
from vaultpilot.tools.rules import VaultRules, load_rules
from vaultpilot.tools.semantic import Semantic
from vaultpilot.vault.config import VaultConfig, read_vault_config
from vaultpilot.vault.files import remove_temp_files
from vaultpilot.vault.lock import DEFAULT_WAIT, LOCK_NAME, try_write_lock, write_lock

__all__ = ["ToolContext", "Upkeep", "local_now", "open_context", "read_rules", "sync_index"]


def local_now() -> datetime:
    """The current local time, with its UTC offset."""
    return datetime.now().astimezone()


class Upkeep(Protocol):
    """Who keeps the index fresh and orders the writes of a context it lends out."""

    def fresh(self, *, force: bool, paths: Collection[str] | None = None) -> None: ...

    def writing(self) -> AbstractContextManager[None]: ...


def sync_index(
    conn: sqlite3.Connection, root: Path, lock_path: Path, *, workers: int | None = 1
) -> None:
    """Sync the index on ``conn`` with the vault, then remove temp files a killed write left
    (only when the write lock at ``lock_path`` is free: else a write is in progress)."""
    leftovers: list[str] = []
    sync_vault(conn, root, workers=workers, temp_files=leftovers)
    if leftovers:
        with try_write_lock(lock_path) as free:
            if free:  # else a write is in progress and its temp file is not a leftover
                remove_temp_files(root, leftovers)


@dataclass(frozen=True, slots=True)
class ToolContext:
    root: Path
    conn: sqlite3.Connection
    config: VaultConfig = field(default_factory=VaultConfig)
    ranker: Ranker = keyword_ranker
    now: Callable[[], datetime] = local_now
    sync_before_read: bool = True
    semantic: Semantic | None = None
    lock_path: Path | None = None
    lock_wait: float = DEFAULT_WAIT
    journal: Journal | None = None
    change_set: str | None = None
    source: str | None = None  # the entry point the changes are journaled as, if not the journal's
    upkeep: Upkeep | None = None
    rules: VaultRules = field(default_factory=VaultRules)

    def write_lock_path(self) -> Path:
        """The vault's write-lock file: beside the index, in the vault's data folder."""
        if self.lock_path is not None:
            return self.lock_path
        db = database_file(self.conn)
        if db is not None:
            return db.parent / LOCK_NAME
        return vault_data_dir(self.root, data_root()) / LOCK_NAME  # an index kept in memory

    def writing(self) -> AbstractContextManager[None]:
        """Hold the vault's write lock (re-entrant); VaultBusyError after ``lock_wait`` s."""
        if self.upkeep is not None:
            return self.upkeep.writing()
        return write_lock(self.write_lock_path(), timeout=self.lock_wait)

    def fresh(self, *, force: bool = False, paths: Collection[str] | None = None) -> None:
        """Sync the index with the vault (always for a write: ``force=True``, with the vault
        ``paths`` it changed when it knows them; ``paths`` implies ``force``)."""
        force = force or paths is not None
        if not (force or self.sync_before_read):
            return
        if self.upkeep is not None:
            self.upkeep.fresh(force=force, paths=paths)
            return
        sync_index(self.conn, self.root, self.write_lock_path())  # no watcher: the whole vault


def read_rules(vault: Path, config: Path | None) -> VaultRules:
    """The person's rules for ``vault``: the ``[rules]`` table of the config file ``config``
    (None: no file, so the defaults). A file that cannot be read, is not TOML or has a bad
    ``[rules]`` setting is a ``SetupError`` naming the file and what to change."""
    if config is None:
        return load_rules({}, vault)
    return load_rules(read_config(config), vault, where=str(config))


def open_context(root: Path, db_path: Path, **options: object) -> ToolContext:
    """Open the index at ``db_path`` for the vault at ``root`` and read the vault's settings.

    The caller closes ``ctx.conn`` (and ``ctx.journal``, if any) when done; ``source`` names
    the transport in the journal (default ``cli``). ``options`` are passed to ``ToolContext``; the
    write lock lives beside the index unless ``lock_path`` says otherwise.
    """
    real = root.resolve()
    conn = connect(db_path)
    options.setdefault("lock_path", db_path.parent / LOCK_NAME)
    source = str(options.pop("source", "cli"))
    if "journal" not in options and db_path.parent.parent.name == "vaults":
        options["journal"] = Journal(memory_db_path(db_path.parents[2]), source=source)
    if "rules" not in options:
        options["rules"] = read_rules(real, config_path())
    semantic = options.get("semantic")
    if isinstance(semantic, Semantic) and "ranker" not in options:
        options["ranker"] = hybrid_ranker(semantic)
    return ToolContext(real, conn, read_vault_config(real), **options)  # type: ignore[arg-type]
