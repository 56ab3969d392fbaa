"""Bounded arguments: a giant parameter is refused at once, saying the limit and what to do.

A 200,000-word query once held a vault's tool lock for 36 s; now validation refuses it before
the tool runs. The limits are part of the schema the model sees (maxLength, maxItems).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.index.scan import MAX_NOTE_BYTES
from vaultpilot.tools import ToolContext, get_tool, run_tool
from vaultpilot.tools.models import VaultManagerParams


def refused(ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> str:
    outcome = run_tool(ctx, tool, arguments)
    assert isinstance(outcome.error, InvalidArgumentError), outcome.result
    return outcome.error.message


def test_a_200000_word_query_is_refused_at_once(ctx: ToolContext) -> None:
    query = " ".join(f"w{i % 5000}" for i in range(200_000))
    started = time.perf_counter()
    message = refused(ctx, "obsidian_query_vault", {"queryType": "semantic_search", "query": query})
    assert time.perf_counter() - started < 1.0  # the tool never ran (it took 40 s)
    assert message == (
        f"Invalid arguments for obsidian_query_vault: 'query' has {len(query):,} characters; "
        "at most 1,000 are searched. Ask with fewer words."
    )


def test_the_longest_query_allowed_is_answered(ctx: ToolContext) -> None:
    query = " ".join(f"w{i}" for i in range(400))[:1000]
    outcome = run_tool(
        ctx, "obsidian_query_vault", {"queryType": "semantic_search", "query": query}
    )
    assert outcome.error is None


def test_content_larger_than_a_note_is_refused_and_nothing_written(
    ctx: ToolContext, vault: Path
) -> None:
    too_many_chars = "x" * (MAX_NOTE_BYTES + 1)
    message = refused(
        ctx,
        "obsidian_vault_manager",
        {"operation": "create_note", "target": "Big.md", "content": too_many_chars},
    )
    assert message.endswith(
        "'content' has 8,388,609 characters; at most 8,388,608 fit in a note. Split it into "
        "several notes."
    )
    # Fewer characters than the limit, but more bytes than the index reads of one note.
    too_many_bytes = "é" * (MAX_NOTE_BYTES // 2 + 1)
    message = refused(
        ctx,
        "obsidian_vault_manager",
        {"operation": "create_note", "target": "Big.md", "content": too_many_bytes},
    )
    assert message.endswith(
        "'content' is 8,388,610 bytes in UTF-8; at most 8,388,608 fit in a note. Split it into "
        "several notes."
    )
    assert not (vault / "Big.md").exists()
    at_limit = VaultManagerParams.model_validate(
        {"operation": "create_note", "content": "é" * (MAX_NOTE_BYTES // 2)}
    )
    assert at_limit.content is not None


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("obsidian_query_vault",
         {"queryType": "find_related", "referenceNote": "n" * 501},
         "'referenceNote' has 501 characters; at most 500 are read. Pass a shorter path or "
         "title."),
        ("obsidian_query_vault",
         {"queryType": "search_by_metadata", "filters": {"tags": ["t" * 201]}},
         "'filters.tags.0' has 201 characters; at most 200 are read. Use a shorter tag."),
        ("obsidian_query_vault",
         {"queryType": "search_by_metadata", "filters": {"tags": ["t"] * 101}},
         "'filters.tags' has 101 items; at most 100 are combined. Filter on fewer tags."),
        # 1,000 conditions once reached SQLite as one expression and failed as an internal error.
        ("obsidian_query_vault",
         {"queryType": "search_by_metadata",
          "filters": {"properties": {"status": {"in": [f"s{i}" for i in range(1000)]}}}},
         "'filters' has 1,000 conditions and values; at most 100 are combined. Filter on fewer "
         "tags, properties or values."),
        ("obsidian_query_vault",
         {"queryType": "search_by_metadata", "filters": {"owner": {"contains": "o" * 1001}}},
         "a property name or value in 'filters' has 1,001 characters; at most 1,000 are "
         "compared. Filter on a shorter value."),
        ("obsidian_get_context",
         {"contextType": "read_multiple", "targets": ["a.md"] * 21},
         "'targets' has 21 items; at most 20 are taken in one call. Split them into several "
         "calls."),
        ("obsidian_vault_manager",
         {"operation": "bulk_tag", "targets": ["a.md"] * 501},
         "'targets' has 501 items; at most 500 are taken in one call. Split them into several "
         "calls."),
        ("obsidian_vault_manager",
         {"operation": "bulk_update_metadata", "targets": ["a.md"],
          "metadataChanges": {f"k{i}": 1 for i in range(1001)}},
         "'metadataChanges' has 1,001 entries; at most 1,000 are set in one call. Split them "
         "into several calls."),
        ("obsidian_vault_manager",
         {"operation": "update_note", "target": "a.md", "content": "x",
          "expectedVersion": "v" * 101},
         "'expectedVersion' has 101 characters; at most 100 are read. Pass the 'version' "
         "exactly as you read it."),
    ],
)  # fmt: skip
def test_each_limit_says_what_to_do(
    ctx: ToolContext, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    message = refused(ctx, tool, arguments)
    assert message == f"Invalid arguments for {tool}: {expected}"


def test_filters_at_the_limit_still_run(ctx: ToolContext) -> None:
    filters = {"tags": [f"t{i}" for i in range(50)], "status": {"in": [f"s{i}" for i in range(50)]}}
    outcome = run_tool(
        ctx, "obsidian_query_vault", {"queryType": "search_by_metadata", "filters": filters}
    )
    assert outcome.error is None and outcome.result["totalFound"] == 0


def test_the_schema_states_the_limits() -> None:
    query = get_tool("obsidian_query_vault").schema()["properties"]
    assert query["query"]["maxLength"] == 1000
    assert query["filters"]["properties"]["tags"]["maxItems"] == 100
    manager = get_tool("obsidian_vault_manager").schema()["properties"]
    assert manager["content"]["maxLength"] == MAX_NOTE_BYTES
    assert manager["targets"]["items"]["maxLength"] == 500
