"""Hybrid search: BM25 keywords, chunk vectors and the link graph, fused into one ranking.

``hybrid_search(conn, text, embedder=..., vectors=...)`` ranks notes for a free-text query:

* **keyword side**: FTS5 BM25 (title, aliases, headings, body weighted as ``queries.search``)
  for notes holding *any* of the query's words, English stop words left out, so a question such
  as "when is the dentist appointment?" is not reduced to notes containing "is" and "the".
  Notes holding every word rank first. Queries with Chinese, Japanese or Korean text also use
  the trigram table, and accents are ignored, so non-English text always ranks through here.
* **vector side**: the query's embedding against every embedded chunk (``vectors.VectorIndex``);
  a note scores by its best chunk, whose heading and text become the snippet.
* **fusion**: weighted reciprocal rank fusion, ``sum(w / (k + rank))`` over the sides
  (``Fusion``; the defaults were chosen on ``bench/eval_retrieval.py``). An optional **graph**
  pass adds a rank-fusion term for notes linked to or from the best results; it is off by
  default because it lowered MRR in the evaluation (the link graph ranks ``related_notes``).

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

import re
import sqlite3
from dataclasses import dataclass
from typing import Literal

from vaultpilot.index.embedding.base import Embedder, EmbeddingServiceError
from vaultpilot.index.queries import BM25_WEIGHTS, CJK, folder_filter_sql, search, tag_filter_sql
from vaultpilot.index.vectors import ChunkMatch, ModelInfo, VectorCache, VectorIndex
from vaultpilot.vault.files import normalize_rel_path

__all__ = [
    "Fusion",
    "HybridHit",
    "HybridResult",
    "hybrid_search",
    "keyword_side",
    "note_filter_ids",
]

_STOP_WORDS = (
    "a about after all also am an and any are as at be been before being but by can could did do "
    "does doing done for from get got had has have having he her here hers him his how i if in "
    "into is it its just me mine my of on or our ours out over she should so some than that the "
    "their them then there these they this those to too up us was we were what when where which "
    "while who whom why will with would you your yours"
)
_STOP = frozenset(_STOP_WORDS.split())
Mode = Literal["hybrid", "keyword", "vector"]
_SIMILAR = 0.3  # a cosine from which a note counts towards ``total``


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the sides are combined. The defaults won on ``bench/eval_retrieval.py --sweep``
    (docs/benchmarks.md): plain RRF with k=60 and equal weights was as good as any tuned
    variant and more robust than score fusion, and every form of graph credit *lowered* MRR on
    free-text questions, so the graph pass is off for search (it ranks ``related_notes``)."""

    method: Literal["rrf", "scores"] = "rrf"  # "scores": min-max normalised score blend
    k: float = 60.0  # the RRF constant
    keyword: float = 1.0  # weight of the keyword side (RRF), or its share of the blend
    vector: float = 1.0  # weight of the vector side
    graph: float = 0.0  # weight of the link-graph pass (0: off)
    graph_seeds: int = 5  # how many of the best results spread credit to their links
    pool: int = 50  # candidates taken from each side
    min_similarity: float = 0.15  # vector candidates below this cosine are ignored


@dataclass(frozen=True, slots=True)
class HybridHit:
    path: str
    title: str
    relevance: float  # 0..1, the fused score scaled to the best hit of this query
    snippet: str
    heading: str  # heading path of the best chunk ("" when it came from keywords only)
    score: float  # the fused score
    keyword_rank: int | None  # 1-based rank on each side, None when that side missed it
    keyword_score: float | None  # BM25, higher is better
    vector_rank: int | None
    vector_score: float | None  # cosine similarity of the note's best chunk
    graph_score: float | None


@dataclass(frozen=True, slots=True)
class HybridResult:
    hits: list[HybridHit]
    total: int  # about how many notes match: any query word, or a chunk with cosine >= 0.3
    mode: Mode  # which sides ranked
    notice: str | None = None  # why the vector side was left out or is partial, when it is


@dataclass(frozen=True, slots=True)
class _KeywordHit:
    file_id: int
    score: float
    all_words: bool


def _words(text: str) -> list[str]:
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    kept = [w for w in words if w not in _STOP]
    return kept or words


def note_filter_ids(
    conn: sqlite3.Connection,
    *,
    tag: str | None = None,
    folder: str | None = None,
    allowed: frozenset[str] | None = None,
) -> set[int] | None:
    """Ids of the notes passing the filters, or None when there is no filter."""
    if tag is None and folder is None and allowed is None:
        return None
    where = ["is_note = 1"]
    args: list[object] = []
    if tag:
        sub, targs = tag_filter_sql(tag)
        where.append(f"id IN ({sub})")
        args.extend(targs)
    if folder:
        cond, fargs = folder_filter_sql("path_lower", normalize_rel_path(folder))
        where.append(cond)
        args.extend(fargs)
    rows = conn.execute(f"SELECT id, path FROM files WHERE {' AND '.join(where)}", args)  # noqa: S608
    return {fid for fid, path in rows if allowed is None or path in allowed}


def keyword_side(
    conn: sqlite3.Connection, text: str, *, pool: int, ids: set[int] | None = None
) -> tuple[list[_KeywordHit], int]:
    """Notes matching any word of ``text`` by BM25, those with every word first; (hits, total)."""
    words = _words(text)
    if not words:
        return [], 0
    quoted = [f'"{w}"' for w in words]
    hits: dict[int, _KeywordHit] = {}
    take = pool if ids is None else max(pool, 1000)
    queries = [(" ".join(quoted), True)] if len(words) > 1 else []
    queries.append((" OR ".join(quoted), len(words) == 1))
    total = 0
    for match, all_words in queries:
        rows = conn.execute(
            f"SELECT rowid, bm25(notes_fts, {BM25_WEIGHTS}) AS rank FROM notes_fts"  # noqa: S608
            " WHERE notes_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, take),
        ).fetchall()
        for fid, rank in rows:
            if (ids is None or fid in ids) and fid not in hits:
                hits[fid] = _KeywordHit(fid, -float(rank), all_words)
        if not all_words:
            total = int(
                conn.execute(
                    "SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH ?", (match,)
                ).fetchone()[0]
            )
    ordered = sorted(hits.values(), key=lambda h: (not h.all_words, -h.score))
    if CJK.search(text):
        # ``queries.search`` also looks CJK words up in the trigram table, so words written
        # without spaces are found; its ranking (all words) goes first.
        found, _ = search(conn, text, limit=pool)
        paths = [h.path for h in found]
        marks = ",".join("?" * len(paths))
        id_of = dict(conn.execute(f"SELECT path, id FROM files WHERE path IN ({marks})", paths))  # noqa: S608
        cjk = [
            _KeywordHit(id_of[p], h.score, True)
            for p, h in zip(paths, found, strict=True)
            if p in id_of and (ids is None or id_of[p] in ids)
        ]
        seen = {h.file_id for h in cjk}
        ordered = cjk + [h for h in ordered if h.file_id not in seen]
        total = max(total, len(ordered))
    if ids is not None:
        total = len(ordered)
    return ordered[:pool], total


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
    embedding server all give the keyword ranking with a ``notice`` saying why.
    """
    fusion = fusion or Fusion()
    limit = max(1, limit)
    ids = note_filter_ids(conn, tag=tag, folder=folder, allowed=allowed)
    index, notice = (None, None) if mode == "keyword" else _vector_index(conn, embedder, vectors)

    kw_hits: list[_KeywordHit] = []
    kw_total = 0
    if mode != "vector":
        kw_hits, kw_total = keyword_side(conn, text, pool=fusion.pool, ids=ids)
    vec_hits: list[ChunkMatch] = []
    if index is not None and embedder is not None and ids != set():
        try:
            query = embedder.embed([text])[0]
        except EmbeddingServiceError as err:  # a remote server down must not stop search
            query, notice = None, f"{err} Ranked by keywords only."
        if query is not None:
            found = index.best_per_note(
                query, limit=fusion.pool, file_ids=None if ids is None else sorted(ids)
            )
            vec_hits = [m for m in found if m.score >= fusion.min_similarity]
    sides: Mode = "hybrid" if kw_hits and vec_hits else ("vector" if vec_hits else "keyword")
    if mode == "vector":
        sides = "vector"

    kw_rank = {h.file_id: (i, h) for i, h in enumerate(kw_hits, 1)}
    vec_rank = {m.file_id: (i, m) for i, m in enumerate(vec_hits, 1)}
    fused: dict[int, float] = {}
    if fusion.method == "scores":
        _blend([(h.file_id, h.score) for h in kw_hits], fusion.keyword, fused)
        _blend([(m.file_id, m.score) for m in vec_hits], fusion.vector, fused)
    else:
        _rrf([h.file_id for h in kw_hits], fusion.keyword, fusion.k, fused)
        _rrf([m.file_id for m in vec_hits], fusion.vector, fusion.k, fused)
    graph: dict[int, float] = {}
    if fusion.graph > 0 and mode == "hybrid" and len(fused) > 1:
        seeds = sorted(fused.items(), key=lambda kv: -kv[1])[: fusion.graph_seeds]
        top = seeds[0][1]
        graph = _graph_scores(conn, [(fid, s / top) for fid, s in seeds])
        if ids is not None:
            graph = {fid: s for fid, s in graph.items() if fid in ids}
        ranked = sorted(graph, key=lambda fid: (-graph[fid], fid))
        _rrf(ranked, fusion.graph, fusion.k, fused)
    order = sorted(fused, key=lambda fid: (-fused[fid], fid))
    if mode != "hybrid":
        order = [fid for fid in order if fid in kw_rank or fid in vec_rank]
    # About how many notes match: those holding a word, plus clearly similar ones (a weak
    # cosine is not a match, even though it may fill the page).
    similar = sum(1 for m in vec_hits if m.score >= _SIMILAR and m.file_id not in kw_rank)
    chosen = order[:limit]
    total = max(kw_total + similar, len(chosen))
    return HybridResult(
        _describe(conn, text, chosen, fused, kw_rank, vec_rank, graph),
        total,
        sides,
        notice if mode != "keyword" else None,
    )


def _describe(
    conn: sqlite3.Connection,
    text: str,
    chosen: list[int],
    fused: dict[int, float],
    kw_rank: dict[int, tuple[int, _KeywordHit]],
    vec_rank: dict[int, tuple[int, ChunkMatch]],
    graph: dict[int, float],
) -> list[HybridHit]:
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
    snippets = _keyword_snippets(conn, text, [f for f in chosen if f in kw_rank])
    chunk_ids = [vec_rank[f][1].chunk_id for f in chosen if f in vec_rank]
    chunks = {
        cid: (heading, body)
        for cid, heading, body in conn.execute(
            f"SELECT id, heading, text FROM chunks WHERE id IN ({','.join('?' * len(chunk_ids))})",  # noqa: S608
            chunk_ids,
        )
    }
    best = fused[chosen[0]] or 1.0
    out: list[HybridHit] = []
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
        out.append(
            HybridHit(
                path=path,
                title=title,
                relevance=round(fused[fid] / best, 3),
                snippet=snippet,
                heading=heading,
                score=fused[fid],
                keyword_rank=kr[0] if kr else None,
                keyword_score=kr[1].score if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_score=vr[1].score if vr else None,
                graph_score=graph.get(fid),
            )
        )
    return out


def _excerpt(chunk_text: str, chars: int = 240) -> str:
    body = chunk_text.split("\n\n", 1)[-1]
    flat = " ".join(body.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rsplit(" ", 1)[0] + "…"


def _keyword_snippets(conn: sqlite3.Connection, text: str, ids: list[int]) -> dict[int, str]:
    words = _words(text)
    if not ids or not words:
        return {}
    match = " OR ".join(f'"{w}"' for w in words)
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        "SELECT rowid, snippet(notes_fts, -1, '**', '**', '…', 16) FROM notes_fts"  # noqa: S608
        f" WHERE notes_fts MATCH ? AND rowid IN ({marks})",
        [match, *ids],
    ).fetchall()
    return {int(fid): str(s) for fid, s in rows}
