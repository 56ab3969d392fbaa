"""The keyword evidence of search: notes holding *any* query word, and how much of the query
each note holds.

* ``search_any`` runs ``queries.search`` with the words joined by OR (same BM25 weights, same
  snippets): the fallback of keyword-only search when no note holds every word.
* ``keyword_side`` is the keyword half of hybrid search: FTS5 BM25 (title, aliases, headings,
  body weighted as ``queries.search``) over notes holding any query word, English stop words
  left out, notes holding every word first. With ``stem`` a word also matches by its stem as a
  prefix (``searches`` finds ``search`` and ``searching``): the index itself is not stemmed, so
  this is done on the query side.
* ``coverage`` says, for given notes, which share of the query's words (weighted by how rare
  each word is in the vault) the note holds anywhere, and in its title or aliases: the keyword
  evidence of the calibrated relevance (``hybrid.relevance``), comparable across queries where
  BM25 is not.

Every function reads only; CJK text also goes through the trigram table (``queries.search``).
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass

from vaultpilot.index.queries import BM25_WEIGHTS, CJK, SearchHit, search

__all__ = [
    "KeywordHit",
    "any_word_query",
    "content_words",
    "coverage",
    "keyword_side",
    "search_any",
    "word_term",
]

_STOP_WORDS = (
    "a about after all also am an and any are as at be been before being but by can could did do "
    "does doing done for from get got had has have having he her here hers him his how i if in "
    "into is it its just me mine my of on or our ours out over she should so some than that the "
    "their them then there these they this those to too up us was we were what when where which "
    "while who whom why will with would you your yours"
)
_STOP = frozenset(_STOP_WORDS.split())
# Longest first; a stem keeps at least four letters, so "uses" -> "use" is left alone
# ("use" would prefix-match "user") and short words match exactly.
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ed", "es", "ly", "s")


@dataclass(frozen=True, slots=True)
class KeywordHit:
    file_id: int
    score: float  # BM25, higher is better
    all_words: bool  # the note holds every query word


def any_word_query(text: str) -> str:
    """An FTS5 expression matching any word of ``text`` ("" when it has no words)."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    return " OR ".join(f'"{w}"' for w in words)


def search_any(
    conn: sqlite3.Connection,
    text: str,
    *,
    tag: str | None = None,
    folder: str | None = None,
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[SearchHit], int]:
    """Notes matching any word of ``text``, best first; returns (hits, total)."""
    if not any_word_query(text):
        return [], 0
    return search(
        conn, text, tag=tag, folder=folder, limit=limit, offset=offset,
        any_word=True,
    )  # fmt: skip


def content_words(text: str) -> list[str]:
    """The query's distinct lower-cased words, stop words left out (all of them when every
    word is a stop word)."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    kept = [w for w in words if w not in _STOP]
    return kept or words


def _stem(word: str) -> str:
    if word.isdigit() or CJK.search(word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def word_term(word: str, *, stem: bool) -> str:
    """The FTS5 term for one query word: quoted, or its stem as a prefix with ``stem``."""
    if not stem:
        return f'"{word}"'
    root = _stem(word)
    return f'"{root}"*' if len(root) >= 4 and not root.isdigit() else f'"{word}"'


def keyword_side(
    conn: sqlite3.Connection,
    text: str,
    *,
    pool: int,
    ids: set[int] | None = None,
    stem: bool = False,
) -> tuple[list[KeywordHit], int]:
    """Notes matching any word of ``text`` by BM25, those with every word first; (hits, total)."""
    words = content_words(text)
    if not words:
        return [], 0
    terms = [word_term(w, stem=stem) for w in words]
    hits: dict[int, KeywordHit] = {}
    take = pool if ids is None else max(pool, 1000)
    queries = [(" ".join(terms), True)] if len(words) > 1 else []
    queries.append((" OR ".join(terms), len(words) == 1))
    total = 0
    for match, all_words in queries:
        rows = conn.execute(
            f"SELECT rowid, bm25(notes_fts, {BM25_WEIGHTS}) AS rank FROM notes_fts"  # noqa: S608
            " WHERE notes_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, take),
        ).fetchall()
        for fid, rank in rows:
            if (ids is None or fid in ids) and fid not in hits:
                hits[fid] = KeywordHit(fid, -float(rank), all_words)
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
            KeywordHit(id_of[p], h.score, True)
            for p, h in zip(paths, found, strict=True)
            if p in id_of and (ids is None or id_of[p] in ids)
        ]
        seen = {h.file_id for h in cjk}
        ordered = cjk + [h for h in ordered if h.file_id not in seen]
        total = max(total, len(ordered))
    if ids is not None:
        total = len(ordered)
    return ordered[:pool], total


def coverage(
    conn: sqlite3.Connection, text: str, ids: list[int], *, stem: bool = True
) -> dict[int, tuple[float, float]]:
    """For each note of ``ids``: (share of the query's words it holds anywhere, share it holds
    in its title or aliases), each word weighted by its BM25 idf in the vault, so a rare word
    counts more than a common one. Notes holding none are left out."""
    words = content_words(text)
    if not ids or not words:
        return {}
    notes = _note_count(conn)
    wanted = set(ids)
    held: dict[int, list[float]] = {}
    weights: list[float] = []
    for word in words:
        term = word_term(word, stem=stem)
        # Each term's whole doclist, intersected here: "MATCH ? AND rowid IN (...)" makes FTS5
        # test every id against the doclist and cost 10-20x more on a 10k-note vault, and the
        # doclist's length is the word's document frequency as well.
        rows = [int(r[0]) for r in conn.execute(_ROWIDS, (term,))]
        df = len(rows)
        weight = math.log(1.0 + (notes - df + 0.5) / (df + 0.5))
        weights.append(weight)
        for fid in wanted.intersection(rows):
            held.setdefault(fid, [0.0, 0.0])[0] += weight
        if df:
            for (fid,) in conn.execute(_ROWIDS, ("{title aliases}: " + term,)):
                if fid in wanted:
                    held.setdefault(int(fid), [0.0, 0.0])[1] += weight
    total = sum(weights) or 1.0
    return {fid: (w[0] / total, w[1] / total) for fid, w in held.items()}


_ROWIDS = "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?"


def _note_count(conn: sqlite3.Connection) -> int:
    """How many notes the FTS table holds (at least 1)."""
    try:
        # FTS5's docsize shadow table has one row per document: counting it takes 0.1 ms on
        # 10k notes, where COUNT(*) on the FTS table reads every note's text (~14 ms).
        row = conn.execute("SELECT COUNT(*) FROM notes_fts_docsize").fetchone()
    except sqlite3.OperationalError:  # a table built without it (columnsize=0)
        row = conn.execute("SELECT COUNT(*) FROM notes_fts").fetchone()
    return int(row[0]) or 1
