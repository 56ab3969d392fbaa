"""Undoing a delete takes the note back out of .trash/ and leaves no empty .trash/ behind; a
.trash/ that holds anything else stays. Real vault, index and memory.db."""

from __future__ import annotations

from dataclasses import replace

from tests.memory.helpers import manage, snapshot
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set


def test_an_undone_delete_leaves_no_empty_trash(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    run = replace(ctx, change_set="run-0000000000b1")
    manage(run, operation="delete_note", target="Old/Deep/Leaf.md", confirmDestructive=True)
    manage(run, operation="delete_note", target="Ideas.md", confirmDestructive=True)
    assert (ctx.root / ".trash").is_dir()
    undo_change_set(ctx, "run-0000000000b1")
    assert snapshot(ctx.root) == before
    assert not (ctx.root / ".trash").exists()


def test_a_trash_holding_something_else_stays(ctx: ToolContext) -> None:
    (ctx.root / ".trash").mkdir()
    (ctx.root / ".trash" / "Older.md").write_text("deleted in Obsidian\n", encoding="utf-8")
    manage(ctx, operation="delete_note", target="Daily.md", confirmDestructive=True)
    undo_change_set(ctx, None)
    assert (ctx.root / "Daily.md").exists()
    assert sorted(p.name for p in (ctx.root / ".trash").iterdir()) == ["Older.md"]
