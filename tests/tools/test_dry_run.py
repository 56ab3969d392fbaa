"""dryRun: the unified diff of each file a write would change, and not one byte written; and the
per-file approval (``approvedFiles``) that applies only some files of a multi-file change."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.tools import ToolContext
from vaultpilot.tools.manage import DRY_RUN_OPERATIONS, preview
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.operations import MANAGER_OPERATIONS

from .conftest import manage, write


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _links(ctx: ToolContext) -> None:
    write(ctx.root, "Src/Moved.md", "# Moved\n\nSee [[Src/Kept]].\n")
    write(ctx.root, "Src/Kept.md", "# Kept\n")
    write(ctx.root, "Src/Pic.png", "not really a picture")
    write(ctx.root, "Links A.md", "# A\n\n- [[Src/Moved]]\n- [[Src/Kept|kept]]\n")
    write(ctx.root, "Links B.md", "# B\n\nAlso [[Src/Moved#Moved]].\n")


# Every write operation, each as a dry run (the keys are the operations).
CALLS: dict[str, dict[str, Any]] = {
    "create_note": {"target": "New/Idea.md", "content": "# Idea\n"},
    "update_note": {"target": "Plan.md", "content": "# Plan\nall new\n"},
    "append_note": {"target": "Plan.md", "content": "- [ ] two"},
    "edit_note": {"target": "Plan.md", "edits": [{"oldText": "- [ ] one", "newText": "- [x] one"}]},
    "delete_note": {"target": "Plan.md", "confirmDestructive": True},
    "move_note": {"target": "Src/Moved.md", "destination": "Archive"},
    "create_folder": {"target": "Fresh/Folder"},
    "delete_folder": {"target": "Src", "confirmDestructive": True, "recursive": True},
    "move_folder": {"target": "Src", "destination": "Renamed"},
    "bulk_tag": {"targets": ["Plan.md", "Links A.md"], "metadata": {"tags": ["reviewed"]}},
    "bulk_move": {"targets": ["Plan.md", "Src/Moved.md"], "destination": "Archive"},
    "bulk_update_metadata": {"targets": ["Plan.md", "Links B.md"], "metadataChanges": {"s": 1}},
}


def test_every_write_operation_takes_dry_run() -> None:
    writes = {name for name, op in MANAGER_OPERATIONS.items() if op.writes}
    assert writes == set(CALLS) == set(DRY_RUN_OPERATIONS)


@pytest.mark.parametrize("operation", sorted(CALLS))
def test_dry_runs_write_nothing(ctx: ToolContext, operation: str) -> None:
    write(ctx.root, "Plan.md", "# Plan\n\n## Tasks\n- [ ] one\n")
    _links(ctx)
    before = _hashes(ctx.root)
    result = manage(ctx, operation=operation, dryRun=True, **CALLS[operation])
    assert _hashes(ctx.root) == before
    assert result["success"] and result["dryRun"], result
    assert "Dry run, nothing written" in result["message"]
    if operation != "create_folder":
        assert result["diffs"], result
    for d in result["diffs"]:
        assert d["diff"].startswith(("--- a/", "--- /dev/null")), d


def test_move_dry_run_shows_the_link_rewrites_in_other_notes(ctx: ToolContext) -> None:
    _links(ctx)
    result = manage(ctx, operation="move_note", dryRun=True, **CALLS["move_note"])
    diffs = {d["path"]: d for d in result["diffs"]}
    assert set(diffs) == {"Archive/Moved.md", "Links A.md", "Links B.md"}
    moved = diffs["Archive/Moved.md"]
    assert (moved["from"], moved["to"]) == ("Src/Moved.md", "Archive/Moved.md")
    assert moved["diff"].startswith("--- a/Src/Moved.md\n+++ b/Archive/Moved.md\n")
    assert "-- [[Src/Moved]]\n+- [[Moved]]\n" in diffs["Links A.md"]["diff"]
    # The dry run says exactly what the move then writes.
    planned = {
        p: diffs[p]["diff"].splitlines()[-1][1:] for p in ("Links B.md",)
    }  # the last "+" line of the diff
    manage(ctx, operation="move_note", **CALLS["move_note"])
    assert planned["Links B.md"] in (ctx.root / "Links B.md").read_text(encoding="utf-8")


def test_folder_dry_runs_list_every_file(ctx: ToolContext) -> None:
    _links(ctx)
    moved = manage(ctx, operation="move_folder", dryRun=True, **CALLS["move_folder"])
    paths = {d["path"] for d in moved["diffs"]}
    assert {"Renamed/Moved.md", "Renamed/Kept.md", "Renamed/Pic.png"} <= paths
    assert {"Links A.md", "Links B.md"} <= paths
    gone = manage(ctx, operation="delete_folder", dryRun=True, **CALLS["delete_folder"])
    removed = {d["path"]: d for d in gone["diffs"]}
    assert set(removed) == {"Src/Moved.md", "Src/Kept.md", "Src/Pic.png"}
    assert removed["Src/Kept.md"]["to"] is None and "-# Kept\n" in removed["Src/Kept.md"]["diff"]
    assert any("unresolved links" in w for w in gone["warnings"])


def test_dry_run_reports_the_operations_errors(ctx: ToolContext) -> None:
    write(ctx.root, "Plan.md", "# Plan\n")
    before = _hashes(ctx.root)
    miss = manage(
        ctx,
        operation="edit_note",
        target="Plan.md",
        dryRun=True,
        edits=[{"oldText": "nope", "newText": "x"}],
    )
    assert miss["success"] is False and "matches 0 times" in miss["message"]
    exists = manage(ctx, operation="create_note", target="Plan.md", dryRun=True)
    assert exists["success"] is False and "already exists" in exists["message"]
    unconfirmed = manage(ctx, operation="delete_note", target="Plan.md", dryRun=True)
    assert unconfirmed["success"] is False and "confirmDestructive" in unconfirmed["message"]
    taken = manage(ctx, operation="move_note", target="Plan.md", destination="Home.md", dryRun=True)
    assert taken["success"] is False and "already exists" in taken["message"]
    assert _hashes(ctx.root) == before


def test_preview_function(ctx: ToolContext) -> None:
    write(ctx.root, "Plan.md", "# Plan\nold\n")
    params = VaultManagerParams.model_validate(
        {
            "operation": "edit_note",
            "target": "Plan",
            "edits": [{"oldText": "old", "newText": "new"}],
        }
    )
    (diff,) = preview(ctx, params)
    assert diff.path == "Plan.md" and "-old\n+new\n" in diff.diff
    assert (ctx.root / "Plan.md").read_text(encoding="utf-8") == "# Plan\nold\n"


def test_approved_files_are_not_in_the_models_schema() -> None:
    from vaultpilot.tools import get_tool

    props = get_tool("obsidian_vault_manager").schema()["properties"]
    assert "approvedFiles" not in props and "approved_files" not in props


# --- per-file approval ---------------------------------------------------------------------------


def test_bulk_tag_changes_only_the_approved_notes(ctx: ToolContext) -> None:
    write(ctx.root, "Plan.md", "# Plan\n")
    _links(ctx)
    result = manage(ctx, operation="bulk_tag", approvedFiles=["Links A.md"], **CALLS["bulk_tag"])
    assert result["success"] and result["affectedPaths"] == ["Links A.md"], result
    assert "tags:\n  - reviewed" in (ctx.root / "Links A.md").read_text(encoding="utf-8")
    assert (ctx.root / "Plan.md").read_text(encoding="utf-8") == "# Plan\n"
    assert any("left as it was (not approved): Plan.md" in w for w in result["warnings"])


def test_a_move_with_refused_link_rewrites_still_moves(ctx: ToolContext) -> None:
    _links(ctx)
    before_b = (ctx.root / "Links B.md").read_text(encoding="utf-8")
    result = manage(
        ctx, operation="move_note", approvedFiles=["Archive/Moved.md", "Links A.md"],
        **CALLS["move_note"],
    )  # fmt: skip
    assert result["success"], result
    assert (ctx.root / "Archive/Moved.md").exists() and not (ctx.root / "Src/Moved.md").exists()
    assert "- [[Moved]]\n" in (ctx.root / "Links A.md").read_text(encoding="utf-8")
    assert (ctx.root / "Links B.md").read_text(encoding="utf-8") == before_b
    assert "links in 1 note were left unchanged" in result["message"]
    assert any("not approved" in w and "Links B.md" in w for w in result["warnings"])


def test_bulk_move_moves_only_the_approved_notes(ctx: ToolContext) -> None:
    write(ctx.root, "Plan.md", "# Plan\n")
    _links(ctx)
    result = manage(
        ctx, operation="bulk_move", approvedFiles=["Archive/Plan.md"], **CALLS["bulk_move"]
    )
    assert result["success"] and result["affectedPaths"] == ["Archive/Plan.md"], result
    assert (ctx.root / "Src/Moved.md").exists()


@pytest.mark.parametrize(
    ("operation", "files", "expected"),
    [
        ("bulk_tag", ["Links A.md", "Nowhere.md"], "does not change; it changes"),
        ("move_note", ["Links A.md"], "The move of 'Src/Moved.md' to 'Archive/Moved.md' itself"),
        ("move_folder", ["Links A.md"], "A folder moves whole"),
        ("delete_note", [], "No file of this delete_note was approved"),
        ("update_note", ["Other.md"], "does not change; it changes Plan.md"),
    ],
)
def test_bad_approved_subsets_change_nothing(
    ctx: ToolContext, operation: str, files: list[str], expected: str
) -> None:
    write(ctx.root, "Plan.md", "# Plan\n\n## Tasks\n- [ ] one\n")
    _links(ctx)
    before = _hashes(ctx.root)
    result = manage(ctx, operation=operation, approvedFiles=files, **CALLS[operation])
    assert result["success"] is False and expected in result["message"], result
    assert _hashes(ctx.root) == before
