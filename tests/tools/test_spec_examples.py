"""Every ``@example`` call of the tool document (003, MVP Tool Design), run against a real vault.

The arguments are copied from the document exactly. Where an example names a note the example
vault doesn't have ("Old Project.md", "note1.md", ...), the test writes that note first, so each
call runs as the document shows it, and its result is checked for what the document promises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vaultpilot.index.queries import backlinks
from vaultpilot.tools import ToolContext, is_error
from vaultpilot.vault.frontmatter import split_frontmatter

from .conftest import manage, query, read, write

QUERY_EXAMPLES: list[dict[str, Any]] = [
    {"queryType": "semantic_search", "query": "machine learning"},
    {"queryType": "list_structure", "path": "Projects"},
    {"queryType": "find_related", "referenceNote": "Architecture Decisions.md"},
    {"queryType": "search_by_metadata", "filters": {"tags": ["urgent"], "dateRange": {"days": 7}}},
    {"queryType": "recent_changes", "limit": 20},
]
MANAGER_EXAMPLES: list[dict[str, Any]] = [
    {
        "operation": "create_note",
        "target": "Projects/New Project.md",
        "content": "# New Project\n\nProject details...",
        "metadata": {"tags": ["project", "active"], "status": "planning"},
    },
    {
        "operation": "append_note",
        "target": "Daily/2025-01-15.md",
        "content": "\n## Meeting Notes\n- Discussed architecture",
    },
    {
        "operation": "update_note",
        "target": "Draft.md",
        "content": "# Revised Draft\n\nCompletely new content...",
    },
    {"operation": "move_note", "target": "Old Project.md", "destination": "Archive/2024"},
    {
        "operation": "bulk_tag",
        "targets": ["note1.md", "note2.md", "note3.md"],
        "metadata": {"tags": ["reviewed"]},
    },
    {"operation": "create_folder", "target": "Projects/2025/Q1", "createFolders": True},
    {"operation": "delete_note", "target": "Draft.md", "confirmDestructive": True},
    {
        "operation": "bulk_move",
        "targets": ["note1.md", "note2.md"],
        "destination": "Archive/Old Projects",
    },
]
CONTEXT_EXAMPLES: list[dict[str, Any]] = [
    {"contextType": "read_note", "target": "Projects/ML Project.md", "includeMetadata": True},
    {"contextType": "gather_related", "target": "Architecture.md", "maxRelated": 5},
    {"contextType": "daily_note", "date": "today"},
    {"contextType": "read_multiple", "targets": ["note1.md", "note2.md", "note3.md"]},
    {"contextType": "note_with_backlinks", "target": "Concepts/Zettelkasten.md"},
    {"contextType": "read_note", "target": "Long Article.md", "responseFormat": "concise"},
]


def _setup(root: Path) -> None:
    """The notes the examples name that the example vault doesn't have."""
    write(root, "Architecture Decisions.md", "# Architecture Decisions\n\nWe chose "
          "[[Database Migration]] over a rewrite; see [[CAP Theorem]].\n\n#postgres\n")  # fmt: skip
    write(root, "Architecture.md", "# Architecture\n\n[[Architecture Decisions]], [[Idempotency]], "
          "[[Strangler Fig Pattern]] and [[Database Migration]].\n")  # fmt: skip
    write(root, "Draft.md", "---\nstatus: draft\n---\n# Draft\n\nFirst attempt.\n")
    write(root, "Old Project.md", "# Old Project\n\nDone in 2024.\n")
    write(root, "Home2.md", "Links: [[Old Project]] and [[Old Project#Old Project|the old one]].\n")
    for n in (1, 2, 3):
        write(
            root,
            f"note{n}.md",
            f"---\ntags:\n  - draft\n---\n# Note {n}\n\nSee [[note{n % 3 + 1}]].\n",
        )
    write(root, "Projects/ML Project.md", "---\ntags: [ml]\nstatus: active\n---\n# ML Project\n\n"
          "Training a classifier.\n")  # fmt: skip
    write(root, "Long Article.md", "# Long Article\n\n" + "A paragraph of words. " * 400 + "\n")
    write(root, "Meetings/Standup.md", "---\ntags:\n  - urgent\n---\n# Standup\n", age_days=2)
    write(root, "Meetings/Old Standup.md", "---\ntags: [urgent]\n---\n# Old\n", age_days=30)


@pytest.fixture
def spec_ctx(ctx: ToolContext) -> ToolContext:
    _setup(ctx.root)
    return ctx


@pytest.mark.parametrize("args", QUERY_EXAMPLES, ids=[a["queryType"] for a in QUERY_EXAMPLES])
def test_query_examples(spec_ctx: ToolContext, args: dict[str, Any]) -> None:
    result = query(spec_ctx, **args)
    assert not is_error(result), result
    assert set(result) >= {"results", "totalFound", "truncated"}
    paths = [r["path"] for r in result["results"]]
    match args["queryType"]:
        case "semantic_search":
            assert result["ranking"] == "keyword" and paths
        case "list_structure":
            assert paths[:3] == ["Projects/2025", "Projects/Garden", "Projects/Mobile App"]
            assert "Projects/Database Migration.md" in paths
        case "find_related":
            assert {"Projects/Database Migration.md", "Architecture.md"} <= set(paths)
        case "search_by_metadata":
            assert paths == ["Meetings/Standup.md"]
        case "recent_changes":
            assert len(paths) == 20 and result["truncated"] and result["totalFound"] > 20


@pytest.mark.parametrize("args", MANAGER_EXAMPLES, ids=[a["operation"] for a in MANAGER_EXAMPLES])
def test_manager_examples(spec_ctx: ToolContext, args: dict[str, Any]) -> None:
    root = spec_ctx.root
    result = manage(spec_ctx, **args)
    assert result["success"] is True, result
    assert result["operation"] == args["operation"]
    assert result["affectedCount"] == len(result["affectedPaths"]) > 0
    match args["operation"]:
        case "create_note":
            assert (root / "Projects/New Project.md").read_text(encoding="utf-8") == (
                "---\ntags:\n  - project\n  - active\nstatus: planning\n---\n"
                "# New Project\n\nProject details..."
            )
        case "append_note":
            text = (root / "Daily/2025-01-15.md").read_text(encoding="utf-8")
            assert text.startswith('---\ntags:\n  - daily\ncreated: "2025-01-15"\n')
            assert text.endswith("[[Q4 Goals]]\n\n## Meeting Notes\n- Discussed architecture")
        case "update_note":
            assert (root / "Draft.md").read_text(encoding="utf-8") == (
                "---\nstatus: draft\n---\n# Revised Draft\n\nCompletely new content..."
            )
        case "move_note":
            assert (root / "Archive/2024/Old Project.md").is_file()
            assert not (root / "Old Project.md").exists()
            links = backlinks(spec_ctx.conn, "Archive/2024/Old Project.md")
            assert {b.source for b in links} == {"Home2.md"} and len(links) == 2
        case "bulk_tag":
            for n in (1, 2, 3):
                fm = split_frontmatter((root / f"note{n}.md").read_text(encoding="utf-8"))
                assert fm.properties["tags"] == ["draft", "reviewed"]
            assert result["partialSuccess"] is False
        case "create_folder":
            assert (root / "Projects/2025/Q1").is_dir()
        case "delete_note":
            assert not (root / "Draft.md").exists()
            assert (root / ".trash/Draft.md").is_file()
        case "bulk_move":
            assert sorted(p.name for p in (root / "Archive/Old Projects").iterdir()) == [
                "note1.md",
                "note2.md",
            ]
            note3 = (root / "note3.md").read_text(encoding="utf-8")
            assert "[[note1]]" in note3  # still resolves: the name is unique
            assert backlinks(spec_ctx.conn, "Archive/Old Projects/note1.md")


@pytest.mark.parametrize(
    "args",
    CONTEXT_EXAMPLES,
    ids=[f"{a['contextType']}-{i}" for i, a in enumerate(CONTEXT_EXAMPLES)],
)
def test_context_examples(spec_ctx: ToolContext, args: dict[str, Any]) -> None:
    result = read(spec_ctx, **args)
    assert not is_error(result), result
    assert result["tokenEstimate"] > 0
    primary = result["primaryNote"]
    assert primary is not None
    assert len(primary["version"]) == 16 and primary["wordCount"] > 0
    match args["contextType"]:
        case "read_note" if args.get("responseFormat") == "concise":
            assert primary["truncated"] is True and len(primary["content"]) < 1200
        case "read_note":
            assert primary["metadata"] == {"tags": ["ml"], "status": "active"}
            assert primary["content"].startswith("# ML Project")
        case "gather_related":
            related = [n["path"] for n in result["relatedNotes"]]
            assert len(related) == 5 and "Architecture Decisions.md" in related
        case "daily_note":
            assert primary["path"] == "Daily/2025-11-12.md"
        case "read_multiple":
            assert [n["path"] for n in [primary, *result["relatedNotes"]]] == [
                "note1.md",
                "note2.md",
                "note3.md",
            ]
        case "note_with_backlinks":
            assert primary["path"] == "Reference/Concepts/Zettelkasten.md"
            assert {b["notePath"] for b in result["backlinks"]} >= {
                "Reference/Concepts/Spaced Repetition.md"
            }


def test_workflow_find_then_read(spec_ctx: ToolContext) -> None:
    """The document's workflow: find notes, then read the first three together."""
    found = query(spec_ctx, queryType="semantic_search", query="Postgres migration")
    paths = [r["path"] for r in found["results"]][:3]
    context = read(spec_ctx, contextType="read_multiple", targets=paths)
    assert [context["primaryNote"]["path"], *(n["path"] for n in context["relatedNotes"])] == paths


def test_workflow_tag_last_weeks_meetings(spec_ctx: ToolContext) -> None:
    """The document's workflow: meetings from last week, then tag them all as reviewed."""
    found = query(
        spec_ctx,
        queryType="search_by_metadata",
        filters={"folder": "Meetings", "dateRange": {"days": 7}},
    )
    paths = [r["path"] for r in found["results"]]
    # Held within the last 7 days by the note's date (name or property), else its file time.
    assert sorted(paths) == ["Meetings/Mobile App Go-No-Go 2025-11-05.md", "Meetings/Standup.md"]
    tagged = manage(spec_ctx, operation="bulk_tag", targets=paths, metadata={"tags": ["reviewed"]})
    assert tagged["affectedPaths"] == paths
    again = query(spec_ctx, queryType="search_by_metadata", filters={"tags": ["reviewed"]})
    assert sorted(r["path"] for r in again["results"]) == sorted(paths)


def test_workflow_create_project_in_2025(spec_ctx: ToolContext) -> None:
    result = manage(
        spec_ctx,
        operation="create_note",
        target="Projects/2025/New Project.md",
        content="# New Project\n\nProject goals...",
        metadata={"tags": ["project", "2025"], "status": "planning"},
        createFolders=True,
    )
    assert result["success"], result
    fm = split_frontmatter((spec_ctx.root / "Projects/2025/New Project.md").read_text("utf-8"))
    assert fm.properties == {"tags": ["project", "2025"], "status": "planning"}
    assert "ignored by Obsidian: 2025" in result["warnings"][0]  # '2025' alone is not a tag
