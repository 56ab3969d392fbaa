"""edit_note: exact replacements, all or none, misses explained; heading and block sections."""

from __future__ import annotations

from pathlib import Path

from vaultpilot.tools import ToolContext

from .conftest import manage, write

NOTE = """---
status: draft
---
# Plan

Intro line.

## Tasks
- [ ] buy seeds
- [ ] water beds ^water

## Notes
status: draft in prose
Done later.
"""


def _note(ctx: ToolContext) -> Path:
    return write(ctx.root, "Plan.md", NOTE)


def _refused(result: dict[str, object], *parts: str) -> None:
    assert result["success"] is False, result
    for part in parts:
        assert part in str(result["message"]), result["message"]


def test_edits_apply_together(ctx: ToolContext) -> None:
    path = _note(ctx)
    result = manage(
        ctx,
        operation="edit_note",
        target="Plan",
        edits=[
            {"oldText": "- [ ] buy seeds", "newText": "- [x] buy seeds"},
            {"oldText": "Intro line.", "newText": "Intro line, revised."},
        ],
    )
    assert result["success"] and result["affectedPaths"] == ["Plan.md"], result
    expected = NOTE.replace("- [ ] buy seeds", "- [x] buy seeds").replace(
        "Intro line.", "Intro line, revised."
    )
    assert path.read_text(encoding="utf-8") == expected
    assert len(result["version"]) == 16


def test_replace_all_and_crlf_kept(ctx: ToolContext) -> None:
    path = write(ctx.root, "Win.md", NOTE.replace("\n", "\r\n"))
    manage(
        ctx,
        operation="edit_note",
        target="Win.md",
        edits=[{"oldText": "status: draft", "newText": "status: done", "replaceAll": True}],
    )
    assert path.read_bytes() == NOTE.replace("status: draft", "status: done").replace(
        "\n", "\r\n"
    ).encode("utf-8")


def test_misses_change_nothing_and_explain(ctx: ToolContext) -> None:
    path = _note(ctx)
    ok = {"oldText": "Intro line.", "newText": "X"}
    cases = [
        (
            [ok, {"oldText": "- [ ] buy sedes", "newText": "y"}],
            ["'Plan.md' was not changed", "Edit 2", "matches 0 times", "line 9: '- [ ] buy seeds'"],
        ),
        (
            [{"oldText": "status: draft", "newText": "y"}],
            ["matches 2 times (lines 2, 13)", "replaceAll=true"],
        ),
        ([{"oldText": "", "newText": "y"}], ["Edit 1 has an empty oldText"]),
        (
            [ok, {"oldText": "line.\n\n## Tasks", "newText": "z"}],
            ["Edits 1 and 2 overlap", "line 6"],
        ),
        ([], ["needs 'edits'"]),
    ]
    for edits, parts in cases:
        _refused(manage(ctx, operation="edit_note", target="Plan.md", edits=edits), *parts)
    assert path.read_text(encoding="utf-8") == NOTE


def test_heading_section_end_and_replace(ctx: ToolContext) -> None:
    path = _note(ctx)
    manage(ctx, operation="edit_note", target="Plan.md", heading="Tasks", content="- [ ] weed")
    assert path.read_text(encoding="utf-8") == NOTE.replace(
        "beds ^water\n", "beds ^water\n- [ ] weed\n"
    )
    manage(
        ctx,
        operation="edit_note",
        target="Plan.md",
        heading="## Notes",
        content="Rewritten.\n",
        position="replace",
    )
    assert path.read_text(encoding="utf-8").endswith("## Notes\nRewritten.\n")


def test_heading_missing_or_ambiguous(ctx: ToolContext) -> None:
    path = write(ctx.root, "Twice.md", "# A\n## X\none\n## X\ntwo\n")
    _refused(
        manage(ctx, operation="edit_note", target="Twice.md", heading="Y", content="z"),
        "no heading 'Y'",
        "'A', 'X', 'X'",
    )
    _refused(
        manage(ctx, operation="edit_note", target="Twice.md", heading="X", content="z"),
        "ambiguous: 2 headings have it (lines 2, 4)",
    )
    _refused(manage(ctx, operation="edit_note", target="Twice.md", heading="X"), "needs 'content'")
    assert path.read_text(encoding="utf-8") == "# A\n## X\none\n## X\ntwo\n"


def test_block_id_replace_keeps_the_id(ctx: ToolContext) -> None:
    path = _note(ctx)
    manage(
        ctx,
        operation="edit_note",
        target="Plan.md",
        blockId="^water",
        content="- [x] water beds",
        position="replace",
    )
    assert "- [x] water beds ^water\n\n## Notes" in path.read_text(encoding="utf-8")
    _refused(
        manage(ctx, operation="edit_note", target="Plan.md", blockId="nope", content="x"),
        "no block has the id ^nope",
    )


def test_stale_version_refused(ctx: ToolContext) -> None:
    path = _note(ctx)
    result = manage(
        ctx,
        operation="edit_note",
        target="Plan.md",
        expectedVersion="0" * 16,
        edits=[{"oldText": "Intro line.", "newText": "X"}],
    )
    _refused(result, "changed since you read it")
    assert path.read_text(encoding="utf-8") == NOTE
