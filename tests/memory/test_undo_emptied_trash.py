"""Undoing a delete whose copy in the trash is gone: notes come back from the journal's bytes,
a file the journal holds no bytes of is named as emptied from the trash (never as "changed
since"), and a note edited in the trash comes back as it is, named. Real vault, index and
memory.db."""

from __future__ import annotations

import shutil

import pytest

from tests.memory.helpers import NOTES, manage, snapshot
from vaultpilot.errors import StaleVersionError
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set


def test_a_deleted_note_comes_back_from_the_journal_once_the_trash_is_emptied(
    ctx: ToolContext,
) -> None:
    before = snapshot(ctx.root)
    manage(ctx, operation="delete_note", target="Ideas.md", confirmDestructive=True)
    shutil.rmtree(ctx.root / ".trash")
    _, redo, report = undo_change_set(ctx, None)
    assert snapshot(ctx.root) == before  # CRLF bytes and all
    assert report.rebuilt == ["Ideas.md"] and report.lost == [] and report.skipped == []
    assert report.summary() == (
        "restored 1 note (Ideas.md written again from the journal: gone from the trash)"
    )
    assert redo is not None
    undo_change_set(ctx, redo)  # undoing the undo sends it to the trash again
    assert not (ctx.root / "Ideas.md").exists()
    assert (ctx.root / ".trash" / "Ideas.md").read_bytes() == NOTES["Ideas.md"].encode()


def test_a_folder_delete_comes_back_but_the_attachment_emptied_from_the_trash(
    ctx: ToolContext,
) -> None:
    (ctx.root / "Old" / "beds.png").write_bytes(b"\x89PNG\r\n\x1a\n binary")
    before = snapshot(ctx.root)
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    shutil.rmtree(ctx.root / ".trash")
    with pytest.raises(StaleVersionError) as refused:
        undo_change_set(ctx, None)
    message = refused.value.message
    assert "Old/beds.png was emptied from the trash; it cannot be restored" in message
    assert "changed since" not in message and "--skip-changed" in message
    assert not (ctx.root / "Old").exists()  # nothing written
    _, _, report = undo_change_set(ctx, None, skip_changed=True)
    now = snapshot(ctx.root)
    assert {k: v for k, v in before.items() if k != "Old/beds.png"} == now
    assert report.lost == ["Old/beds.png"] and report.skipped == []
    assert report.folders == ["Old"] and "Old" in report.restored  # the web view lists it
    assert report.summary().startswith("restored 2 notes and 1 folder")
    emptied = "; Old/beds.png was emptied from the trash; it cannot be restored"
    assert report.summary().endswith(emptied)
    assert "changed since" not in report.summary()


def test_nothing_left_when_only_files_without_bytes_were_deleted(ctx: ToolContext) -> None:
    (ctx.root / "Scans").mkdir()
    (ctx.root / "Scans" / "scan.pdf").write_bytes(b"%PDF-1.4")  # no stored bytes: not a note
    manage(ctx, operation="delete_folder", target="Scans", confirmDestructive=True, recursive=True)
    shutil.rmtree(ctx.root / ".trash")
    with pytest.raises(StaleVersionError) as refused:
        undo_change_set(ctx, None, skip_changed=True)
    assert refused.value.message.startswith(
        "Nothing of change set "
    ) and refused.value.message.endswith(
        "can be undone: Scans, Scans/scan.pdf were emptied from the trash; they cannot be "
        "restored. Nothing was written."
    )
    assert not (ctx.root / "Scans").exists()


def test_a_note_edited_in_the_trash_comes_back_as_it_is_and_is_named(ctx: ToolContext) -> None:
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    edited = ctx.root / ".trash" / "Old" / "Notes.md"
    edited.write_text(NOTES["Old/Notes.md"] + "added in the trash\n", encoding="utf-8")
    _, _, report = undo_change_set(ctx, None)
    assert (ctx.root / "Old" / "Notes.md").read_text().endswith("added in the trash\n")
    assert report.differ == ["Old/Notes.md"]
    assert report.summary() == (
        "restored 2 notes and 1 folder; Old/Notes.md came back as edited in the trash, not as "
        "deleted"
    )


def test_a_single_note_edited_in_the_trash_is_named_too(ctx: ToolContext) -> None:
    manage(ctx, operation="delete_note", target="Daily.md", confirmDestructive=True)
    (ctx.root / ".trash" / "Daily.md").write_text("changed\n", encoding="utf-8")
    _, _, report = undo_change_set(ctx, None)
    assert (ctx.root / "Daily.md").read_text() == "changed\n"
    assert report.differ == ["Daily.md"] and report.summary().startswith("restored 1 note;")


def test_undoing_an_undone_folder_delete_counts_the_notes_sent_back(ctx: ToolContext) -> None:
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    _, redo, report = undo_change_set(ctx, None)
    assert report.summary() == "restored 2 notes and 1 folder"  # the folder counted apart
    assert redo is not None
    _, _, again = undo_change_set(ctx, redo)
    assert not (ctx.root / "Old").exists()
    assert again.summary() == "moved 2 notes and 1 folder back to the trash"
