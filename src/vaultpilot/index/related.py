"""Notes related to a note: links both ways, shared tags and similar text, fused and explained.

``related_notes(conn, path, vectors=...)`` scores every other note by the relations it has with
the reference note, and names them so a reader (or a model) sees why it was chosen:

* ``links here`` (a backlink) and ``linked from it`` (an outgoing link): 1.0 each, plus 0.05 for
  every further link up to four, so a note linked both ways ranks first;
* ``shares #tag``: 0.3 per shared tag, at most 0.9;
* ``similar text``: up to 0.6, from ``similar_notes``: BM25 for the note's title and most
  frequent words, averaged with vector similarity when the note is embedded (the mean of its
  chunk vectors against every other note's best chunk). In the link-prediction check of
  ``bench/eval_retrieval.py`` the two together find linked notes as well as BM25 alone and
  better than vectors alone; the vectors add notes on the same topic that share few words.

Relevance is the score scaled to the best related note (0..1). Attachments never appear.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

from vaultpilot.index.keyword_side import keyword_side
from vaultpilot.index.vectors import VectorCache, VectorIndex

__all__ = ["RelatedNote", "Similar", "related_notes", "similar_notes"]

_WORD = re.compile(r"[^\W\d_]{4,}")
_STOP_WORDS = (
    "about above after again also among because been before being below between both could does "
    "doing down during each every from further have having here into itself just more most once "
    "only other over same should some such than that their them then there these they this those "
    "through under until very were what when where which while will with would your yours note "
    "notes"
)
_STOP = frozenset(_STOP_WORDS.split())
_LOW, _HIGH = 0.3, 0.8  # cosine range mapped onto a similarity score of 0..1
_SIMILAR_WEIGHT = 0.6  # similar text alone never outweighs one link
_CANDIDATES = 25


@dataclass(frozen=True, slots=True)
class Similar:
    path: str
    score: float  # 0..1
    how: str  # "keyword+vector" or "keyword"


@dataclass(frozen=True, slots=True)
class RelatedNote:
    path: str
    relevance: float  # 0..1, scaled to the best related note
    relation: str  # why: "links here; shares #postgres; similar text"
    score: float
    similarity: float | None  # the similar-text score (0..1) when it counted


def _terms(title: str, body: str, count: int = 10) -> str:
    words = [w.lower() for w in _WORD.findall(body)]
    common = [w for w, _ in Counter(w for w in words if w not in _STOP).most_common(count)]
    return " ".join([title, *common])


def _index_of(
    conn: sqlite3.Connection, vectors: VectorIndex | VectorCache | None
) -> VectorIndex | None:
    return vectors.get(conn) if isinstance(vectors, VectorCache) else vectors


def similar_notes(
    conn: sqlite3.Connection,
    path: str,
    *,
    vectors: VectorIndex | VectorCache | None = None,
    limit: int = _CANDIDATES,
) -> list[Similar]:
    """Notes whose text is most like the note at ``path``, best first, scored 0..1.

    Two sides, each scaled to 0..1 and averaged: BM25 for the note's title and most frequent
    words (relative to the best match), and, when the note is embedded, the cosine between its
    mean chunk vector and each other note's best chunk (mapped from [0.3, 0.8]). Without
    vectors the keyword side alone counts.
    """
    row = conn.execute(
        "SELECT f.id, f.title, n.body FROM files f LEFT JOIN notes_fts n ON n.rowid = f.id"
        " WHERE f.path = ? AND f.is_note = 1",
        (path,),
    ).fetchone()
    if row is None:
        return []
    fid, title, body = row
    hits, _ = keyword_side(conn, _terms(title, body or ""), pool=limit + 1)
    best = max((h.score for h in hits if h.file_id != fid), default=0.0)
    keyword = {h.file_id: h.score / best for h in hits if h.file_id != fid and best > 0 < h.score}
    index = _index_of(conn, vectors)
    centroid = index.note_vector(fid) if index is not None else None
    vector: dict[int, float] = {}
    if index is not None and centroid is not None:
        for m in index.best_per_note(centroid, limit=limit, exclude=fid):
            if m.score > _LOW:
                vector[m.file_id] = min(1.0, (m.score - _LOW) / (_HIGH - _LOW))
    sides = 2 if centroid is not None else 1
    how = "keyword+vector" if sides == 2 else "keyword"
    combined = {i: (keyword.get(i, 0.0) + vector.get(i, 0.0)) / sides for i in {*keyword, *vector}}
    ids = _paths(conn, list(combined))
    ranked = sorted((i for i in combined if i in ids), key=lambda i: (-combined[i], ids[i]))
    return [Similar(ids[i], round(combined[i], 4), how) for i in ranked[:limit]]


def _paths(conn: sqlite3.Connection, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT id, path FROM files WHERE id IN ({marks}) AND is_note = 1",  # noqa: S608
        ids,
    )
    return {int(i): str(p) for i, p in rows}


def _by_links(conn: sqlite3.Connection, path: str) -> Iterator[tuple[str, float, str]]:
    """(other note, score, reason) for each note linked from or to ``path``."""
    rows = conn.execute(
        "SELECT 'out', t.path, COUNT(*) FROM links l JOIN files s ON s.id = l.source_id"
        " JOIN files t ON t.id = l.target_id WHERE s.path = ? AND t.is_note = 1 GROUP BY t.path"
        " UNION ALL SELECT 'in', s.path, COUNT(*) FROM links l JOIN files s ON s.id = l.source_id"
        " JOIN files t ON t.id = l.target_id WHERE t.path = ? GROUP BY s.path",
        (path, path),
    ).fetchall()
    for direction, other, n in rows:
        reason = "linked from it" if direction == "out" else "links here"
        yield other, 1.0 + 0.05 * min(n - 1, 4), reason


def _by_tags(conn: sqlite3.Connection, path: str) -> Iterator[tuple[str, float, str]]:
    """(other note, score, reason) for each tag a note shares with ``path``, three at most."""
    tags = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT t.tag_lower FROM tags t JOIN files f ON f.id = t.file_id"
            " WHERE f.path = ?",
            (path,),
        )
    ]
    shared: Counter[str] = Counter()
    for tag in tags:
        for (other,) in conn.execute(
            "SELECT DISTINCT f.path FROM tags t JOIN files f ON f.id = t.file_id"
            " WHERE t.tag_lower = ? AND f.is_note = 1",
            (tag,),
        ):
            if shared[other] < 3:
                shared[other] += 1
                yield other, 0.3, f"shares #{tag}"


def related_notes(
    conn: sqlite3.Connection,
    path: str,
    *,
    vectors: VectorIndex | VectorCache | None = None,
    limit: int | None = None,
    allowed: frozenset[str] | None = None,
) -> list[RelatedNote]:
    """Notes related to the note at ``path``, best first (see the module doc).

    ``allowed`` keeps only those paths; ``limit`` cuts the list (None: every related note).
    Returns ``[]`` for a path that is not an indexed note.
    """
    scores: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    similarity: dict[str, float] = {}

    def add(other: str, score: float, reason: str) -> None:
        if other == path or (allowed is not None and other not in allowed):
            return
        scores[other] = scores.get(other, 0.0) + score
        if reason not in reasons.setdefault(other, []):
            reasons[other].append(reason)

    for other, score, reason in chain(_by_links(conn, path), _by_tags(conn, path)):
        add(other, score, reason)

    for item in similar_notes(conn, path, vectors=vectors):
        if item.score > 0:
            add(item.path, _SIMILAR_WEIGHT * item.score, "similar text")
            if item.path != path and (allowed is None or item.path in allowed):
                similarity[item.path] = round(item.score, 3)

    if not scores:
        return []
    top = max(scores.values())
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if limit is not None:
        ranked = ranked[: max(0, limit)]
    return [
        RelatedNote(p, round(s / top, 3), "; ".join(reasons[p]), s, similarity.get(p))
        for p, s in ranked
    ]
