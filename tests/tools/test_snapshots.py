"""Snapshots of what the model sees: the three JSON Schemas and representative results.

A change to any of them shows up as a diff in ``snapshots/``; regenerate with
``UPDATE_SNAPSHOTS=1 pytest tests/tools/test_snapshots.py`` when the change is intended.
"""

from __future__ import annotations

from typing import Any

import pytest

from vaultpilot.tools import TOOLS, ToolContext, get_tool, tool_schemas
from vaultpilot.tools.schema import compact_schema

from .conftest import call, snapshot


@pytest.mark.parametrize("name", [t.name for t in TOOLS])
def test_schema(name: str) -> None:
    tool = get_tool(name)
    snapshot(
        f"schema_{name}",
        {"name": name, "description": tool.description, "parameters": tool.schema()},
    )


def test_schema_list_matches_tools() -> None:
    specs = tool_schemas()
    assert [s["name"] for s in specs] == [
        "obsidian_query_vault",
        "obsidian_get_context",
        "obsidian_vault_manager",
    ]
    for spec in specs:
        params = spec["parameters"]
        # Compact: unknown parameters are refused by the tools themselves, with the valid list.
        assert params["type"] == "object" and "additionalProperties" not in params
        assert "$defs" not in str(params) and "$ref" not in str(params)
        assert compact_schema(params) == params  # rendering is done once, completely
        assert all(prop.get("description") for prop in params["properties"].values())


CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("search_concise", "obsidian_query_vault",
     {"queryType": "semantic_search", "query": "cutover rollback", "limit": 3,
      "responseFormat": "concise"}),
    ("search_detailed", "obsidian_query_vault",
     {"queryType": "semantic_search", "query": "cutover rollback", "limit": 3}),
    ("structure_concise", "obsidian_query_vault",
     {"queryType": "list_structure", "path": "Projects", "responseFormat": "concise"}),
    ("related_concise", "obsidian_query_vault",
     {"queryType": "find_related", "referenceNote": "Idempotency", "limit": 4,
      "responseFormat": "concise"}),
    ("metadata_detailed", "obsidian_query_vault",
     {"queryType": "search_by_metadata", "filters": {"tags": ["meeting/1on1"]}, "limit": 2}),
    ("search_empty", "obsidian_query_vault", {"queryType": "semantic_search", "query": "zeppelin"}),
    ("read_detailed", "obsidian_get_context",
     {"contextType": "read_note", "target": "Reference/Concepts/Idempotency.md"}),
    ("read_concise", "obsidian_get_context",
     {"contextType": "read_note", "target": "Reference/Concepts/Idempotency.md",
      "responseFormat": "concise"}),
    ("backlinks_concise", "obsidian_get_context",
     {"contextType": "note_with_backlinks", "target": "Idempotency", "responseFormat": "concise",
      "includeMetadata": False}),
    ("daily_missing", "obsidian_get_context", {"contextType": "daily_note", "date": "2025-11-13"}),
    ("create_note", "obsidian_vault_manager",
     {"operation": "create_note", "target": "Inbox/Idea.md", "content": "# Idea\n",
      "metadata": {"tags": ["idea"]}}),
    ("delete_unconfirmed", "obsidian_vault_manager",
     {"operation": "delete_note", "target": "Inbox.md"}),
    ("bulk_partial", "obsidian_vault_manager",
     {"operation": "bulk_tag", "targets": ["Inbox.md", "nope.md"], "metadata": {"tags": ["seen"]}}),
    ("bad_arguments", "obsidian_query_vault", {"queryType": "search", "limit": 0, "depth": 2}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "tool", "args"), CASES, ids=[c[0] for c in CASES])
def test_result(ctx: ToolContext, name: str, tool: str, args: dict[str, Any]) -> None:
    snapshot(f"result_{name}", call(ctx, tool, **args))
