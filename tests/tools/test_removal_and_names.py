"""What a delete says about the links into it, names differing only in case, where deletes go
(app.json ``trashOption``) and where a new note goes (``newFileLocation``)."""

from __future__ import annotations

import json
import shutil
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.tools import ToolContext, open_context

from .conftest import manage, write


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[ToolContext]:
    """A small vault of its own, with the app.json a test writes before opening it."""
    root = tmp_path / "bare"
    (root / ".obsidian").mkdir(parents=True)
    context = open_context(root, tmp_path / "bare-index" / "index.db")
    try:
        yield context
    finally:
        context.conn.close()


def _app(ctx: ToolContext, **settings: object) -> ToolContext:
    (ctx.root / ".obsidian" / "app.json").write_text(json.dumps(settings), encoding="utf-8")
    return open_context(ctx.root, ctx.root.parent / "bare-index" / "index.db")


def test_delete_says_a_link_now_leads_to_the_other_note_of_that_name(bare: ToolContext) -> None:
    write(bare.root, "X/Dup.md", "# X dup\n")
    write(bare.root, "Y/Dup.md", "# Y dup\n")
    write(bare.root, "X/L.md", "See [[Dup]].\n")
    write(bare.root, "Z/Only.md", "# only\n")
    write(bare.root, "Z/M.md", "See [[Only]].\n")
    preview = manage(
        bare, operation="delete_note", target="X/Dup.md", confirmDestructive=True, dryRun=True
    )
    assert preview["warnings"] == [
        "1 note links to it by a name that would then lead to 'Y/Dup.md' instead: X/L.md"
    ]
    result = manage(bare, operation="delete_note", target="X/Dup.md", confirmDestructive=True)
    (warning,) = result["warnings"]
    assert warning == ("1 note links to it by a name that now leads to 'Y/Dup.md' instead: X/L.md")
    gone = manage(bare, operation="delete_note", target="Z/Only.md", confirmDestructive=True)
    assert gone["warnings"] == ["1 note still links to it and now has an unresolved link: Z/M.md"]


@pytest.mark.parametrize(
    ("target", "destination"),
    [("Plugins/ink.md", "Folder"), ("Plugins/ink.md", "Folder/INK.md")],
)
def test_move_note_refuses_a_case_only_twin(
    bare: ToolContext, target: str, destination: str
) -> None:
    write(bare.root, "Plugins/ink.md", "# ink\n")
    write(bare.root, "Folder/Ink.md", "# Ink\n")
    for dry in (True, False):
        result = manage(
            bare, operation="move_note", target=target, destination=destination, dryRun=dry
        )
        assert result["success"] is False, result
        assert "'Folder/Ink.md' is already there" in result["message"]
        assert "differing only in case" in result["message"]
    assert (bare.root / "Plugins/ink.md").exists()


def test_renaming_a_note_to_its_own_name_in_another_case_is_allowed(bare: ToolContext) -> None:
    write(bare.root, "Plugins/ink.md", "# ink\n")
    result = manage(
        bare, operation="move_note", target="Plugins/ink.md", destination="Plugins/Ink.md"
    )
    assert result["success"], result
    assert sorted(p.name for p in (bare.root / "Plugins").iterdir()) == ["Ink.md"]


def test_move_folder_and_bulk_move_refuse_case_only_twins(bare: ToolContext) -> None:
    write(bare.root, "Src/Notes/a.md", "a\n")
    write(bare.root, "Archive/notes/b.md", "b\n")
    write(bare.root, "Loose/b.MD", "b\n")
    folder = manage(bare, operation="move_folder", target="Src/Notes", destination="Archive")
    assert folder["success"] is False and "'Archive/notes' is already there" in folder["message"]
    bulk = manage(bare, operation="bulk_move", targets=["Loose/b.MD"], destination="Archive/notes")
    assert bulk["success"] is False, bulk
    assert "differing only in case" in bulk["failures"][0]["reason"]
    assert (bare.root / "Src/Notes/a.md").exists() and (bare.root / "Loose/b.MD").exists()


def test_system_trash_when_app_json_asks_for_it(
    bare: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    ctx = _app(bare, trashOption="system")
    try:
        write(ctx.root, "Old.md", "# old\n")
        write(ctx.root, "Gone/a.md", "a\n")
        result = manage(ctx, operation="delete_note", target="Old.md", confirmDestructive=True)
        trashed = tmp_path / "xdg" / "Trash" / "files" / "Old.md"
        assert result["success"] and str(trashed) in result["message"], result
        assert trashed.read_text(encoding="utf-8") == "# old\n"
        info = (tmp_path / "xdg" / "Trash" / "info" / "Old.md.trashinfo").read_text()
        assert info.startswith("[Trash Info]\nPath=") and "Old.md" in info
        assert not (ctx.root / ".trash").exists()
        folder = manage(
            ctx, operation="delete_folder", target="Gone", confirmDestructive=True, recursive=True
        )
        assert (
            folder["success"] and (tmp_path / "xdg" / "Trash" / "files" / "Gone" / "a.md").exists()
        )
        write(ctx.root, "Old.md", "# old again\n")
        again = manage(ctx, operation="delete_note", target="Old.md", confirmDestructive=True)
        assert (tmp_path / "xdg" / "Trash" / "files" / "Old 1.md").exists(), again
    finally:
        ctx.conn.close()


@pytest.mark.parametrize(("option", "note"), [("local", None), ("none", "kept it in .trash/")])
def test_local_trash(bare: ToolContext, option: str, note: str | None) -> None:
    ctx = _app(bare, trashOption=option)
    try:
        write(ctx.root, "Old.md", "# old\n")
        result = manage(ctx, operation="delete_note", target="Old.md", confirmDestructive=True)
        assert (ctx.root / ".trash" / "Old.md").exists(), result
        assert (note is None) == ("warnings" not in result), result
    finally:
        ctx.conn.close()


def test_new_notes_go_where_app_json_says(bare: ToolContext) -> None:
    ctx = _app(bare, newFileLocation="folder", newFileFolderPath="Inbox/New")
    try:
        write(ctx.root, "Top.md", "# top\n")
        made = manage(ctx, operation="create_note", target="Idea", content="# Idea\n")
        assert made["affectedPaths"] == ["Inbox/New/Idea.md"], made
        kept = manage(ctx, operation="create_note", target="Projects/Plan.md", content="x")
        assert kept["affectedPaths"] == ["Projects/Plan.md"]
        root = manage(ctx, operation="create_note", target="./Root note", content="x")
        assert root["affectedPaths"] == ["Root note.md"]
        existing = manage(ctx, operation="create_note", target="Top.md", content="x")
        assert existing["success"] is False and "already exists" in existing["message"]
    finally:
        ctx.conn.close()
    plain = _app(bare, newFileLocation="root", newFileFolderPath="Inbox")
    try:
        made = manage(plain, operation="create_note", target="Plain", content="x")
        assert made["affectedPaths"] == ["Plain.md"]
    finally:
        plain.conn.close()


def test_a_system_trash_on_another_disk_falls_back_to_dot_trash(
    bare: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system (/dev/shm) to put the system trash on")
    xdg = shm / f"vaultpilot-test-{tmp_path.name}"
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    ctx = _app(bare, trashOption="system")
    try:
        write(ctx.root, "Old.md", "# old\n")
        result = manage(ctx, operation="delete_note", target="Old.md", confirmDestructive=True)
        assert (ctx.root / ".trash" / "Old.md").exists(), result
        assert result["warnings"] == [
            "The system trash is on another disk than the vault, so it went to .trash/."
        ]
    finally:
        ctx.conn.close()
        shutil.rmtree(xdg, ignore_errors=True)


def test_a_new_name_twin_of_another_in_case_or_accents_is_refused(bare: ToolContext) -> None:
    write(bare.root, "Recipes/Crème Brûlée.md", "# NFC\n")
    write(bare.root, "Home.md", "# home\n")
    nfd = unicodedata.normalize("NFD", "Recipes/Crème Brûlée.md")
    for target, twin in [
        ("home.md", "Home.md"),
        ("Home.MD", "Home.md"),
        (nfd, "Recipes/Crème Brûlée.md"),
        ("recipes/New.md", "Recipes"),  # a folder on the way, in another case
        ("RECIPES/deeper/New.md", "Recipes"),
    ]:
        for dry in (True, False):
            made = manage(bare, operation="create_note", target=target, content="x", dryRun=dry)
            assert made["success"] is False, (target, made)
            assert f"'{twin}' is already there" in made["message"]
    folder = manage(bare, operation="create_folder", target="recipes")
    assert folder["success"] is False and "'Recipes' is already there" in folder["message"]
    moved = manage(bare, operation="move_note", target="Home.md", destination="recipes")
    assert moved["success"] is False and "'Recipes' is already there" in moved["message"]
    assert sorted(p.name for p in bare.root.iterdir() if p.name != ".obsidian") == [
        "Home.md",
        "Recipes",
    ]
    assert [p.name for p in (bare.root / "Recipes").iterdir()] == ["Crème Brûlée.md"]
    # The note's own folder, in its own case, takes new notes as before.
    assert manage(bare, operation="create_note", target="Recipes/New.md", content="x")["success"]


def test_a_new_name_links_could_not_reach_is_refused(bare: ToolContext) -> None:
    for target in ("Inbox/C#.md", "Inbox/a^b.md", "Inbox/a[b].md", "Topics#/x.md"):
        made = manage(bare, operation="create_note", target=target, content="x")
        assert made["success"] is False and "Choose a name without # ^ [ ]" in made["message"]
    assert not (bare.root / "Inbox").exists() and not (bare.root / "Topics#").exists()
    # A note the person named so is moved with its name; it is not renamed to one.
    write(bare.root, "Langs/C#.md", "# C sharp\n")
    write(bare.root, "Langs/Go.md", "# Go\n")
    assert manage(bare, operation="move_note", target="Langs/C#.md", destination="Archive")[
        "success"
    ]
    renamed = manage(bare, operation="move_note", target="Langs/Go.md", destination="Langs/G#.md")
    assert renamed["success"] is False and "#" in renamed["message"]


def test_a_new_name_with_an_invisible_character_is_refused(bare: ToolContext) -> None:
    """A right-to-left override reverses how a name reads in lists and approval cards; a
    zero-width space makes a twin of another name."""
    for target in ("Inbox/\u202etroper.md", "Inbox\u200b.md", "Folder\u2066x/a.md"):
        made = manage(bare, operation="create_note", target=target, content="x")
        assert made["success"] is False and "invisible character" in made["message"], made
    write(bare.root, "Report.md", "# Report\n")
    renamed = manage(
        bare, operation="move_note", target="Report.md", destination="Archive/\u202etroper.md"
    )
    assert renamed["success"] is False and "U+202E" in renamed["message"]
    assert (bare.root / "Report.md").exists() and not (bare.root / "Archive").exists()


def test_a_refused_create_leaves_no_folders_behind(bare: ToolContext) -> None:
    made = manage(bare, operation="create_note", target=f"New/Sub/{'n' * 300}.md", content="x")
    assert made["success"] is False, made
    assert not (bare.root / "New").exists()


def test_moving_a_note_that_is_not_text_says_it_moved(bare: ToolContext) -> None:
    (bare.root / "Bad.md").write_bytes(b"caf\xe9 au lait\n")
    moved = manage(bare, operation="move_note", target="Bad.md", destination="Archive")
    assert moved["success"] is True, moved
    assert "version" not in moved
    assert (bare.root / "Archive" / "Bad.md").read_bytes() == b"caf\xe9 au lait\n"


def test_a_note_that_is_a_symbolic_link_is_named_as_one(bare: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n", encoding="utf-8")
    (bare.root / "linknote.md").symlink_to(outside)
    calls: list[dict[str, Any]] = [
        {"operation": "append_note", "content": "x"},
        {"operation": "update_note", "content": "x"},
        {"operation": "delete_note", "confirmDestructive": True},
    ]
    for call in calls:
        done = manage(bare, target="linknote.md", **call)
        assert done["success"] is False and "is a symbolic link" in done["message"], done
        assert str(outside) not in done["message"]
    assert outside.read_text(encoding="utf-8") == "secret\n"
