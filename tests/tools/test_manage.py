"""obsidian_vault_manager, single-note and folder operations: effects, safety, and every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from vaultpilot.tools import ToolContext, is_error

from .conftest import manage, query, read, write

FAIL_KEYS = {"success", "operation", "affectedCount", "affectedPaths", "message"}


def refused(result: dict[str, object], message: str) -> None:
    assert result["success"] is False and set(result) == FAIL_KEYS, result
    assert result["affectedCount"] == 0 and result["affectedPaths"] == []
    assert message in str(result["message"]), result["message"]


# --- create_note ---------------------------------------------------------------------------------


def test_create_is_searchable_at_once(ctx: ToolContext) -> None:
    result = manage(ctx, operation="create_note", target="Ideas/Zeppelin", content="# Zeppelin\n")
    assert result["affectedPaths"] == ["Ideas/Zeppelin.md"] and len(result["version"]) == 16
    found = query(ctx, queryType="semantic_search", query="zeppelin")
    assert [r["path"] for r in found["results"]] == ["Ideas/Zeppelin.md"]


def test_create_merges_metadata_into_given_frontmatter(ctx: ToolContext) -> None:
    manage(
        ctx,
        operation="create_note",
        target="Merged.md",
        content="---\ntags: [a]  # keep\nstatus: x\n---\nBody\n",
        metadata={"tags": ["b"], "status": "y", "due": "2025-12-01"},
    )
    # A bare name goes where the vault's app.json puts new notes (newFileFolderPath: Inbox).
    assert (ctx.root / "Inbox/Merged.md").read_text(encoding="utf-8") == (
        "---\ntags: [a, b]  # keep\nstatus: y\ndue: 2025-12-01\n---\nBody\n"
    )


def test_create_refusals(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="create_note", target="Projects/Q1/note.md", createFolders=False),
        "Cannot create note at 'Projects/Q1/note.md': folder 'Projects/Q1' doesn't exist. Set "
        "createFolders=true to automatically create missing folders, or use "
        "operation='create_folder' first.",
    )
    refused(manage(ctx, operation="create_note", target="Home.md"), "'Home.md' already exists.")
    refused(manage(ctx, operation="create_note", target=".obsidian/x.md"), "never change")
    refused(manage(ctx, operation="create_note", target="../out.md"), "contains '..'")
    refused(manage(ctx, operation="create_note"), "needs 'target'")


def test_create_with_a_duplicate_name_keeps_old_links(ctx: ToolContext) -> None:
    result = manage(ctx, operation="create_note", target="Daily/Overview.md", content="# New\n")
    assert "Another note has the same name" in result["warnings"][0]
    daily = (ctx.root / "Daily/2025-10-21.md").read_text(encoding="utf-8")
    assert "garden [[Projects/Garden/Overview]]" in daily  # it meant the garden, and still does
    assert "Daily/2025-10-21.md" in result["affectedPaths"]


# --- update_note and append_note -----------------------------------------------------------------


def test_update_keeps_frontmatter_when_content_has_none(ctx: ToolContext) -> None:
    before = (ctx.root / "Recipes/Weeknight Dal.md").read_text(encoding="utf-8")
    fm_end = before.index("---\n", 4) + 4
    result = manage(ctx, operation="update_note", target="Weeknight Dal", content="# Dal\n\nNew.\n")
    assert result["success"] and "kept its own" in result["warnings"][0]
    assert (ctx.root / "Recipes/Weeknight Dal.md").read_text(encoding="utf-8") == (
        before[:fm_end] + "# Dal\n\nNew.\n"
    )
    manage(ctx, operation="update_note", target="Weeknight Dal", content="---\na: 1\n---\nX\n")
    assert (ctx.root / "Recipes/Weeknight Dal.md").read_text(
        encoding="utf-8"
    ) == "---\na: 1\n---\nX\n"


def test_update_metadata_only_touches_those_keys(ctx: ToolContext) -> None:
    path = ctx.root / "Projects/Database Migration.md"
    before = path.read_bytes()
    manage(
        ctx,
        operation="update_note",
        target="Projects/Database Migration.md",
        metadata={"status": "done", "done": None},
    )
    after = path.read_bytes()
    assert after == before.replace(b"status: in-progress\n", b"status: done\n").replace(
        b"done: false\n", b""
    )


def test_versions_guard_every_write(ctx: ToolContext) -> None:
    version = read(ctx, contextType="read_note", target="Inbox")["primaryNote"]["version"]
    write(ctx.root, "Inbox.md", (ctx.root / "Inbox.md").read_text(encoding="utf-8") + "edit\n")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("update_note", {"content": "x"}),
        ("append_note", {"content": "x"}),
        ("move_note", {"destination": "Archive"}),
        ("delete_note", {"confirmDestructive": True}),
    ]
    for op, extra in cases:
        result = manage(ctx, operation=op, target="Inbox.md", expectedVersion=version, **extra)
        refused(result, "changed since you read it")
        assert "Read the note again" in str(result["message"])
    assert (ctx.root / "Inbox.md").read_text(encoding="utf-8").endswith("edit\n")
    fresh = read(ctx, contextType="read_note", target="Inbox")["primaryNote"]["version"]
    ok = manage(
        ctx, operation="append_note", target="Inbox.md", content="more", expectedVersion=fresh
    )
    assert ok["success"] and ok["version"] != fresh
    again = read(ctx, contextType="read_note", target="Inbox")["primaryNote"]["version"]
    assert again == ok["version"]


def test_a_made_up_version_is_refused_as_not_a_version(ctx: ToolContext) -> None:
    before = (ctx.root / "Inbox.md").read_bytes()
    real = read(ctx, contextType="read_note", target="Inbox")["primaryNote"]["version"]
    for fake in ("deadbeef", real.upper(), real + "0", "v1", ""):
        for extra in ({}, {"dryRun": True}):
            result = manage(
                ctx,
                operation="append_note",
                target="Inbox.md",
                content="x",
                expectedVersion=fake,
                **extra,
            )
            refused(result, f"expectedVersion '{fake}' is not a note version")
            assert f"{len(real)}-character hex 'version'" in str(result["message"])
            assert "changed since" not in str(result["message"])
    # A well-formed version the note does not have is a change made since, as before.
    stale = manage(
        ctx,
        operation="append_note",
        target="Inbox.md",
        content="x",
        expectedVersion="0" * len(real),
    )
    refused(stale, "changed since you read it")
    assert (ctx.root / "Inbox.md").read_bytes() == before


def test_append_keeps_line_endings_and_separates(ctx: ToolContext) -> None:
    (ctx.root / "Crlf.md").write_bytes(b"\xef\xbb\xbf# Title\r\nline")
    manage(ctx, operation="append_note", target="Crlf.md", content="added\n")
    assert (ctx.root / "Crlf.md").read_bytes() == b"\xef\xbb\xbf# Title\r\nline\r\nadded\r\n"


def test_update_and_append_refusals(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="update_note", target="Nope.md", content="x"),
        "Note 'Nope.md' doesn't exist. Use operation='create_note'",
    )
    refused(
        manage(ctx, operation="append_note", target="Nope.md", content="x"), "nothing was appended"
    )
    refused(manage(ctx, operation="update_note", target="Inbox.md"), "needs 'content'")
    refused(manage(ctx, operation="update_note", target="Overview", content="x"), "matches 2 notes")
    same = manage(ctx, operation="update_note", target="Inbox.md", metadata={"zzz": None})
    assert same["success"] and same["affectedPaths"] == [] and "nothing changed" in same["message"]


# --- delete_note and move_note -------------------------------------------------------------------


def test_delete_goes_to_trash_and_warns_about_links(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="delete_note", target="Priya Raman"),
        "Invalid operation: delete_note requires confirmDestructive=true. This prevents "
        "accidental data loss. Set confirmDestructive=true to proceed.",
    )
    result = manage(ctx, operation="delete_note", target="Priya Raman", confirmDestructive=True)
    assert result["affectedPaths"] == ["People/Priya Raman.md"]
    assert (ctx.root / ".trash/Priya Raman.md").is_file()
    assert "still link to it" in result["warnings"][0]
    write(ctx.root, "People/Priya Raman.md", "# again\n")
    manage(ctx, operation="delete_note", target="People/Priya Raman.md", confirmDestructive=True)
    assert (ctx.root / ".trash/Priya Raman 1.md").read_text(encoding="utf-8") == "# again\n"
    gone = query(ctx, queryType="semantic_search", query="bouldering")
    assert "People/Priya Raman.md" not in [r["path"] for r in gone["results"]]


def test_move_note_refusals(ctx: ToolContext) -> None:
    refused(
        manage(
            ctx,
            operation="move_note",
            target="Inbox.md",
            destination="New/Place",
            createFolders=False,
        ),
        "folder 'New/Place' doesn't exist. Set createFolders=true",
    )
    refused(
        manage(ctx, operation="move_note", target="Inbox.md", destination="Home.md"),
        "already exists",
    )
    refused(manage(ctx, operation="move_note", target="Inbox.md"), "needs 'destination'")
    refused(
        manage(ctx, operation="move_note", target="Inbox.md", destination=".trash"), "never change"
    )
    moved = manage(
        ctx, operation="move_note", target="Inbox.md", destination="Archive/Inbox 2024.md"
    )
    assert moved["affectedPaths"][0] == "Archive/Inbox 2024.md"
    back = manage(ctx, operation="move_note", target="Archive/Inbox 2024.md", destination="/")
    assert back["affectedPaths"][0] == "Inbox 2024.md"


# --- folders -------------------------------------------------------------------------------------


def test_create_folder(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="create_folder", target="A/B/C", createFolders=False),
        "folder 'A/B' doesn't exist. Set createFolders=true",
    )
    assert manage(ctx, operation="create_folder", target="A/B/C")["affectedPaths"] == ["A/B/C"]
    again = manage(ctx, operation="create_folder", target="A/B/C")
    assert again["success"] and again["affectedCount"] == 0 and "already exists" in again["message"]
    refused(manage(ctx, operation="create_folder", target="x.md"), "looks like a note")


def test_delete_folder_needs_recursive_when_not_empty(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="delete_folder", target="Recipes"), "requires confirmDestructive=true"
    )
    refused(
        manage(ctx, operation="delete_folder", target="Recipes", confirmDestructive=True),
        "Folder 'Recipes' is not empty: it holds 3 notes. Set recursive=true",
    )
    assert (ctx.root / "Recipes").is_dir()
    result = manage(
        ctx, operation="delete_folder", target="Recipes", confirmDestructive=True, recursive=True
    )
    assert result["success"] and (ctx.root / ".trash/Recipes/Weeknight Dal.md").is_file()
    assert "(3 notes)" in result["message"] and "other file" not in result["message"]
    assert "link to notes that were in it" in result["warnings"][0]
    (ctx.root / "Empty").mkdir()
    empty = manage(ctx, operation="delete_folder", target="Empty", confirmDestructive=True)
    assert empty["success"] and (ctx.root / ".trash/Empty").is_dir()
    refused(
        manage(ctx, operation="delete_folder", target="", confirmDestructive=True), "needs 'target'"
    )
    refused(
        manage(ctx, operation="delete_folder", target="Home.md", confirmDestructive=True),
        "is a note",
    )


def test_move_folder_refusals_and_rename(ctx: ToolContext) -> None:
    refused(
        manage(ctx, operation="move_folder", target="Projects", destination="Projects/2025"),
        "into itself",
    )
    refused(
        manage(ctx, operation="move_folder", target="Projects", destination="/"),
        "Folder 'Projects' is already at the vault's top; give another destination.",
    )
    refused(
        manage(ctx, operation="move_folder", target="Nope", destination="Archive"), "doesn't exist"
    )
    refused(
        manage(
            ctx, operation="move_folder", target="Travel", destination="X/Y", createFolders=False
        ),
        "folder 'X' doesn't exist",
    )
    renamed = manage(ctx, operation="move_folder", target="Travel", destination="Trips")
    assert renamed["affectedPaths"][0] == "Trips" and (ctx.root / "Trips/Japan Trip.md").is_file()
    into = manage(ctx, operation="move_folder", target="Trips", destination="Archive")
    assert into["affectedPaths"][0] == "Archive/Trips"


# --- the call itself -----------------------------------------------------------------------------


def test_ignored_parameters_are_named(ctx: ToolContext) -> None:
    result = manage(ctx, operation="create_folder", target="Z", targets=["a.md"], content="x")
    assert result["warnings"] == ["Ignored for create_folder: targets, content."]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"operation": "rename_note"},
            "unknown operation 'rename_note'; valid values: 'create_note'",
        ),
        (
            {"operation": "create_note", "path": "x.md"},
            "unknown parameter 'path' (valid parameters:",
        ),
        ({"operation": "bulk_tag", "targets": "a.md"}, "'targets': Input should be a valid list"),
        ({}, "'operation' is required"),
    ],
)
def test_bad_calls_are_explained(ctx: ToolContext, args: dict[str, object], message: str) -> None:
    result = manage(ctx, **args)
    assert is_error(result) and message in str(result["message"]), result
