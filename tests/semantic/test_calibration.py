"""Calibrated relevance: a query the vault cannot answer gets nothing, through the index and
through the tool, with the specification's suggestion; an answerable one keeps its answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.semantic.conftest import Embedded
from vaultpilot.index.hybrid import (
    RELEVANCE_NEAR,
    RELEVANCE_THRESHOLD,
    hybrid_search,
    relevance,
)
from vaultpilot.tools.context import ToolContext, open_context
from vaultpilot.tools.models import QueryVaultParams
from vaultpilot.tools.query import obsidian_query_vault
from vaultpilot.tools.semantic import Semantic


def search(embedded: Embedded, text: str) -> list[str]:
    result = hybrid_search(
        embedded.conn, text, embedder=embedded.embedder, vectors=embedded.cache, limit=10
    )
    assert result.calibrated
    return [h.path for h in result.hits]


@pytest.mark.parametrize("query", ["xyzzy plugh frobozz", "quantum physics", "the", "what is it"])
def test_a_query_without_an_answer_returns_nothing(embedded: Embedded, query: str) -> None:
    assert search(embedded, query) == []


def test_an_answerable_query_keeps_its_answer(embedded: Embedded) -> None:
    assert search(embedded, "When is the dentist appointment?")[0] == (
        "Areas/Health/Dental Care.md"
    )


@pytest.mark.parametrize(
    "query", ["kafka consumer lag", "database migration runbook", "weekly review of my notes"]
)
def test_the_list_reads_best_first_and_holds_likely_notes(embedded: Embedded, query: str) -> None:
    result = hybrid_search(
        embedded.conn, query, embedder=embedded.embedder, vectors=embedded.cache, limit=50
    )
    shown = [h.relevance for h in result.hits]
    assert shown and shown == sorted(shown, reverse=True)  # never a higher one further down
    # Under the threshold a note is listed only near the top; further down only likely ones
    # (by the model, or holding at least half the query's word weight: a keyword match).
    for hit in result.hits[RELEVANCE_NEAR:]:
        likely = relevance(hit.vector_score, hit.held, hit.in_title) >= RELEVANCE_THRESHOLD - 0.01
        assert likely or hit.held >= 0.5 - 0.001
    # The count is of what is listed, not of every note with some similarity: fewer than half
    # of the vault's 47 notes (33 were counted for "kafka consumer lag" before).
    assert result.total == len(result.hits) < 24


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("database migration", "Projects/Database Migration.md"),  # its title, any case
        ("raised beds", "Projects/Garden/Overview.md"),  # one of its aliases
    ],
)
def test_a_query_that_names_a_note_puts_it_first(
    embedded: Embedded, query: str, named: str
) -> None:
    assert search(embedded, query)[0] == named


def test_relevance_means_the_same_for_every_query() -> None:
    # Monotonic in each piece of evidence, bounded, and the threshold sits between a weak and a
    # strong cosine whatever the words.
    assert relevance(0.2, 0.0, 0.0) < RELEVANCE_THRESHOLD < relevance(0.6, 0.0, 0.0)
    assert relevance(0.4, 0.5, 0.0) > relevance(0.4, 0.0, 0.0)
    assert relevance(0.4, 0.5, 0.5) > relevance(0.4, 0.5, 0.0)
    assert 0.0 < relevance(None, 0.0, 0.0) < relevance(None, 1.0, 1.0) < 1.0


@pytest.fixture
def tool_context(embedded: Embedded) -> Iterator[ToolContext]:
    semantic = Semantic(load=lambda: embedded.embedder)
    ctx = open_context(embedded.vault, embedded.vault.parent / "index.db", semantic=semantic)
    try:
        yield ctx
    finally:
        ctx.conn.close()


@pytest.mark.parametrize("query", ["xyzzy plugh frobozz", "quantum physics"])
def test_the_tool_says_no_notes_found(tool_context: ToolContext, query: str) -> None:
    params = QueryVaultParams.model_validate({"queryType": "semantic_search", "query": query})
    result = obsidian_query_vault(tool_context, params)
    assert result["results"] == [] and result["totalFound"] == 0
    assert result["truncated"] is False
    assert result.get("suggestion", "").startswith(f"No notes found matching '{query}'. Try ")
    assert result.get("ranking") in {"hybrid", "vector"}


def test_find_related_uses_the_same_scale(tool_context: ToolContext) -> None:
    params = QueryVaultParams.model_validate(
        {"queryType": "find_related", "referenceNote": "Projects/Database Migration.md"}
    )
    result = obsidian_query_vault(tool_context, params)
    rel = [r["relevance"] for r in result["results"]]
    assert rel and all(0.0 < r <= 1.0 for r in rel)
    first = result["results"][0]
    assert first["path"] == "Meetings/Architecture Review 2025-10-16.md"
    assert first["relevance"] >= 0.9  # linked both ways: near certain, not "1.0 by scaling"


def test_no_notes_found_suggests_the_query_s_own_words(tool_context: ToolContext) -> None:
    params = QueryVaultParams.model_validate(
        {"queryType": "semantic_search", "query": "what is my blood type"}
    )
    result = obsidian_query_vault(tool_context, params)
    assert result["results"] == []
    assert (
        "'blood' or 'type'" in result["suggestion"] or "'type' or 'blood'" in result["suggestion"]
    )
