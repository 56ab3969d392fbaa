"""Hybrid search: BM25 keywords, chunk vectors and the link graph, fused into one ranking.

``hybrid_search(conn, text, embedder=..., vectors=...)`` ranks notes for a free-text query:

* **keyword side** (``keyword_side.keyword_side``): BM25 for notes holding *any* of the query's
  words, English stop words left out (so "when is the dentist appointment?" is not reduced to
  notes containing "is" and "the"), notes holding every word first. CJK text goes through the
  trigram table and accents are ignored, so non-English text always ranks through here.
* **vector side**: the query's embedding against every embedded chunk (``vectors.VectorIndex``);
  a note scores by its best chunk, whose heading and text become the snippet.
* **fusion**: a 40/60 keyword/vector blend of each side's min-max normalised score (``Fusion``;
  RRF with k=60 is ``method="rrf"``); every default was chosen on ``bench/eval_real.py
  --levers``. An optional **graph** pass adds a rank-fusion term for notes linked to or from the
  best results, and an optional third RRF list ranks by the calibrated evidence; both are off
  (no measurable gain; the link graph ranks ``related_notes``).
* **calibrated relevance** (``relevance``): a logistic model of the best-chunk cosine and the
  share of the query's words a note holds, 0.5 being the threshold. It decides on the query's
  best note only: when no note reaches it, the result is empty (the query has no answer in the
  vault); when one does, the ranking is returned with every note that reaches it, and notes
  under it only among the first ``Fusion.near`` (down to ``Fusion.floor``), so the count says how
  many notes are likely, not how many share a word. The relevance shown never rises down the
  list (a note shows at most the relevance of the one above it): the list reads best first.

Without an embedder or vectors (model not built, nothing embedded yet, vectors from another
model, embedding server down) the ranking is keyword-only and ``HybridResult.notice`` says why.
Everything returned is a frozen value; nothing here writes. Typical use by a caller that lives
as long as its connection::

    cache = VectorCache()                   # one per index database; reloads itself when stale
    embedder = select_embedder()            # index.semantic; None if EmbeddingModelMissing
    result = hybrid_search(conn, "why not DMS?", embedder=embedder, vectors=cache, limit=10)
    [(h.path, h.relevance, h.snippet) for h in result.hits]
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, replace
from typing import Literal

from vaultpilot.index.doclists import Frequency
from vaultpilot.index.embedding.base import Embedder, EmbeddingModelMissing, EmbeddingServiceError
from vaultpilot.index.keyword_side import KeywordHit, coverage, keyword_side
from vaultpilot.index.search import keyword_snippets, note_filter_ids, only_stop_words
from vaultpilot.index.vectors import ChunkMatch, ModelInfo, VectorCache, VectorIndex

__all__ = [
    "RELEVANCE_THRESHOLD",
    "Fusion",
    "HybridHit",
    "HybridResult",
    "hybrid_search",
    "relevance",
]

Mode = Literal["hybrid", "keyword", "vector"]
_SIMILAR = 0.3  # a cosine from which a note counts towards ``total``

# The calibrated relevance (see ``relevance``): a logistic model of "this note answers the
# query", fitted by ``bench/calibrate_relevance.py`` on the questions of
# ``bench/retrieval_questions_real.json`` (answerable and unanswerable ones) over two real
# vaults. Inputs: the cosine of the note's best chunk, and the idf-weighted share of the query's
# words the note holds anywhere and in its title or aliases. The threshold is the lowest fitted
# probability at which at least 80% of the questions without an answer get none (0.02); the
# bias is shifted by -logit(0.02) so that 0.5 is that threshold. It decides whether a query is
# answered at all, on its best note only: the notes below the best are kept down to the floor
# among the first ``RELEVANCE_NEAR`` (recall@5 unchanged), further down only those that pass.
_WITH_VECTOR = (-4.08, 9.61, 2.96, 1.91)  # bias, cosine, words held, words in title
_KEYWORDS_ONLY = (-0.60, 3.93, 6.75)  # bias, words held, words in title (note not embedded)
RELEVANCE_THRESHOLD = 0.5  # when no note reaches it, the query has no answer: nothing returned
RELEVANCE_FLOOR = 0.05  # below it a note is not returned even when another one passed
RELEVANCE_NEAR = 5  # under the threshold, a note is returned only among the first five
_HELD_ENOUGH = 0.5  # share of the query's idf weight that makes a keyword match a match


def relevance(cosine: float | None, held: float, in_title: float) -> float:
    """How likely a note answers the query, 0..1, with the same meaning for every query."""
    if cosine is None:
        bias, a, b = _KEYWORDS_ONLY
        z = bias + a * held + b * in_title
    else:
        bias, c, a, b = _WITH_VECTOR
        z = bias + c * cosine + a * held + b * in_title
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the sides are combined and what is returned. Every default was measured on
    ``bench/eval_real.py --levers`` (questions over two real public vaults; docs/benchmarks.md
    has the table with the levers kept and dropped)."""

    method: Literal["rrf", "scores"] = "scores"  # "scores": min-max normalised score blend
    k: float = 60.0  # the RRF constant (also for the evidence ranking)
    keyword: float = 0.4  # weight of the keyword side (RRF), or its share of the blend
    vector: float = 0.6  # weight of the vector side
    graph: float = 0.0  # weight of the link-graph pass (0: off)
    graph_seeds: int = 5  # how many of the best results spread credit to their links
    pool: int = 50  # candidates taken from each side
    min_similarity: float = 0.15  # vector candidates below this cosine are ignored
    chunk_bonus: float = 0.0  # x (second-best chunk cosine - min_similarity), added to the best
    stem: bool = False  # keyword side: query words also match by their stem as a prefix
    evidence: float = 0.0  # weight of a third RRF list: notes by 10 cos + 2 held + 0.5 in_title
    threshold: float = RELEVANCE_THRESHOLD  # no note reaches it: nothing is returned
    floor: float = RELEVANCE_FLOOR  # notes below it are not returned
    near: int = RELEVANCE_NEAR  # a note under the threshold is returned only at these ranks


@dataclass(frozen=True, slots=True)
class HybridHit:
    path: str
    title: str
    relevance: float  # 0..1, calibrated: how likely the note answers (``relevance``)
    snippet: str
    heading: str  # heading path of the best chunk ("" when it came from keywords only)
    score: float  # the fused score
    keyword_rank: int | None  # 1-based rank on each side, None when that side missed it
    vector_rank: int | None
    vector_score: float | None  # cosine similarity of the note's best chunk
    held: float = 0.0  # idf-weighted share of the query's words the note holds
    in_title: float = 0.0  # the same, in its title or aliases


@dataclass(frozen=True, slots=True)
class HybridResult:
    hits: list[HybridHit]
    total: int  # about how many notes match: any query word, or a chunk with cosine >= 0.3
    mode: Mode  # which sides ranked
    notice: str | None = None  # why the vector side was left out or is partial, when it is
    calibrated: bool = False  # relevance used vectors, so an empty list means "no answer"


_NOTHING_EMBEDDED = (
    "nothing is embedded yet, so this is ranked by keywords only (notes are embedded in the "
    "background by `vaultpilot serve` and `vaultpilot chat`, or by `vaultpilot embed`)"
)


def _vector_index(
    conn: sqlite3.Connection, embedder: Embedder | None, vectors: VectorIndex | VectorCache | None
) -> tuple[VectorIndex | None, str | None]:
    if embedder is None:
        return None, "no embedding model is configured or built; ranked by keywords only"
    try:
        model = ModelInfo(embedder.model_name, int(embedder.dimension))
    except EmbeddingServiceError as err:  # a remote embedder asks its server for the dimension
        return None, f"{err} Ranked by keywords only."
    index = vectors.get(conn) if isinstance(vectors, VectorCache) else vectors
    if index is None:
        return None, _NOTHING_EMBEDDED
    if index.model != model:
        return None, (
            f"the notes were embedded with {index.model.name}, not {model.name}; run "
            "`vaultpilot embed` to re-embed them. Ranked by keywords only"
        )
    if len(index) == 0:
        return None, _NOTHING_EMBEDDED
    chunks = index.signature[1]
    if len(index) < chunks:  # embedding still under way: say the ranking is partial
        return index, (
            f"meaning-based ranking covers {len(index)} of {chunks} note sections so far (the "
            "rest are still being embedded); notes not covered yet rank by their words"
        )
    return index, None


def _graph_scores(conn: sqlite3.Connection, seeds: list[tuple[int, float]]) -> dict[int, float]:
    """Credit each note linked to or from the seed notes, weighted by the seeds' scores."""
    if not seeds:
        return {}
    weight = dict(seeds)
    marks = ",".join("?" * len(seeds))
    ids = list(weight)
    rows = conn.execute(
        "SELECT l.source_id, l.target_id FROM links l JOIN files t ON t.id = l.target_id"  # noqa: S608
        f" WHERE t.is_note = 1 AND l.source_id != l.target_id AND (l.source_id IN ({marks})"
        f" OR l.target_id IN ({marks})) GROUP BY l.source_id, l.target_id",
        ids + ids,
    ).fetchall()
    out: dict[int, float] = {}
    for source, target in rows:
        if source in weight:
            out[target] = out.get(target, 0.0) + weight[source]
        if target in weight:
            out[source] = out.get(source, 0.0) + weight[target]
    return out


def _evidence(cosine: float | None, held: tuple[float, float] | None) -> float:
    words, title = held or (0.0, 0.0)
    return 10.0 * (cosine or 0.0) + 2.0 * words + 0.5 * title


def _rrf(ranked: list[int], weight: float, k: float, into: dict[int, float]) -> None:
    for rank, fid in enumerate(ranked, 1):
        into[fid] = into.get(fid, 0.0) + weight / (k + rank)


def _blend(scored: list[tuple[int, float]], weight: float, into: dict[int, float]) -> None:
    """Add ``weight`` x the score min-max normalised over this side's candidates."""
    if not scored:
        return
    low, high = min(s for _, s in scored), max(s for _, s in scored)
    for fid, s in scored:
        into[fid] = into.get(fid, 0.0) + weight * ((s - low) / (high - low) if high > low else 1.0)


def _vector_side(
    index: VectorIndex,
    embedder: Embedder,
    text: str,
    ids: set[int] | None,
    also: list[int],
    fusion: Fusion,
) -> tuple[list[ChunkMatch], dict[int, float], str | None]:
    """The notes nearest ``text`` by meaning and the cosine of each candidate (``also``: the
    keyword hits), or no hits and a notice when the embedding server failed."""
    try:
        query = embedder.embed([text])[0]
    except (EmbeddingServiceError, EmbeddingModelMissing) as err:  # must not stop search
        return [], {}, f"{err} Ranked by keywords only."
    found, cosines = index.note_matches(
        query,
        limit=fusion.pool,
        file_ids=None if ids is None else sorted(ids),
        also=also,
    )
    return [m for m in found if m.score >= fusion.min_similarity], cosines, None


def _add_graph(
    conn: sqlite3.Connection, fused: dict[int, float], ids: set[int] | None, fusion: Fusion
) -> None:
    """Rank the notes linked to or from the best fused ones (within the filter ``ids``) and
    add that ranking to ``fused``."""
    seeds = sorted(fused.items(), key=lambda kv: -kv[1])[: fusion.graph_seeds]
    top = seeds[0][1]
    graph = _graph_scores(conn, [(fid, s / top) for fid, s in seeds])
    if ids is not None:
        graph = {fid: s for fid, s in graph.items() if fid in ids}
    ranked = sorted(graph, key=lambda fid: (-graph[fid], fid))
    _rrf(ranked, fusion.graph, fusion.k, fused)


def _word_evidence(
    conn: sqlite3.Connection,
    text: str,
    order: list[int],
    kw_rank: dict[int, tuple[int, KeywordHit]],
    fusion: Fusion,
    seek: int,
    frequencies: dict[str, Frequency],
) -> dict[int, tuple[float, float]]:
    """``coverage`` of the candidates, the notes whose title holds every word looked at first."""
    every_word = [fid for fid, (_, hit) in kw_rank.items() if hit.all_words]
    candidates = set(order)
    titled = [fid for fid, (_, hit) in kw_rank.items() if hit.titled and fid in candidates]
    first = set(titled)
    return coverage(
        conn,
        text,
        titled + [fid for fid in order if fid not in first],
        stem=fusion.stem,
        holds_all=every_word,
        seek=seek,
        frequencies=frequencies,
    )


def _words_are_a_match(
    probability: dict[int, float],
    kw_rank: dict[int, tuple[int, KeywordHit]],
    held: dict[int, tuple[float, float]],
    threshold: float,
) -> None:
    """A note holding every word of the query (CJK and accent-free matches included), or at
    least half of the query's idf weight, is a match whatever the cosine says: the model is
    English-only, and a user who typed the note's own words is never told nothing was found."""
    for fid, (_, hit) in kw_rank.items():
        if (hit.all_words or held.get(fid, (0.0, 0.0))[0] >= _HELD_ENOUGH) and fid in probability:
            probability[fid] = max(probability[fid], threshold)


def _named_first(
    conn: sqlite3.Connection,
    text: str,
    order: list[int],
    probability: dict[int, float],
    threshold: float,
) -> list[int]:
    """``order`` with the notes whose title or an alias is the query itself first, when they
    are likely answers (reach ``threshold``): someone who types a note's name means that note,
    as Obsidian's quick switcher takes it, but a weak note does not go above strong ones."""
    name = " ".join(text.split())
    if not order or not name or len(name) > 200:
        return order
    named = {
        row[0]
        for row in conn.execute(
            "SELECT id FROM files WHERE title = ? COLLATE NOCASE AND is_note = 1"
            " UNION SELECT file_id FROM aliases WHERE alias_lower = ?",
            (name, name.lower()),
        )
    }
    named = {fid for fid in named if probability.get(fid, 0.0) >= threshold}
    if not named.intersection(order):
        return order
    return [fid for fid in order if fid in named] + [fid for fid in order if fid not in named]


def _likely(order: list[int], probability: dict[int, float], fusion: Fusion) -> list[int]:
    """The ranking as returned: nothing when the best note misses the threshold; else every
    note that reaches it, and those under it (down to the floor) only among the first few."""
    if max(probability.values(), default=0.0) < fusion.threshold:
        return []
    return [
        fid
        for rank, fid in enumerate(order)
        if probability[fid] >= fusion.threshold
        or (rank < fusion.near and probability[fid] >= fusion.floor)
    ]


def hybrid_search(
    conn: sqlite3.Connection,
    text: str,
    *,
    embedder: Embedder | None,
    vectors: VectorIndex | VectorCache | None,
    limit: int = 10,
    tag: str | None = None,
    folder: str | None = None,
    allowed: frozenset[str] | None = None,
    mode: Mode = "hybrid",
    fusion: Fusion | None = None,
) -> HybridResult:
    """The ``limit`` notes best matching ``text`` (see the module doc).

    ``tag`` (nested tags included), ``folder`` and ``allowed`` (a set of note paths) narrow the
    candidates. ``mode`` forces one side ("keyword", "vector") for evaluations. Never fails for
    want of vectors: no embedder, nothing embedded, another model's vectors or an unreachable
    embedding server all give the keyword ranking with a ``notice`` saying why. With vectors,
    notes whose calibrated relevance is below ``fusion.threshold`` are not returned, so a query
    the vault cannot answer gives no hits.
    """
    fusion = fusion or Fusion()
    limit = max(1, limit)
    ids = note_filter_ids(conn, tag=tag, folder=folder, allowed=allowed)
    index, notice = (None, None) if mode == "keyword" else _vector_index(conn, embedder, vectors)

    frequencies: dict[str, Frequency] = {}  # how many notes hold each word, for this query
    kw_hits: list[KeywordHit] = []
    kw_total = 0
    if mode != "vector":
        kw_hits, kw_total = keyword_side(
            conn, text, pool=fusion.pool, ids=ids, stem=fusion.stem, frequencies=frequencies
        )
    vec_hits: list[ChunkMatch] = []
    cosines: dict[int, float] = {}
    if index is not None and embedder is not None and ids != set():
        also = [h.file_id for h in kw_hits]
        vec_hits, cosines, failed = _vector_side(index, embedder, text, ids, also, fusion)
        notice = failed or notice
    sides: Mode = "hybrid" if kw_hits and vec_hits else ("vector" if vec_hits else "keyword")
    if mode == "vector":
        sides = "vector"
    if fusion.chunk_bonus > 0:  # several matching sections: more evidence than one
        bonus = {m.file_id: fusion.chunk_bonus * max(0.0, m.second - fusion.min_similarity)
                 for m in vec_hits}  # fmt: skip
        vec_hits.sort(key=lambda m: -(m.score + bonus[m.file_id]))

    kw_rank = {h.file_id: (i, h) for i, h in enumerate(kw_hits, 1)}
    vec_rank = {m.file_id: (i, m) for i, m in enumerate(vec_hits, 1)}
    fused: dict[int, float] = {}
    if fusion.method == "scores":
        _blend([(h.file_id, h.score) for h in kw_hits], fusion.keyword, fused)
        _blend([(m.file_id, m.score) for m in vec_hits], fusion.vector, fused)
    else:
        _rrf([h.file_id for h in kw_hits], fusion.keyword, fusion.k, fused)
        _rrf([m.file_id for m in vec_hits], fusion.vector, fusion.k, fused)
    if fusion.graph > 0 and mode == "hybrid" and len(fused) > 1:
        _add_graph(conn, fused, ids, fusion)
    order = sorted(fused, key=lambda fid: (-fused[fid], fid))
    if mode != "hybrid":
        order = [fid for fid in order if fid in kw_rank or fid in vec_rank]

    # Calibrated relevance of every candidate; with vectors, the unlikely ones are dropped.
    # Words held: a common word is looked up only in the notes that can still be shown (the
    # rest keep their rare-word evidence), so the cost does not grow with the vault.
    wordless = only_stop_words(text)  # held by nearly every note: no evidence of a match
    held: dict[int, tuple[float, float]] = {}
    if mode != "vector" and not wordless:
        held = _word_evidence(conn, text, order, kw_rank, fusion, limit + 10, frequencies)
    calibrated = index is not None and (mode == "vector" or bool(cosines))
    probability = {
        fid: relevance(cosines.get(fid) if calibrated else None, *held.get(fid, (0.0, 0.0)))
        for fid in order
    }
    _words_are_a_match(probability, {} if wordless else kw_rank, held, fusion.threshold)
    if fusion.evidence > 0 and calibrated:  # the evidence itself, as a third ranking
        ranked = sorted(order, key=lambda fid: -_evidence(cosines.get(fid), held.get(fid)))
        _rrf(ranked, fusion.evidence, fusion.k, fused)
        order.sort(key=lambda fid: (-fused[fid], fid))
    order = _named_first(conn, text, order, probability, fusion.threshold)
    if calibrated and fusion.threshold > 0:
        order = _likely(order, probability, fusion)
    # About how many notes match: those holding a word, plus clearly similar ones (a weak
    # cosine is not a match, even though it may fill the page); never more than passed.
    similar = sum(1 for m in vec_hits if m.score >= _SIMILAR and m.file_id not in kw_rank)
    chosen = order[:limit]
    total = max(kw_total + similar, len(chosen))
    if calibrated and fusion.threshold > 0:
        total = len(order)
    described = _describe(conn, text, chosen, fused, kw_rank, vec_rank)
    hits = _with_evidence(described, probability, cosines, held)
    return HybridResult(hits, total, sides, notice if mode != "keyword" else None, calibrated)


def _with_evidence(
    described: list[tuple[int, HybridHit]],
    probability: dict[int, float],
    cosines: dict[int, float],
    held: dict[int, tuple[float, float]],
) -> list[HybridHit]:
    """The hits with their evidence; the list reads best first, so a note shows at most the
    relevance of the one above it."""
    hits: list[HybridHit] = []
    shown = 1.0
    for fid, h in described:
        shown = min(shown, probability[fid])
        words, in_title = held.get(fid, (0.0, 0.0))
        hits.append(replace(
            h,
            relevance=round(shown, 3),
            vector_score=cosines.get(fid, h.vector_score),
            held=round(words, 3),
            in_title=round(in_title, 3),
        ))  # fmt: skip
    return hits


def _describe(
    conn: sqlite3.Connection,
    text: str,
    chosen: list[int],
    fused: dict[int, float],
    kw_rank: dict[int, tuple[int, KeywordHit]],
    vec_rank: dict[int, tuple[int, ChunkMatch]],
) -> list[tuple[int, HybridHit]]:
    """(file id, hit) for each chosen note still in the index, relevance left at 0."""
    if not chosen:
        return []
    marks = ",".join("?" * len(chosen))
    titles = {
        fid: (path, title)
        for fid, path, title in conn.execute(
            f"SELECT id, path, title FROM files WHERE id IN ({marks})",  # noqa: S608
            chosen,
        )
    }
    snippets = keyword_snippets(conn, text, [f for f in chosen if f in kw_rank])
    chunk_ids = [vec_rank[f][1].chunk_id for f in chosen if f in vec_rank]
    chunks = {
        cid: (heading, body)
        for cid, heading, body in conn.execute(
            f"SELECT id, heading, text FROM chunks WHERE id IN ({','.join('?' * len(chunk_ids))})",  # noqa: S608
            chunk_ids,
        )
    }
    out: list[tuple[int, HybridHit]] = []
    for fid in chosen:
        if fid not in titles:
            continue  # deleted since the vectors were loaded
        path, title = titles[fid]
        kr = kw_rank.get(fid)
        vr = vec_rank.get(fid)
        heading, snippet = "", snippets.get(fid, "")
        if vr is not None:
            chunk = chunks.get(vr[1].chunk_id)
            if chunk is not None:
                heading = chunk[0]
                if kr is None or vr[0] <= kr[0] or not snippet:
                    snippet = _excerpt(chunk[1])
        out.append((fid, HybridHit(
                path=path,
                title=title,
                relevance=0.0,
                snippet=snippet,
                heading=heading,
                score=fused[fid],
                keyword_rank=kr[0] if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_score=vr[1].score if vr else None,
        )))  # fmt: skip
    return out


def _excerpt(chunk_text: str, chars: int = 240) -> str:
    body = chunk_text.split("\n\n", 1)[-1]
    flat = " ".join(body.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rsplit(" ", 1)[0] + "…"
