"""The change journal and undo, against a real vault, a real index and a real memory.db (the
``ctx`` fixture of conftest.py)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.index.helpers import dump
from tests.memory.helpers import NOTES, manage, snapshot
from vaultpilot.errors import (
    InvalidArgumentError,
    NotFoundError,
    SetupError,
    StaleVersionError,
    StorageError,
)
from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_vault
from vaultpilot.tools import call_tool, open_context
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import undo_change_set

OPERATIONS: dict[str, dict[str, Any]] = {
    "create": {"operation": "create_note", "target": "Projects/New.md", "content": "new\n"},
    "create_folder": {"operation": "create_folder", "target": "Fresh"},
    "update": {"operation": "update_note", "target": "Ideas.md", "content": "# Ideas\n- all\n"},
    "edit": {
        "operation": "edit_note",
        "target": "Ideas.md",
        "edits": [{"oldText": "- two", "newText": "- 2"}],
    },
    "append": {"operation": "append_note", "target": "Daily.md", "content": "more"},
    "delete": {"operation": "delete_note", "target": "Old/Notes.md", "confirmDestructive": True},
    "delete_folder": {
        "operation": "delete_folder",
        "target": "Old",
        "confirmDestructive": True,
        "recursive": True,
    },
    "move_note": {"operation": "move_note", "target": "Ideas.md", "destination": "Archive"},
    "move_folder": {"operation": "move_folder", "target": "Old", "destination": "Archive"},
    "bulk_tag": {
        "operation": "bulk_tag",
        "targets": ["Ideas.md", "Daily.md", "Projects/Plan.md"],
        "metadata": {"tags": ["done"]},
    },
    "bulk_move": {
        "operation": "bulk_move",
        "targets": ["Ideas.md", "Old/Notes.md"],
        "destination": "Archive",
    },
    "bulk_update_metadata": {
        "operation": "bulk_update_metadata",
        "targets": ["Ideas.md", "Projects/Plan.md"],
        "metadataChanges": {"status": "done", "tags": None},
    },
}


@pytest.mark.parametrize("kind", sorted(OPERATIONS))
def test_each_operation_is_undone_byte_for_byte(ctx: ToolContext, kind: str) -> None:
    before = snapshot(ctx.root)
    manage(ctx, **OPERATIONS[kind])
    after = snapshot(ctx.root)
    assert after != before
    undone, new, report = undo_change_set(ctx, None)
    assert report.restored and not report.skipped
    assert snapshot(ctx.root) == before
    # The undo is a change set too: undoing it brings the change back.
    assert new is not None and new != undone
    undo_change_set(ctx, new)
    assert snapshot(ctx.root) == after


def test_links_rewritten_by_a_move_are_part_of_its_change_set(ctx: ToolContext) -> None:
    manage(ctx, operation="move_note", target="Old/Notes.md", destination="Archive")
    assert ctx.journal is not None
    cs = ctx.journal.get(str(ctx.root), ctx.journal.last_id(str(ctx.root)))
    kinds = {(c.kind, c.path_after) for c in cs.changes}
    assert ("move", "Archive/Notes.md") in kinds
    assert ("update", "Projects/Plan.md") in kinds and ("update", "Old/Deep/Leaf.md") in kinds


def test_a_run_is_one_change_set_and_undoes_every_kind(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    run = replace(ctx, change_set="run-42")
    for kind in ("create", "edit", "append", "bulk_tag", "move_note", "move_folder"):
        manage(run, **OPERATIONS[kind])
    manage(run, operation="delete_note", target="Projects/New.md", confirmDestructive=True)
    assert ctx.journal is not None
    sets = ctx.journal.change_sets(str(ctx.root))
    assert [s.id for s in sets] == ["run-42"] and sets[0].run_id == "run-42"
    assert "move_folder" in sets[0].summary
    undo_change_set(ctx, "run-42")
    assert snapshot(ctx.root) == before


def test_a_note_edited_since_makes_undo_refuse_and_write_nothing(ctx: ToolContext) -> None:
    manage(ctx, **OPERATIONS["bulk_tag"])
    (ctx.root / "Daily.md").write_text("edited by hand\n", encoding="utf-8")
    edited = snapshot(ctx.root)
    with pytest.raises(StaleVersionError, match=r"Daily\.md.*--skip-changed"):
        undo_change_set(ctx, None)
    assert snapshot(ctx.root) == edited
    _, _, report = undo_change_set(ctx, None, skip_changed=True)
    assert report.skipped == ["Daily.md"]
    assert (ctx.root / "Daily.md").read_text(encoding="utf-8") == "edited by hand\n"
    assert (ctx.root / "Ideas.md").read_bytes() == NOTES["Ideas.md"].encode()


def test_unknown_id_and_empty_journal(ctx: ToolContext) -> None:
    with pytest.raises(NotFoundError, match="nothing to undo"):
        undo_change_set(ctx, None)
    manage(ctx, **OPERATIONS["edit"])
    with pytest.raises(NotFoundError, match=r"No change set 'nope'.*vaultpilot history"):
        undo_change_set(ctx, "nope")


def test_a_missing_blob_stops_undo_before_writing(ctx: ToolContext) -> None:
    manage(ctx, **OPERATIONS["bulk_tag"])
    assert ctx.journal is not None
    conn = sqlite3.connect(ctx.journal.path)
    conn.execute(
        "DELETE FROM journal_blobs WHERE hash = (SELECT hash_before FROM file_changes"
        " WHERE path_after = 'Projects/Plan.md')"
    )
    conn.commit()
    conn.close()
    changed = snapshot(ctx.root)
    with pytest.raises(StorageError, match=r"Projects/Plan\.md.*nothing was changed"):
        undo_change_set(ctx, None)
    assert snapshot(ctx.root) == changed


def test_blobs_are_deduplicated(ctx: ToolContext) -> None:
    manage(ctx, operation="update_note", target="Daily.md", content="A\n")
    manage(ctx, operation="update_note", target="Daily.md", content="B\n")
    manage(ctx, operation="update_note", target="Daily.md", content="A\n")
    assert ctx.journal is not None
    conn = sqlite3.connect(ctx.journal.path)
    blobs = conn.execute("SELECT COUNT(*) FROM journal_blobs").fetchone()[0]
    changes = conn.execute("SELECT COUNT(*) FROM file_changes").fetchone()[0]
    conn.close()
    assert (changes, blobs) == (3, 3)  # the original, "A\n" and "B\n": each stored once


def test_no_journal_records_nothing(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    c = open_context(root, tmp_path / "index.db")
    try:
        assert c.journal is None
        manage(c, operation="create_note", target="A.md", content="a")
        with pytest.raises(SetupError, match="no change journal"):
            undo_change_set(c, None)
    finally:
        c.conn.close()
    assert not (tmp_path / "memory.db").exists()


def test_a_delete_to_the_system_trash_is_undone(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (ctx.root / ".obsidian").mkdir()
    (ctx.root / ".obsidian" / "app.json").write_text('{"trashOption": "system"}')
    before = snapshot(ctx.root)
    manage(ctx, operation="delete_note", target="Old/Notes.md", confirmDestructive=True)
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    bin_ = tmp_path / "xdg" / "Trash"
    assert (bin_ / "files" / "Notes.md").exists() and (bin_ / "files" / "Old").is_dir()
    assert ctx.journal is not None
    folder_set, note_set = ctx.journal.change_sets(str(ctx.root))[:2]
    undo_change_set(ctx, folder_set.id)
    undo_change_set(ctx, note_set.id)
    assert snapshot(ctx.root) == before
    assert list((bin_ / "files").iterdir()) == [] and list((bin_ / "info").iterdir()) == []


def test_a_folder_delete_is_journaled_note_by_note(ctx: ToolContext) -> None:
    (ctx.root / "Old" / "scan.pdf").write_bytes(b"%PDF-1.4 binary")
    (ctx.root / "Old" / "Empty").mkdir()
    before = snapshot(ctx.root)
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    assert ctx.journal is not None
    cs = ctx.journal.get(str(ctx.root), ctx.journal.last_id(str(ctx.root)))
    # Each file is listed where it was, each note with its text; the folder goes unsaid.
    assert cs.paths() == ["Old/Deep/Leaf.md", "Old/Notes.md", "Old/scan.pdf"]
    notes = {c.path_before: c for c in cs.changes if c.path_before in NOTES}
    assert ctx.journal.blob(notes["Old/Notes.md"].hash_before or "", "Old/Notes.md") == (
        NOTES["Old/Notes.md"].encode()
    )
    assert notes["Old/Deep/Leaf.md"].path_after == ".trash/Old/Deep/Leaf.md"
    _, redo, report = undo_change_set(ctx, cs.id)
    assert snapshot(ctx.root) == before and not (ctx.root / ".trash").exists()
    assert sorted(report.put_back()) == ["Old", "Old/Deep/Leaf.md", "Old/Notes.md", "Old/scan.pdf"]
    assert redo is not None
    undo_change_set(ctx, redo)  # deleted again, whole, and back again
    assert not (ctx.root / "Old").exists()
    undo_change_set(ctx, None)
    assert snapshot(ctx.root) == before


def test_a_folder_delete_undone_around_a_note_made_again_since(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    manage(ctx, operation="delete_folder", target="Old", confirmDestructive=True, recursive=True)
    (ctx.root / "Old").mkdir()
    (ctx.root / "Old" / "Notes.md").write_text("written again\n")
    with pytest.raises(StaleVersionError, match=r"Old/Notes\.md"):
        undo_change_set(ctx, None)
    _, _, report = undo_change_set(ctx, None, skip_changed=True)
    assert "Old/Notes.md" in report.skipped
    assert (ctx.root / "Old" / "Notes.md").read_text() == "written again\n"
    now = snapshot(ctx.root)
    assert now["Old/Deep/Leaf.md"] == before["Old/Deep/Leaf.md"]


def _journal_full(ctx: ToolContext) -> None:
    """Fill the journal's database, as a full disk would: SQLite may add no page, and the free
    room left in its pages is taken."""
    assert ctx.journal is not None
    conn = ctx.journal._db()
    with conn:  # the set the filler rows of file_changes belong to
        conn.execute(
            "INSERT INTO change_sets VALUES ('filler', 'elsewhere', 'cli', NULL, '', NULL, 0, 0)"
        )
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    fillers = (
        "INSERT INTO journal_blobs (hash, data) VALUES (:id, zeroblob(:size))",
        "INSERT INTO change_sets (id, vault, source, run_id, summary, undo_of, created_at,"
        " updated_at) VALUES (:id, '', '', NULL, substr(hex(zeroblob(:size)), 1, :size), NULL,"
        " 0, 0)",
        "INSERT INTO file_changes (set_id, seq, operation, kind, path_before, path_after,"
        " hash_before, hash_after, created_at) VALUES ('filler', random(), '', 'mkdir', NULL,"
        " substr(hex(zeroblob(:size)), 1, :size), NULL, NULL, 0)",
    )
    for statement in fillers:
        size = 4096
        while size >= 1:
            try:
                with conn:
                    conn.execute(statement, {"id": os.urandom(8).hex(), "size": size})
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc)
                size //= 2


@pytest.mark.parametrize("kind", sorted(OPERATIONS))
def test_a_change_the_journal_cannot_record_is_not_made(
    ctx: ToolContext, kind: str, tmp_path: Path
) -> None:
    manage(ctx, operation="append_note", target="Daily.md", content="warm up")  # pages in use
    before = snapshot(ctx.root)
    _journal_full(ctx)
    result = call_tool(ctx, "obsidian_vault_manager", OPERATIONS[kind])
    assert not result["success"]
    assert result["message"].startswith("Nothing was changed: the change could not be recorded")
    assert "full" in result["message"]
    assert snapshot(ctx.root) == before
    assert not (ctx.root / ".trash").exists() or not any((ctx.root / ".trash").rglob("*.md"))
    # The index followed the vault back: it holds what a rebuild gives.
    fresh = connect(tmp_path / "fresh" / "index.db")
    sync_vault(fresh, ctx.root, workers=1)
    assert dump(ctx.conn) == dump(fresh)
    fresh.close()


def test_an_undo_the_journal_cannot_record_is_not_made(ctx: ToolContext) -> None:
    manage(ctx, **OPERATIONS["move_note"])
    after = snapshot(ctx.root)
    _journal_full(ctx)
    with pytest.raises(StorageError, match=r"^Nothing was changed"):
        undo_change_set(ctx, None)
    assert snapshot(ctx.root) == after


# --- undone sets, nothing left to undo, folders a set created (memory.undo's rules) -----------


def test_an_undone_set_is_refused_until_its_undo_is_undone(ctx: ToolContext) -> None:
    before = snapshot(ctx.root)
    manage(ctx, **OPERATIONS["bulk_tag"])
    assert ctx.journal is not None
    vault = str(ctx.root)
    target = ctx.journal.last_id(vault)
    _, first, _ = undo_change_set(ctx, target)
    assert first is not None and ctx.journal.get(vault, target).undone_by == first
    undoer = ctx.journal.undone_by(vault, target)
    assert undoer is not None and undoer.id == first
    for skip in (False, True):
        with pytest.raises(InvalidArgumentError) as refused:
            undo_change_set(ctx, target, skip_changed=skip)
        message = refused.value.message
        assert f"Change set {target} was already undone by {first} at {undoer.when}" in message
        assert "nothing to do" in message and "skip-changed" not in message
    assert snapshot(ctx.root) == before
    # The undo undone (a redo): the set stands again; undoing it again is a new undo.
    _, redo, _ = undo_change_set(ctx, first)
    assert ctx.journal.get(vault, target).undone_by is None
    assert ctx.journal.get(vault, first).undone_by == redo
    _, second, _ = undo_change_set(ctx, target)
    assert snapshot(ctx.root) == before
    assert ctx.journal.get(vault, target).undone_by == second != first
    assert [s.undone_by for s in ctx.journal.change_sets(vault)] == [None, None, redo, second]


def test_nothing_left_to_undo_raises_and_records_nothing(ctx: ToolContext) -> None:
    manage(ctx, **OPERATIONS["edit"])
    (ctx.root / "Ideas.md").write_text("mine\n", encoding="utf-8")
    assert ctx.journal is not None
    count = len(ctx.journal.change_sets(str(ctx.root)))
    for skip in (False, True):
        with pytest.raises(StaleVersionError, match=r"nothing left to undo") as refused:
            undo_change_set(ctx, None, skip_changed=skip)
        assert "skip-changed" not in refused.value.message
    assert len(ctx.journal.change_sets(str(ctx.root))) == count
    assert (ctx.root / "Ideas.md").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize(
    "args",
    [
        {"operation": "move_note", "target": "Ideas.md", "destination": "New/Deeper/Ideas.md"},
        {"operation": "create_note", "target": "New/Deeper/Made.md", "content": "made\n"},
        {"operation": "move_folder", "target": "Old", "destination": "New/Deeper/Old"},
        {
            "operation": "bulk_move",
            "targets": ["Ideas.md", "Daily.md"],
            "destination": "New/Deeper",
        },
        {"operation": "create_folder", "target": "New/Deeper/Leaf"},
    ],
    ids=lambda a: str(a["operation"]),
)
def test_folders_a_set_created_go_with_its_undo_and_come_back_with_a_redo(
    ctx: ToolContext, args: dict[str, Any]
) -> None:
    before = snapshot(ctx.root)
    manage(ctx, **args)
    after = snapshot(ctx.root)
    assert after["New"] == after["New/Deeper"] == "dir"
    _, undo_id, report = undo_change_set(ctx, None)
    assert "New" in report.removed and "New/Deeper" in report.removed
    assert snapshot(ctx.root) == before  # no empty New/ or New/Deeper/ left behind
    assert not any(p.startswith(".trash/New") for p in _trash(ctx.root))  # removed, not binned
    assert undo_id is not None
    undo_change_set(ctx, undo_id)
    assert snapshot(ctx.root) == after


def test_undo_keeps_a_created_folder_now_holding_something_and_one_that_existed(
    ctx: ToolContext,
) -> None:
    (ctx.root / "Empty").mkdir()
    manage(ctx, operation="move_note", target="Ideas.md", destination="Empty/Ideas.md")
    manage(ctx, operation="move_note", target="Daily.md", destination="Made/Daily.md")
    (ctx.root / "Made" / "mine.md").write_text("mine\n", encoding="utf-8")
    _, _, report = undo_change_set(ctx, None)
    assert report.removed == [] and (ctx.root / "Made" / "mine.md").is_file()
    assert ctx.journal is not None
    first = ctx.journal.change_sets(str(ctx.root))[-1]
    assert first.summary == "move_note" and first.paths()[0] == "Empty/Ideas.md"
    _, _, report = undo_change_set(ctx, first.id)
    assert report.removed == [] and (ctx.root / "Empty").is_dir()  # existed before the move
    assert (ctx.root / "Ideas.md").is_file()


def test_a_set_that_only_created_a_folder_now_used_is_not_a_success(ctx: ToolContext) -> None:
    manage(ctx, operation="create_folder", target="Fresh")
    (ctx.root / "Fresh" / "mine.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(StaleVersionError, match="the folders it created now hold other files"):
        undo_change_set(ctx, None)
    assert (ctx.root / "Fresh" / "mine.md").is_file()


def _trash(root: Path) -> list[str]:
    return (
        [p.relative_to(root).as_posix() for p in (root / ".trash").rglob("*")]
        if (root / ".trash").exists()
        else []
    )
