"""Bulk operations: per-note failures, partial success, and never a byte outside the frontmatter."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultpilot.tools import ToolContext, open_context
from vaultpilot.vault.frontmatter import split_frontmatter

from .conftest import NOW, manage, query, write


def props(ctx: ToolContext, rel: str) -> dict[str, Any]:
    return split_frontmatter((ctx.root / rel).read_text(encoding="utf-8")).properties


def test_bulk_tag_adds_and_removes(ctx: ToolContext) -> None:
    targets = ["Recipes/Weeknight Dal.md", "Sourdough Starter", "Recipes/Crème Brûlée.md"]
    added = manage(ctx, operation="bulk_tag", targets=targets, metadata={"tags": ["#tried", "fav"]})
    assert added["success"] and added["partialSuccess"] is False and added["affectedCount"] == 3
    assert props(ctx, "Recipes/Weeknight Dal.md")["tags"] == ["recipe", "tried", "fav"]
    found = query(ctx, queryType="search_by_metadata", filters={"tags": ["tried"]}, limit=10)
    assert found["totalFound"] == 3  # the index saw the change at once
    (ctx.root / "Recipes/Weeknight Dal.md").write_text(
        (ctx.root / "Recipes/Weeknight Dal.md").read_text(encoding="utf-8") + "\nA #fav one.\n",
        encoding="utf-8",
    )
    removed = manage(ctx, operation="bulk_tag", targets=targets, metadata={"removeTags": ["FAV"]})
    assert removed["affectedCount"] == 3
    assert "fav" not in props(ctx, "Recipes/Sourdough Starter.md")["tags"]
    assert (
        "The removed tag is still written in the text of 1 note (Recipes/Weeknight Dal.md)"
        in (removed["warnings"][-1])
    )
    again = manage(ctx, operation="bulk_tag", targets=targets[:1], metadata={"tags": ["tried"]})
    assert again["affectedCount"] == 0 and "already matched" in again["warnings"][0]


def test_bulk_tag_partial_success(ctx: ToolContext) -> None:
    result = manage(
        ctx,
        operation="bulk_tag",
        targets=["note1.md", "Inbox.md", "Blameless Postmortems", "Home.md", "Overview"],
        metadata={"tags": ["reviewed"]},
    )
    assert result["success"] is True and result["partialSuccess"] is True
    assert result["affectedPaths"] == ["Inbox.md", "Home.md"] and result["affectedCount"] == 2
    assert (
        result["message"]
        == "Bulk operation partially completed: 2 of 5 notes updated successfully."
    )
    reasons = {f["path"]: f["reason"] for f in result["failures"]}
    assert "doesn't exist" in reasons["note1.md"]
    assert "invalid" in reasons["Blameless Postmortems"]
    assert "matches 2 notes" in reasons["Overview"]
    assert (
        (ctx.root / "Inbox.md")
        .read_text(encoding="utf-8")
        .startswith("---\ntags:\n  - reviewed\n---\n")
    )


def test_bulk_all_failed_and_bad_arguments(ctx: ToolContext) -> None:
    failed = manage(ctx, operation="bulk_tag", targets=["a.md", "b.md"], metadata={"tags": ["x"]})
    assert failed["success"] is False and failed["partialSuccess"] is False
    assert failed["message"] == "Bulk operation failed: none of the 2 notes could be updated."
    bad = manage(ctx, operation="bulk_tag", targets=["Home.md"], metadata={"tags": ["two words"]})
    assert bad["success"] is False and "Not valid tags" in bad["message"]
    empty = manage(ctx, operation="bulk_tag", targets=["Home.md"], metadata={"status": "x"})
    assert "metadata={tags: ['reviewed']}" in empty["message"]
    none = manage(ctx, operation="bulk_tag", metadata={"tags": ["x"]})
    assert "needs 'targets'" in none["message"]


def test_bulk_update_metadata(ctx: ToolContext) -> None:
    result = manage(
        ctx,
        operation="bulk_update_metadata",
        targets=["Peak", "The Manager's Path", "Designing Data-Intensive Applications"],
        metadataChanges={"status": "read", "rating": None, "reviewed": "2025-11-12"},
    )
    assert result["affectedCount"] == 3, result
    peak = props(ctx, "Reference/Books/Peak.md")
    assert peak["status"] == "read" and "rating" not in peak and peak["reviewed"] == "2025-11-12"
    by_alias = manage(ctx, operation="bulk_update_metadata", targets=["Peak"], metadata={"x": 1})
    assert by_alias["affectedCount"] == 1 and props(ctx, "Reference/Books/Peak.md")["x"] == 1
    refused = manage(ctx, operation="bulk_update_metadata", targets=["Peak"])
    assert refused["success"] is False and "needs metadataChanges" in refused["message"]
    bad = manage(
        ctx, operation="bulk_update_metadata", targets=["Peak"], metadataChanges={"a:b": 1}
    )
    assert "Not valid property names" in bad["message"]


def test_bulk_move_partial(ctx: ToolContext) -> None:
    write(ctx.root, "Archive/Peak.md", "# another Peak\n")
    result = manage(
        ctx,
        operation="bulk_move",
        targets=[
            "Reference/Books/Peak.md",
            "Zettelkasten",
            "Missing",
            "Idempotency",
            "Zettelkasten.md",
        ],
        destination="Archive",
    )
    assert result["partialSuccess"] is True
    assert result["affectedPaths"][:2] == ["Archive/Zettelkasten.md", "Archive/Idempotency.md"]
    reasons = [f["reason"] for f in result["failures"]]
    assert any("something already exists there" in r for r in reasons)
    assert any("doesn't exist" in r for r in reasons)
    assert len(result["failures"]) == 2  # 'Zettelkasten.md' names the same note: done once
    assert result["message"].startswith("Bulk operation partially completed: 2 of 4 notes moved")
    refused = manage(ctx, operation="bulk_move", targets=["Inbox.md"], destination="x.md")
    assert "must be a folder" in refused["message"]
    missing = manage(
        ctx, operation="bulk_move", targets=["Inbox.md"], destination="New", createFolders=False
    )
    assert "folder 'New' doesn't exist" in missing["message"]


# --- property: bulk metadata changes never touch a byte outside the frontmatter -------------------

_FRONT = st.sampled_from(
    [
        "",
        "---\n---\n",
        "---\ntags: [a, b]  # c\nstatus: draft\n---\n",
        "---\n# comment\ntags:\n  - a\ntitle: 'It''s'\ndue: 2025-01-01\n---\n",
        "---\ntags: single\nnested:\n  k: v\n---\n",
        '---\nquoted: "x"\nlist:\n- one\n---\n',
    ]
)
_BODY = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\x00"), max_size=60
) | st.sampled_from(["---\nfake: 1\n---\n", "# H\n\n[[Link]] #tag\n", "\n---\n"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    notes=st.lists(st.tuples(_FRONT, _BODY, st.booleans(), st.booleans()), min_size=1, max_size=3),
    changes=st.dictionaries(
        st.sampled_from(["status", "due", "new", "title"]),
        st.one_of(st.none(), st.text(max_size=8), st.integers(0, 9), st.just("2025-02-02")),
        max_size=3,
    ),
    add=st.lists(st.sampled_from(["x", "a", "y/z"]), max_size=2),
    drop=st.lists(st.sampled_from(["a", "b", "single"]), max_size=2),
)
def test_bulk_edits_never_change_a_byte_outside_the_frontmatter(
    notes: list[tuple[str, str, bool, bool]],
    changes: dict[str, object],
    add: list[str],
    drop: list[str],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "v"
        root.mkdir()
        bodies: dict[str, bytes] = {}
        for i, (front, body, crlf, bom) in enumerate(notes):
            if front and body.startswith("---"):
                body = "\n" + body
            if not front and body.startswith("---"):
                body = "x" + body
            nl = "\r\n" if crlf else "\n"
            data = (front + body).replace("\n", nl).encode()
            (root / f"n{i}.md").write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
            bodies[f"n{i}.md"] = body.replace("\n", nl).encode()
        ctx = open_context(root, Path(tmp) / "i.db", now=lambda: NOW)
        try:
            targets = sorted(bodies)
            calls = []
            if changes:
                calls.append({"operation": "bulk_update_metadata", "metadataChanges": changes})
            if add or drop:
                calls.append(
                    {"operation": "bulk_tag", "metadata": {"tags": add, "removeTags": drop}}
                )
            for call in calls:
                manage(ctx, targets=targets, **call)
                for rel, kept in bodies.items():
                    data = (root / rel).read_bytes()
                    assert data.endswith(kept), (rel, data, kept)
                    text = data.decode("utf-8-sig").replace("\r\n", "\n")
                    assert split_frontmatter(text).error is None
        finally:
            ctx.conn.close()


def test_adding_then_removing_a_tag_gives_the_note_back(ctx: ToolContext) -> None:
    note = ctx.root / "Plain.md"
    note.write_text("# Plain\n\nNo properties here.\n", encoding="utf-8")
    before = note.read_bytes()
    manage(ctx, operation="bulk_tag", targets=["Plain.md"], metadata={"tags": ["passing"]})
    assert note.read_text(encoding="utf-8").startswith("---\ntags:")
    manage(ctx, operation="bulk_tag", targets=["Plain.md"], metadata={"removeTags": ["passing"]})
    assert note.read_bytes() == before  # no empty --- block left behind
