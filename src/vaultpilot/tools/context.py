"""What every tool call runs against: the vault folder, its index connection and its settings.

``ToolContext`` is a small frozen value built once by a transport (CLI, agent, server, MCP) and
passed to every call. It owns no resources: whoever opened the connection closes it.

* ``fresh()`` brings the index up to date with the vault. Read tools call it first (unless
  ``sync_before_read`` is off because a file watcher keeps the index fresh), and write tools call
  it before planning and again after writing, so a search right after a write sees the change.
* ``semantic`` (optional) gives the vector side: an embedder loaded on first use and the vector
  cache. With it, ``semantic_search`` uses hybrid ranking and related notes count similar
  meaning; without it both use keywords only. ``ranker`` can replace the ranking entirely.
* ``now`` is the clock for "today", "last 7 days" and template dates; tests pin it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_vault
from vaultpilot.tools.ranking import Ranker, hybrid_ranker, keyword_ranker
from vaultpilot.tools.semantic import Semantic
from vaultpilot.vault.config import VaultConfig, read_vault_config

__all__ = ["ToolContext", "local_now", "open_context"]


def local_now() -> datetime:
    """The current local time, with its UTC offset."""
    return datetime.now().astimezone()


@dataclass(frozen=True, slots=True)
class ToolContext:
    root: Path
    conn: sqlite3.Connection
    config: VaultConfig = field(default_factory=VaultConfig)
    ranker: Ranker = keyword_ranker
    now: Callable[[], datetime] = local_now
    sync_before_read: bool = True
    semantic: Semantic | None = None

    def fresh(self, *, force: bool = False) -> None:
        """Sync the index with the vault (always after a write: ``force=True``)."""
        if not (force or self.sync_before_read):
            return
        sync_vault(self.conn, self.root, workers=1)


def open_context(root: Path, db_path: Path, **options: object) -> ToolContext:
    """Open the index at ``db_path`` for the vault at ``root`` and read the vault's settings.

    The caller closes ``ctx.conn`` when done. ``options`` are passed to ``ToolContext``.
    """
    real = root.resolve()
    conn = connect(db_path)
    semantic = options.get("semantic")
    if isinstance(semantic, Semantic) and "ranker" not in options:
        options["ranker"] = hybrid_ranker(semantic)
    return ToolContext(real, conn, read_vault_config(real), **options)  # type: ignore[arg-type]
