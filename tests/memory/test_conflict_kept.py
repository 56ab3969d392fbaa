"""A write that lands although another program's save was kept beside it (a conflict copy):
the change is journaled (undo knows it) and never done twice by the retry of relative
changes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.memory.helpers import snapshot
from vaultpilot.errors import ConflictKeptError, StaleVersionError
from vaultpilot.tools import call_tool
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set
from vaultpilot.vault import files


def _first_write_reports(kind: type[StaleVersionError], calls: list[str]) -> Any:
    real = files.replace_note

    def replace(*args: Any, **kwargs: Any) -> Any:
        calls.append(kind.__name__)
        if len(calls) == 1:
            if kind is ConflictKeptError:
                real(*args, **kwargs)  # the change lands, then the conflict is reported
            raise kind("saved twice; the text in between is kept beside it")
        return real(*args, **kwargs)

    return replace


def test_a_change_kept_beside_a_conflict_copy_is_journaled_and_not_done_twice(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(ctx.root)
    calls: list[str] = []
    monkeypatch.setattr(files, "replace_note", _first_write_reports(ConflictKeptError, calls))
    change = {"operation": "append_note", "target": "Daily.md", "content": "- once\n"}
    out = call_tool(ctx, "obsidian_vault_manager", change)
    assert out["success"] is False and "kept beside it" in out["message"]
    assert calls == ["ConflictKeptError"]
    assert (ctx.root / "Daily.md").read_text(encoding="utf-8").count("- once") == 1
    assert ctx.journal is not None
    last = ctx.journal.change_sets(str(ctx.root), limit=1)[0]
    assert [c.path_after for c in last.changes] == ["Daily.md"]
    monkeypatch.undo()
    undo_change_set(ctx, last.id)
    assert snapshot(ctx.root) == before


def test_a_plain_stale_write_of_an_append_is_done_again(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(files, "replace_note", _first_write_reports(StaleVersionError, calls))
    change = {"operation": "append_note", "target": "Daily.md", "content": "- again\n"}
    assert call_tool(ctx, "obsidian_vault_manager", change)["success"] is True
    assert calls == ["StaleVersionError", "StaleVersionError"]
    assert (ctx.root / "Daily.md").read_text(encoding="utf-8").count("- again") == 1
