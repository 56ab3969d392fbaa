"""Hybrid search and related notes on the example vault, embedded once with the real model."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from bench.eval_retrieval import hybrid_ranker, product_keyword, score

from tests.semantic.conftest import Embedded, HashEmbedder
from vaultpilot.index.hybrid import Fusion, hybrid_search
from vaultpilot.index.keyword_side import coverage
from vaultpilot.index.related import related_notes, similar_notes
from vaultpilot.index.search import content_words

QUESTIONS = Path(__file__).resolve().parents[2] / "bench" / "retrieval_questions.json"


def top(embedded: Embedded, text: str, limit: int = 5, **kw: object) -> list[str]:
    result = hybrid_search(
        embedded.conn,
        text,
        embedder=embedded.embedder,
        vectors=embedded.cache,
        limit=limit,
        **kw,  # type: ignore[arg-type]
    )
    return [h.path for h in result.hits]


def test_hybrid_beats_keyword_only_on_the_question_set(embedded: Embedded) -> None:
    questions = json.loads(QUESTIONS.read_text("utf-8"))["questions"]
    assert len(questions) >= 40
    keyword = score(product_keyword(embedded.conn), questions)["all"]
    # The ranking alone (the threshold is measured on questions with no answer, in
    # bench/eval_real.py; this set has none).
    unfiltered = Fusion(threshold=0.0, floor=0.0)
    hybrid = score(
        hybrid_ranker(embedded.conn, embedded.embedder, embedded.cache, "hybrid", unfiltered),
        questions,
    )["all"]
    assert hybrid["recall@5"] > keyword["recall@5"]
    assert hybrid["mrr"] > keyword["mrr"]
    assert hybrid["recall@5"] >= 0.95


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Is the Japan rail pass worth it?", "Travel/Japan Trip.md"),
        ("Why didn't we use Amazon's migration service?", "Projects/Database Migration.md"),
        ("How acidic is the garden soil?", "Projects/Garden/Overview.md"),
        ("What helped me sleep better?", "Areas/Health/Sleep Experiments.md"),
    ],
)
def test_paraphrased_questions(embedded: Embedded, question: str, expected: str) -> None:
    assert expected in top(embedded, question, limit=3)


def test_hits_carry_both_sides_and_the_best_chunk(embedded: Embedded) -> None:
    result = hybrid_search(
        embedded.conn,
        "When is the dentist appointment?",
        embedder=embedded.embedder,
        vectors=embedded.cache,
        limit=5,
    )
    assert result.mode == "hybrid" and result.notice is None
    assert result.total >= len(result.hits) == 5
    first = result.hits[0]
    assert first.path == "Areas/Health/Dental Care.md"
    assert 0.5 <= first.relevance <= 1.0 and first.score > 0  # calibrated, not scaled to 1
    assert first.keyword_rank is not None and first.vector_rank is not None
    assert first.vector_score is not None and 0.3 < first.vector_score <= 1.0
    assert first.heading == "Next appointment"
    assert "Okafor" in first.snippet
    assert all(0.0 < h.relevance <= 1.0 for h in result.hits)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("駅はどこですか", "Travel/Japan Trip.md"),
        ("お会計", "Travel/Japan Trip.md"),
        ("creme brulee", "Recipes/Crème Brûlée.md"),
        ("jaunes d'oeufs", "Recipes/Crème Brûlée.md"),
        ("Nærøyfjord", "Travel/Norway Fjords.md"),
    ],
)
def test_non_english_ranks_through_the_keyword_side(
    embedded: Embedded, query: str, expected: str
) -> None:
    result = hybrid_search(
        embedded.conn, query, embedder=embedded.embedder, vectors=embedded.cache, limit=3
    )
    assert result.hits[0].path == expected
    assert result.hits[0].keyword_rank == 1


def test_filters_narrow_both_sides(embedded: Embedded) -> None:
    with_tag = {
        r[0]
        for r in embedded.conn.execute(
            "SELECT f.path FROM tags t JOIN files f ON f.id = t.file_id"
            " WHERE t.tag_lower = 'project' OR t.tag_lower LIKE 'project/%'"
        )
    }
    tagged = top(embedded, "database cutover", limit=20, tag="project")
    assert "Projects/Database Migration.md" in tagged and set(tagged) <= with_tag
    refs = top(embedded, "consistency trade-offs", limit=20, folder="Reference")
    assert refs and all(p.startswith("Reference/") for p in refs)
    allowed = frozenset({"Travel/Japan Trip.md", "Inbox.md"})
    assert set(top(embedded, "gift for Noor", limit=20, allowed=allowed)) <= allowed
    assert top(embedded, "anything", allowed=frozenset()) == []


def test_modes_and_missing_vectors(embedded: Embedded) -> None:
    conn, text = embedded.conn, "Which book talked about deliberate practice?"
    vector_only = hybrid_search(
        conn, text, embedder=embedded.embedder, vectors=embedded.cache, mode="vector"
    )
    assert vector_only.mode == "vector"
    assert all(h.keyword_rank is None and h.vector_rank for h in vector_only.hits)
    keyword_only = hybrid_search(
        conn, text, embedder=embedded.embedder, vectors=embedded.cache, mode="keyword"
    )
    assert keyword_only.mode == "keyword" and all(h.vector_rank is None for h in keyword_only.hits)

    no_model = hybrid_search(conn, text, embedder=None, vectors=None)
    assert no_model.mode == "keyword" and "keywords only" in (no_model.notice or "")
    assert no_model.hits[0].path == "Reference/Books/Peak.md"
    other = hybrid_search(conn, text, embedder=HashEmbedder(), vectors=embedded.cache)
    assert other.mode == "keyword" and "re-embed" in (other.notice or "")


def test_a_query_without_words_still_answers(embedded: Embedded) -> None:
    result = hybrid_search(embedded.conn, "?!", embedder=embedded.embedder, vectors=embedded.cache)
    assert result.mode in {"vector", "keyword"}


def test_related_notes_name_their_relations(embedded: Embedded) -> None:
    related = related_notes(embedded.conn, "Projects/Database Migration.md", vectors=embedded.cache)
    by_path = {r.path: r for r in related}
    review = by_path["Meetings/Architecture Review 2025-10-16.md"]
    assert "links here" in review.relation and "linked from it" in review.relation
    assert related[0].relevance == 1.0
    assert related[0].path == "Meetings/Architecture Review 2025-10-16.md"
    assert "shares #postgres" in by_path["Reference/Postgres Cheatsheet.md"].relation
    similar = [r for r in related if "similar text" in r.relation]
    assert similar and all(r.similarity is not None for r in similar)
    assert "Projects/Database Migration.md" not in by_path

    limited = related_notes(
        embedded.conn,
        "Projects/Database Migration.md",
        vectors=embedded.cache,
        limit=3,
        allowed=frozenset({"Reference/Concepts/Idempotency.md", "Daily/2025-11-12.md"}),
    )
    assert {r.path for r in limited} <= {"Reference/Concepts/Idempotency.md", "Daily/2025-11-12.md"}
    assert related_notes(embedded.conn, "Nope.md", vectors=embedded.cache) == []


def test_similar_text_uses_vectors_when_the_note_is_embedded(embedded: Embedded) -> None:
    with_vectors = similar_notes(embedded.conn, "Recipes/Weeknight Dal.md", vectors=embedded.cache)
    without = similar_notes(embedded.conn, "Recipes/Weeknight Dal.md", vectors=None)
    assert with_vectors and with_vectors[0].how == "keyword+vector"
    assert without and {s.how for s in without} == {"keyword"}
    assert all(0 < s.score <= 1 for s in with_vectors + without)
    recipes = {s.path for s in with_vectors[:5]}
    assert recipes & {"Recipes/Crème Brûlée.md", "Recipes/Sourdough Starter.md"}


@pytest.mark.parametrize(
    "query", ["database migration rollback plan", "dentist appointment", "weekly review"]
)
def test_coverage_matches_one_note_at_a_time(indexed: sqlite3.Connection, query: str) -> None:
    # coverage() reads each word's doclist once; the same shares, note by note, from FTS5.
    ids = [int(r[0]) for r in indexed.execute("SELECT rowid FROM notes_fts")]
    notes = len(ids)
    words = content_words(query)
    weights, expected = [], {fid: [0.0, 0.0] for fid in ids}
    for word in words:
        term = f'"{word}"'
        df = indexed.execute(
            "SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH ?", (term,)
        ).fetchone()[0]
        weight = math.log(1.0 + (notes - df + 0.5) / (df + 0.5))
        weights.append(weight)
        for fid in ids:
            for slot, prefix in ((0, ""), (1, "{title aliases}: ")):
                if indexed.execute(
                    "SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? AND rowid = ?",
                    (prefix + term, fid),
                ).fetchone():
                    expected[fid][slot] += weight
    total = sum(weights)
    want = {f: (a / total, b / total) for f, (a, b) in expected.items() if a or b}
    got = coverage(indexed, query, ids, stem=False)
    assert want and got.keys() == want.keys()
    for fid, (held, title) in want.items():
        assert got[fid] == pytest.approx((held, title))
