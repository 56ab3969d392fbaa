"""Undoing a change set whose files a later change set moved: nothing is written, and the
refusal names the later set to undo first, which then lets this one be undone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.memory.helpers import manage, snapshot
from vaultpilot.errors import StaleVersionError
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set


def test_an_undo_after_a_later_move_names_the_move_to_undo_first(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    tagged = manage(
        ctx, operation="bulk_tag", targets=["Old/Notes.md", "Old/Deep/Leaf.md"],
        metadata={"tags": ["seen"]},
    )  # fmt: skip
    assert ctx.journal is not None
    tag_set = ctx.journal.change_sets(str(ctx.root), limit=1)[0].id
    assert tagged["affectedCount"] == 2
    manage(ctx, operation="move_folder", target="Old", destination="Archive", createFolders=True)
    move_set = ctx.journal.change_sets(str(ctx.root), limit=1)[0].id
    moved = snapshot(ctx.root)
    with pytest.raises(StaleVersionError) as refused:
        undo_change_set(ctx, tag_set)
    message = refused.value.message
    assert f"moved or deleted since by change set {move_set}" in message
    assert f"Undo {move_set} first, then this one." in message
    assert snapshot(ctx.root) == moved  # nothing written
    undo_change_set(ctx, move_set)
    undo_change_set(ctx, tag_set)
    assert snapshot(ctx.root) == before


def test_a_note_changed_twice_in_one_set_is_restored_once(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    run = replace(ctx, change_set="run0001")  # one agent run: two changes to one note
    manage(run, operation="append_note", target="Daily.md", content="- one\n")
    manage(run, operation="append_note", target="Daily.md", content="- two\n")
    _, _, report = undo_change_set(ctx, "run0001")
    assert report.put_back() == ["Daily.md"]
    assert report.summary() == "restored 1 note"
    assert snapshot(ctx.root) == before
