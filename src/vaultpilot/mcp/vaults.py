"""The vaults an MCP server serves: what it needs of each, and the stdio server's own sessions.

* ``VaultSession`` is all the MCP server asks of a vault: its folder (``root``) and
  ``run(fn)``, which runs ``fn(ctx)`` on the vault's ``ToolContext`` in a worker thread, one call
  at a time (the context owns one SQLite connection). The Agent Communication Server's
  ``VaultHandle`` has exactly this shape, so ``/mcp`` shares its contexts, write locks and
  background embedding.
* ``LocalVault`` is the session ``vaultpilot mcp`` opens for each ``--vault``. ``start()``
  returns at once: a daemon thread brings the index up to date, then keeps it fresh, either
  through the vault's ``BackgroundEmbedder`` (which re-syncs every ``rescan`` seconds and embeds
  what changed) or, without embedding, by re-syncing every ``rescan`` seconds itself. A failed
  sync is logged (stderr) and tried again at the next rescan; tool calls sync for themselves.
* ``parse_vault_specs`` reads ``--vault NAME=PATH`` or ``--vault PATH`` (the name is then the
  folder's name) and refuses a missing folder, a bad name or two vaults with one name.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import anyio.to_thread

from vaultpilot.errors import SetupError
from vaultpilot.index.background import BackgroundEmbedder
from vaultpilot.index.sync import sync_vault
from vaultpilot.tools import ToolContext, open_context
from vaultpilot.tools.semantic import Semantic

__all__ = ["LocalVault", "VaultSession", "parse_vault_specs"]

log = logging.getLogger(__name__)
T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class VaultSession(Protocol):
    """One vault as the MCP server uses it (see the module)."""

    root: Path

    async def run(self, fn: Callable[[ToolContext], T]) -> T: ...


@dataclass(slots=True)
class LocalVault:
    """A vault served by ``vaultpilot mcp``: its context, lock and background upkeep."""

    root: Path
    db_path: Path
    semantic: Semantic = field(default_factory=Semantic)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ctx: ToolContext | None = None
    _background: BackgroundEmbedder | None = None
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def _context(self) -> ToolContext:
        if self._ctx is None:
            self._ctx = open_context(self.root, self.db_path, semantic=self.semantic, source="mcp")
        return self._ctx

    def call(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` under the vault's lock in this thread."""
        try:
            with self._lock:
                return fn(self._context())
        finally:
            if self._background is not None:
                self._background.wake()  # what the call synced gets embedded soon after

    async def run(self, fn: Callable[[ToolContext], T]) -> T:
        return await anyio.to_thread.run_sync(self.call, fn)

    def sync(self) -> None:
        """Bring the index up to date with the vault (blocking)."""
        with self._lock:
            self._context().fresh(force=True)

    def _first_sync(self) -> None:
        # The first sync of a large vault parses every note: worker processes do the parsing,
        # so this thread holds the GIL little and the protocol loop stays responsive.
        with self._lock:
            ctx = self._context()
            sync_vault(ctx.conn, ctx.root, workers=2)
            ctx.fresh(force=True)  # also clears temp files a killed write left behind

    def _upkeep(self, *, embed: bool, rescan: float) -> None:
        try:
            self._first_sync()
        except Exception:  # logged, never fatal: tool calls sync for themselves
            log.exception("indexing %s failed; retrying in %.0f s", self.root, rescan)
        if self._stop.is_set():
            return
        if embed:
            self._background = BackgroundEmbedder(
                self.db_path, self.semantic.require, role="mcp", poll=rescan, refresh=self.sync
            )
            self._background.start()
            return
        while not self._stop.wait(rescan):
            try:
                self.sync()
            except Exception:
                log.exception("re-indexing %s failed", self.root)

    def start(self, *, embed: bool = True, rescan: float = 30.0) -> None:
        """Index, then keep the index (and, with ``embed``, the vectors) fresh; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._upkeep,
                kwargs={"embed": embed, "rescan": rescan},
                name=f"vaultpilot-mcp-{self.root.name}",
                daemon=True,
            )
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._background is not None:
            self._background.stop()
        with self._lock:
            if self._ctx is not None:
                self._ctx.conn.close()
                if self._ctx.journal is not None:
                    self._ctx.journal.close()
                self._ctx = None


def parse_vault_specs(specs: Sequence[str]) -> dict[str, Path]:
    """``NAME=PATH`` or ``PATH`` for each ``--vault``, as ``{name: real folder}`` in order."""
    vaults: dict[str, Path] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        if not sep or not _NAME.match(name) or not raw:
            name, raw = "", spec
        path = Path(raw).expanduser()
        if not path.is_dir():
            what = "does not exist" if not path.exists() else "is not a folder"
            raise SetupError(f"Vault folder '{raw}' {what}. Give the folder that holds your notes.")
        path = path.resolve()
        name = name or re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-._")[:64] or "vault"
        if name in vaults and vaults[name] != path:
            raise SetupError(
                f"Two vaults are named '{name}' ({vaults[name]} and {path}); name them with "
                "--vault NAME=PATH."
            )
        vaults[name] = path
    if not vaults:
        raise SetupError(
            "No vault to serve. Pass --vault PATH (or NAME=PATH, repeatable), or set "
            "VAULTPILOT_VAULT."
        )
    return vaults
