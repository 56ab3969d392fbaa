"""dryRun: the unified diff of each file a write would change, and not one byte written."""

from __future__ import annotations

import hashlib
from pathlib import Path

from vaultpilot.tools import ToolContext
from vaultpilot.tools.manage import preview
from vaultpilot.tools.models import VaultManagerParams

from .conftest import manage, write


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_dry_runs_write_nothing(ctx: ToolContext) -> None:
    write(ctx.root, "Plan.md", "# Plan\n\n## Tasks\n- [ ] one\n")
    before = _hashes(ctx.root)
    calls = [
        {"operation": "create_note", "target": "New/Idea.md", "content": "# Idea\n"},
        {"operation": "update_note", "target": "Plan.md", "content": "# Plan\nall new\n"},
        {"operation": "append_note", "target": "Plan.md", "content": "- [ ] two"},
        {"operation": "append_note", "target": "Daily/2025-11-13.md", "content": "- note"},
        {
            "operation": "edit_note",
            "target": "Plan.md",
            "edits": [{"oldText": "- [ ] one", "newText": "- [x] one"}],
        },
        {"operation": "edit_note", "target": "Plan.md", "heading": "Tasks", "content": "- b"},
    ]
    results = [manage(ctx, dryRun=True, **call) for call in calls]
    assert _hashes(ctx.root) == before
    assert all(r["success"] and r["dryRun"] for r in results), results
    edit = results[4]["diffs"][0]
    assert edit["path"] == "Plan.md" and edit["from"] == edit["to"] == "Plan.md"
    assert "--- a/Plan.md\n+++ b/Plan.md\n" in edit["diff"]
    assert "\n-- [ ] one\n+- [x] one\n" in edit["diff"]
    created = results[0]["diffs"][0]
    assert created["from"] is None and created["diff"].startswith(
        "--- /dev/null\n+++ b/New/Idea.md"
    )
    assert "Dry run, nothing written" in results[1]["message"]


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
    other = manage(
        ctx, operation="delete_note", target="Plan.md", confirmDestructive=True, dryRun=True
    )
    assert (
        other["success"] is False
        and "dryRun is not available for delete_note" in (other["message"])
    )
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
