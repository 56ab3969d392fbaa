"""How ``semantic_search`` ranks notes, behind one small interface so it can be swapped.

A ranker is ``(conn, RankRequest) -> Ranking``. ``keyword_ranker`` is FTS5 BM25 over titles,
aliases, headings and bodies (``index.search.keyword_search``), falling back to notes with *any*
of the words when none holds all of them. ``hybrid_ranker`` fuses BM25 with vector similarity
(``index.hybrid``); when no embedder or no vectors are available it ranks by keywords and the
result says so (``ranking`` is "keyword", and ``notice`` why; ``notice`` also says when only part
of the vault is embedded yet). Keyword-only relevance is scaled to 0..1 against the best hit;
hybrid relevance is calibrated (``index.hybrid.relevance``: the same meaning for every query; a
hit shows at most the relevance of the one above it, so the list reads best first and a shown 0.5
or more is always a likely answer), and when no note is likely enough to answer, the ranking is
empty: the caller says nothing was found instead of offering unrelated notes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace

from vaultpilot.index.hybrid import hybrid_search
from vaultpilot.index.search import SearchHit, keyword_search
from vaultpilot.tools.semantic import Semantic

__all__ = ["RankRequest", "RankedHit", "Ranker", "Ranking", "hybrid_ranker", "keyword_ranker"]


@dataclass(frozen=True, slots=True)
class RankRequest:
    query: str
    limit: int
    tag: str | None = None
    folder: str | None = None
    allowed: frozenset[str] | None = None  # only these paths may be returned (other filters)


@dataclass(frozen=True, slots=True)
class RankedHit:
    path: str
    title: str
    relevance: float  # 0..1
    snippet: str


@dataclass(frozen=True, slots=True)
class Ranking:
    hits: list[RankedHit]
    total: int
    ranking: str  # "hybrid", or "keyword" when the vector side was not available
    any_word: bool = False  # no note held every word; these hold some of them
    notice: str | None = None  # why the vector side was left out or is partial


Ranker = Callable[[sqlite3.Connection, RankRequest], Ranking]


def _scaled(hits: list[SearchHit], factor: float) -> list[RankedHit]:
    best = max((h.score for h in hits), default=0.0)
    return [
        RankedHit(
            h.path, h.title, round(factor * h.score / best, 2) if best > 0 else 0.0, h.snippet
        )
        for h in hits
    ]


def keyword_ranker(conn: sqlite3.Connection, req: RankRequest) -> Ranking:
    """BM25 keyword ranking with an any-word fallback (see the module doc)."""
    found = keyword_search(
        conn, req.query, limit=req.limit, tag=req.tag, folder=req.folder, allowed=req.allowed
    )
    # A note holding only some of the words is a weaker match than one holding all of them.
    scaled = _scaled(found.hits, 0.5 if found.any_word else 1.0)
    return Ranking(scaled, found.total, "keyword", found.any_word)


def hybrid_ranker(semantic: Semantic) -> Ranker:
    """A ranker fusing keywords with vectors from ``semantic`` (see the module doc)."""

    def rank(conn: sqlite3.Connection, req: RankRequest) -> Ranking:
        result = hybrid_search(
            conn,
            req.query,
            embedder=semantic.embedder(),
            vectors=semantic.cache,
            limit=req.limit,
            tag=req.tag,
            folder=req.folder,
            allowed=req.allowed,
        )
        if not result.hits and not result.calibrated:
            # nothing at all without vectors: the any-word keyword fallback may still help
            fallback = keyword_ranker(conn, req)
            return replace(fallback, notice=result.notice)
        hits = [RankedHit(h.path, h.title, h.relevance, h.snippet) for h in result.hits]
        total = result.total if result.hits else 0
        return Ranking(hits, total, result.mode, notice=result.notice)

    return rank
