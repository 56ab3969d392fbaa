"""``VaultTools``: the three vault tools on one ``ToolContext``, as a ``ToolSet``.

``call`` goes through ``vaultpilot.tools.registry.call_tool`` (validation, failure results) under
a lock: the loop runs tools in worker threads and the context's SQLite connection must be used by
one thread at a time. The same lock guards ``note_paths``, ``read_note`` and ``facts``, which the
loop uses for ``@`` mentions and the system prompt. ``for_run(run_id)`` is the same tools (same
lock) whose changes join the change set ``run_id``: an agent run is one change set in the journal.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import date
from typing import Any

from vaultpilot.agent.prompt import VaultFacts
from vaultpilot.agent.toolset import ToolSpec
from vaultpilot.index.lookup import all_paths
from vaultpilot.tools import ToolContext
from vaultpilot.tools.daily import daily_path
from vaultpilot.tools.enforce import resolved_paths
from vaultpilot.tools.registry import TOOLS, call_tool
from vaultpilot.tools.rules import PRIVATE_TEXT
from vaultpilot.vault.files import read_note

__all__ = ["VaultTools"]


class VaultTools:
    """The vault tools for one vault; the caller owns (and closes) ``ctx.conn``."""

    def __init__(self, ctx: ToolContext, *, lock: threading.Lock | None = None) -> None:
        self.ctx = ctx
        self._lock = lock or threading.Lock()
        self._specs = [ToolSpec(t.name, t.description, t.schema()) for t in TOOLS]

    def for_run(self, run_id: str) -> VaultTools:
        return VaultTools(dataclasses.replace(self.ctx, change_set=run_id), lock=self._lock)

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return call_tool(self.ctx, name, arguments)

    def resolve(self, names: list[str]) -> list[str]:
        """The names as given and the notes they lead to (``tools.enforce.resolved_paths``)."""
        with self._lock:
            return resolved_paths(self.ctx, names)

    def note_paths(self, *, hidden: bool = False) -> list[str]:
        """Every Markdown note in the vault (the index is synced first), without the notes the
        vault's rules keep from the agent unless ``hidden`` (to say why a mention of one is
        refused rather than unknown)."""
        rules = self.ctx.rules
        with self._lock:
            self.ctx.fresh()
            paths = [p for p in all_paths(self.ctx.conn) if p.lower().endswith(".md")]
        return paths if hidden else [p for p in paths if not rules.hidden(p)]

    def read_note(self, path: str) -> tuple[str, str]:
        """The note's text and version, as the vault's rules let the model see it: a ``deny``
        note is refused (PathRefusedError), a ``private`` one's text withheld."""
        rules = self.ctx.rules
        rules.check_read([path])
        with self._lock:
            note = read_note(self.ctx.root, path)
        return (PRIVATE_TEXT if rules.private_note(path) else note.text), note.version

    def facts(self, today: date | None = None) -> VaultFacts:
        day = today or self.ctx.now().date()
        daily = self.ctx.config.daily_notes
        count = len(self.note_paths())
        template = f"{daily.template}.md" if daily.template else ""
        return VaultFacts(
            name=self.ctx.root.name,
            note_count=count,
            today=day,
            daily_folder=daily.folder,
            daily_format=daily.format,
            daily_template=template,
            today_daily_path=daily_path(daily, day),
        )
