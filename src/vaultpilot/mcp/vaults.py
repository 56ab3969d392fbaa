"""The vaults an MCP server serves: what it needs of each, and the stdio server's own sessions.

* ``VaultSession`` is all the MCP server asks of a vault: its folder (``root``) and
  ``run(fn)``, which runs ``fn(ctx)`` on a ``ToolContext`` of the vault in a worker thread, and
  ``run_tool(name, arguments)``, one vault tool (a write, by the tool's facts, takes the vault's
  write turn before it starts; reads run in parallel). The Agent Communication Server's
  ``VaultHandle`` has exactly this shape, so ``/mcp`` shares its runtime: contexts, write turn
  and lock, watcher and background embedding.
* ``LocalVault`` is the session ``vaultpilot mcp`` opens for each ``--vault``: the vault's
  ``tools.session.VaultRuntime`` (the per-vault session object the server and chat use too).
  ``start()`` returns at once: a daemon thread indexes the vault and starts its file watcher,
  which keeps the index fresh (tool calls then do not walk the vault; reads run in parallel,
  writes one at a time), and the ``BackgroundEmbedder`` embeds what changed. While the watcher
  is not live (failed, or off) the index is re-synced every ``rescan`` seconds and tool calls
  sync for themselves. A failed sync is logged (stderr) and tried again. The vault's ``[rules]``
  are read from config.toml once, when the ``LocalVault`` is made (as the server reads them at
  start-up): a change to them takes effect when ``vaultpilot mcp`` starts again.
* ``parse_vault_specs`` reads ``--vault NAME=PATH`` or ``--vault PATH`` (the name is then the
  folder's name) and refuses an empty one, a missing folder, a bad name or two vaults with one
  name.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio.to_thread

from vaultpilot.errors import SetupError
from vaultpilot.tools import ToolContext, ToolOutcome
from vaultpilot.tools.semantic import Semantic
from vaultpilot.tools.session import VaultRuntime

__all__ = ["LocalVault", "VaultSession", "parse_vault_specs"]

log = logging.getLogger(__name__)
T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class VaultSession(Protocol):
    """One vault as the MCP server uses it (see the module)."""

    root: Path

    async def run(self, fn: Callable[[ToolContext], T]) -> T: ...

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any] | None, *, source: str | None = None
    ) -> ToolOutcome: ...


class LocalVault:
    """A vault served by ``vaultpilot mcp``: its ``VaultRuntime`` and background upkeep."""

    def __init__(
        self, root: Path, db_path: Path, semantic: Semantic | None = None, *, watch: bool = True
    ) -> None:
        self.root = root
        self.db_path = db_path
        self.runtime = VaultRuntime(
            root, db_path, source="mcp", holder="vaultpilot mcp", semantic=semantic, watch=watch
        )
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def semantic(self) -> Semantic:
        return self.runtime.semantic

    def call(self, fn: Callable[[ToolContext], T]) -> T:
        """Run ``fn(ctx)`` in this thread (reads in parallel, writes one at a time)."""
        return self.runtime.call(fn)

    async def run(self, fn: Callable[[ToolContext], T]) -> T:
        return await anyio.to_thread.run_sync(self.runtime.call, fn)

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any] | None, *, source: str | None = None
    ) -> ToolOutcome:
        """Run one vault tool; its facts say whether it takes the write turn."""
        call = functools.partial(self.runtime.call_tool, name, arguments, source=source)
        return await anyio.to_thread.run_sync(call)

    def sync(self) -> None:
        """Bring the index up to date with the vault (blocking)."""
        self.runtime.sync()

    def _upkeep(self, *, embed: bool, rescan: float) -> None:
        # The first sync of a large vault parses every note: worker processes do the parsing,
        # so this thread holds the GIL little and the protocol loop stays responsive.
        try:
            self.runtime.open(workers=2)
        except Exception:  # logged, never fatal: tool calls sync for themselves
            log.exception("indexing %s failed; retrying in %.0f s", self.root, rescan)
        if self._stop.is_set():
            return
        if embed:
            self.runtime.start_embedding(poll=rescan)  # it syncs at each poll unless live
            return
        while not self._stop.wait(rescan):
            if self.runtime.live():
                continue
            try:
                self.runtime.sync()
            except Exception:
                log.exception("re-indexing %s failed", self.root)

    def start(self, *, embed: bool = True, rescan: float = 30.0) -> None:
        """Index and watch, then keep the vectors (with ``embed``) fresh; returns at once."""
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
        self.runtime.close()


def parse_vault_specs(specs: Sequence[str]) -> dict[str, Path]:
    """``NAME=PATH`` or ``PATH`` for each ``--vault``, as ``{name: real folder}`` in order."""
    vaults: dict[str, Path] = {}
    for spec in specs:
        if not spec.strip():
            raise SetupError(
                "--vault is empty. Give the vault folder: --vault PATH (or NAME=PATH)."
            )
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
