"""A change set undone while it still grows (an agent run still writing), undos ordered by
insertion rather than by the clock, and the undo map read once per history listing; against a
real vault, a real index and a real memory.db."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from tests.memory.helpers import NOTES, manage, snapshot
from vaultpilot.errors import InvalidArgumentError, StaleVersionError
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set

RUN = "run-0000000000a1"


def _grown(ctx: ToolContext) -> tuple[ToolContext, str]:
    """A run that made two changes, was undone, then went on writing; returns (the run's
    context, the first undo's id)."""
    run = replace(ctx, change_set=RUN)
    manage(run, operation="create_note", target="Projects/New.md", content="first\n")
    manage(
        run,
        operation="edit_note",
        target="Ideas.md",
        edits=[{"oldText": "- two", "newText": "- 2"}],
    )
    _, first, report = undo_change_set(ctx, RUN)
    assert first is not None and sorted(report.restored) == ["Ideas.md", "Projects/New.md"]
    # The run keeps writing: the same path again, another note, a note in a new folder.
    manage(run, operation="create_note", target="Projects/New.md", content="again\n")
    manage(run, operation="append_note", target="Daily.md", content="later")
    manage(run, operation="create_note", target="Later/Made.md", content="made\n")
    return run, first


def test_a_set_that_grew_after_its_undo_is_undone_again_for_the_later_changes(
    ctx: ToolContext,
) -> None:
    before = snapshot(ctx.root)
    _, first = _grown(ctx)
    assert ctx.journal is not None
    vault = str(ctx.root)
    grown = ctx.journal.get(vault, RUN)
    assert grown.undone_by is None and grown.last_undo == first  # partly undone
    assert [c.path_after for c in grown.remaining if c.kind != "mkdir"] == [
        "Projects/New.md",
        "Daily.md",
        "Later/Made.md",
    ]
    assert grown.as_json()["undoneBy"] is None
    _, second, report = undo_change_set(ctx, RUN)
    assert second is not None
    # Only the later changes: Ideas.md was the first undo's, and is not touched again.
    assert sorted(report.restored) == ["Daily.md", "Later", "Later/Made.md", "Projects/New.md"]
    assert report.skipped == [] and report.removed == ["Later"]
    assert snapshot(ctx.root) == before
    assert (ctx.root / "Ideas.md").read_bytes() == NOTES["Ideas.md"].encode()
    done = ctx.journal.get(vault, RUN)
    assert done.undone_by == second and done.remaining == ()
    with pytest.raises(InvalidArgumentError, match=f"already undone by {second}"):
        undo_change_set(ctx, RUN)
    # The second undo undone: the later changes are back, and the run is partly undone again.
    undo_change_set(ctx, second)
    assert (ctx.root / "Later/Made.md").read_text(encoding="utf-8") == "made\n"
    again = ctx.journal.get(vault, RUN)
    assert again.undone_by is None and again.last_undo == first
    undo_change_set(ctx, RUN)
    assert snapshot(ctx.root) == before


def test_a_partly_undone_set_names_only_its_later_files_as_changed_since(
    ctx: ToolContext,
) -> None:
    _grown(ctx)
    (ctx.root / "Daily.md").write_text("edited by hand\n", encoding="utf-8")
    edited = snapshot(ctx.root)
    with pytest.raises(StaleVersionError) as stale:
        undo_change_set(ctx, RUN)
    message = stale.value.message
    assert message.startswith(f"1 file changed since change set {RUN} (only its changes after")
    assert "Daily.md" in message and "Ideas.md" not in message, message
    assert snapshot(ctx.root) == edited
    _, _, report = undo_change_set(ctx, RUN, skip_changed=True)
    assert report.skipped == ["Daily.md"] and "Projects/New.md" in report.restored
    assert (ctx.root / "Daily.md").read_text(encoding="utf-8") == "edited by hand\n"


def test_undos_are_ordered_by_insertion_not_by_the_clock(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    manage(ctx, operation="update_note", target="Ideas.md", content="# Ideas\n- all\n")
    after = snapshot(ctx.root)
    assert ctx.journal is not None
    vault = str(ctx.root)
    target = ctx.journal.last_id(vault)
    _, undo, _ = undo_change_set(ctx, target)
    _, redo, _ = undo_change_set(ctx, undo)  # the set stands again
    assert undo is not None and redo is not None
    # The clock stepped back between the undo and the redo: the redo looks older.
    conn = sqlite3.connect(ctx.journal.path)
    conn.execute(
        "UPDATE change_sets SET created_at = created_at + 3600, updated_at = updated_at + 3600"
        " WHERE id = ?",
        (undo,),
    )
    conn.commit()
    conn.close()
    assert ctx.journal.get(vault, target).undone_by is None
    assert ctx.journal.get(vault, undo).undone_by == redo
    assert snapshot(ctx.root) == after
    undo_change_set(ctx, target)
    assert snapshot(ctx.root) == before


def test_a_history_listing_reads_the_undos_once(ctx: ToolContext) -> None:
    for i in range(6):
        manage(ctx, operation="create_note", target=f"Made {i}.md", content=f"{i}\n")
    undo_change_set(ctx, None)
    assert ctx.journal is not None
    statements: list[str] = []
    ctx.journal._db().set_trace_callback(statements.append)
    try:
        sets = ctx.journal.change_sets(str(ctx.root))
    finally:
        ctx.journal._db().set_trace_callback(None)
    assert len(sets) == 7 and sets[1].undone_by == sets[0].id
    assert sum("undo_of IS NOT NULL" in s for s in statements) == 1
