"""The keyword half of hybrid search, and the word evidence of the calibrated relevance.

* ``keyword_side``: notes holding any of the query's words, ranked by FTS5 BM25 (title, aliases,
  headings, body weighted as ``search.BM25_WEIGHTS``), English stop words left out, notes whose
  title or aliases hold every word first (however common the words: on a large vault the notes that
  link to "Sprint Timeline" hold its words too, and must not crowd the note itself out), then notes
  holding every word. Text with CJK characters is also looked up in the trigram table. With ``stem``
  a word also matches by its stem as a prefix (``searches`` finds ``search`` and ``searching``): the
  index itself is not stemmed, so this is done on the query side. Without a filter its cost does not
  grow with the vault: words held by more than ``doclists.COMMON`` notes are not scored (see its
  doc).
* ``coverage`` says, for given notes, which share of the query's words (weighted by how rare
  each word is in the vault) the note holds anywhere, and in its title or aliases: the keyword
  evidence of the calibrated relevance (``hybrid.relevance``), comparable across queries where
  BM25 is not.

Every function takes an open index connection and reads only.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from vaultpilot.index.doclists import (
    ROWIDS,
    Frequency,
    brevity,
    doc_frequency,
    holders,
    newest,
    note_count,
    title_words,
    titled_newest,
)
from vaultpilot.index.search import BM25_WEIGHTS, CJK, POOL, content_words, search, word_term

__all__ = ["KeywordHit", "coverage", "keyword_side"]


@dataclass(frozen=True, slots=True)
class KeywordHit:
    file_id: int
    score: float  # BM25, higher is better
    all_words: bool  # the note holds every query word
    titled: bool = False  # its title or aliases hold every query word


def keyword_side(
    conn: sqlite3.Connection,
    text: str,
    *,
    pool: int,
    ids: set[int] | None = None,
    stem: bool = False,
    frequencies: dict[str, Frequency] | None = None,
) -> tuple[list[KeywordHit], int]:
    """Notes matching any word of ``text`` by BM25, those with every word first; (hits, total).

    Without a filter the work is kept to about ``doclists.COMMON`` notes per word, whatever the
    vault's size (BM25 reads the whole doclist of every word it scores, and scores every note
    a statement matches): only words held by at most ``COMMON`` notes are scored; a common
    word still decides which notes hold every word. A query of common words only ranks the
    notes with one of them in the title or aliases first, then the newest notes holding them
    (the window in which each is held by at most ``COMMON``). ``total`` is then an
    estimate. ``frequencies`` caches ``doclists.doc_frequency`` for the query (``coverage``
    takes it too).
    """
    words = content_words(text)
    if not words:
        return [], 0
    terms = [word_term(w, stem=stem) for w in words]
    df = _frequencies(conn, terms, frequencies)
    take = pool if ids is None else max(pool, POOL)
    every, scored = _gather(conn, terms, df, take, bounded=ids is None)
    score = dict(scored)
    low = min(score.values(), default=0.0)
    # Notes found holding every word but not scored (common words only): shorter ones first.
    score.update(brevity(conn, [f for f, v in every if v is None and f not in score]))
    hits: dict[int, KeywordHit] = {}
    # Title or alias holding every word: a column-filtered lookup reads only the words'
    # doclists and scores the few notes that match.
    titled = _bm25(conn, "{title aliases}: (" + " AND ".join(terms) + ")", take)
    for fid, bm25 in titled:
        if ids is None or fid in ids:
            hits[fid] = KeywordHit(fid, bm25, True, titled=True)
    for fid, value in every:
        if (ids is None or fid in ids) and fid not in hits:
            hits[fid] = KeywordHit(fid, score.get(fid, low) if value is None else value, True)
    for fid, value in scored:
        if (ids is None or fid in ids) and fid not in hits:
            hits[fid] = KeywordHit(fid, value, len(words) == 1)
    total = _any_word_total(conn, terms, df)
    ordered = sorted(hits.values(), key=lambda h: (not h.titled, not h.all_words, -h.score))
    if CJK.search(text):
        ordered = _cjk_first(conn, text, ordered, pool, ids)
        total = max(total, len(ordered))
    if ids is not None:
        total = len(ordered)
    return ordered[:pool], total


def _gather(
    conn: sqlite3.Connection,
    terms: list[str],
    df: dict[str, Frequency],
    take: int,
    *,
    bounded: bool,
) -> tuple[list[tuple[int, float | None]], list[tuple[int, float]]]:
    """(notes holding every word with their BM25 when scored, notes holding some word with a
    score, best first). ``bounded``: keep to the rare words' doclists (no filter follows,
    which would need the whole ranking)."""
    found = [t for t in terms if df[t].notes]
    rare = [t for t in found if not (bounded and df[t].common)]
    rarest = min(terms, key=lambda t: df[t].notes)
    every: list[tuple[int, float | None]] = []  # notes holding every word (and their BM25)
    scored: list[tuple[int, float]] = []  # notes holding some, best first
    if len(rare) == len(terms):  # every word is rare: BM25 over all of them
        if len(terms) > 1:
            every = list(_bm25(conn, " ".join(terms), take))
        scored = _bm25(conn, " OR ".join(rare), take)
    elif rare:  # BM25 over the rare words; the common ones only test which notes hold all
        scored = _bm25(conn, " OR ".join(rare), None if bounded else take)
    elif found:  # common words only: title or alias matches, then the newest
        since = max(df[t].since for t in found)
        scored = titled_newest(conn, " OR ".join(found), since, take)
    if not every and len(terms) > 1 and df[rarest].notes:
        every = [(f, None) for f in newest(conn, " ".join(terms), df[rarest].since, take)]
    return every, scored


def _cjk_first(
    conn: sqlite3.Connection, text: str, ordered: list[KeywordHit], pool: int, ids: set[int] | None
) -> list[KeywordHit]:
    """``search`` also looks CJK words up in the trigram table, so words written without
    spaces are found; its ranking (all words) goes first."""
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
    return cjk + [h for h in ordered if h.file_id not in seen]


def _frequencies(
    conn: sqlite3.Connection, terms: list[str], cache: dict[str, Frequency] | None
) -> dict[str, Frequency]:
    cache = {} if cache is None else cache
    for t in terms:
        if t not in cache:
            cache[t] = doc_frequency(conn, t)
    return {t: cache[t] for t in terms}


def _bm25(conn: sqlite3.Connection, match: str, limit: int | None) -> list[tuple[int, float]]:
    """(note id, BM25 with higher better) of the notes matching ``match``, best first."""
    rows = conn.execute(
        f"SELECT rowid, bm25(notes_fts, {BM25_WEIGHTS}) AS rank FROM notes_fts"  # noqa: S608
        " WHERE notes_fts MATCH ? ORDER BY rank LIMIT ?",
        (match, -1 if limit is None else limit),
    )
    return [(int(fid), -float(rank)) for fid, rank in rows]


def coverage(
    conn: sqlite3.Connection,
    text: str,
    ids: list[int],
    *,
    stem: bool = True,
    holds_all: Iterable[int] = (),
    seek: int | None = None,
    frequencies: dict[str, Frequency] | None = None,
) -> dict[int, tuple[float, float]]:
    """For each note of ``ids``: (share of the query's words it holds anywhere, share it holds
    in its title or aliases), each word weighted by its BM25 idf in the vault, so a rare word
    counts more than a common one. Notes holding none are left out.

    ``holds_all``: notes already known to hold every word (the all-words ranking's hits).
    ``seek``: a common word (``doclists.COMMON``) is looked up note by note in the first
    ``seek`` notes of ``ids`` only (all by default); the others get no credit for it.
    ``frequencies``: the query's cache of ``doclists.doc_frequency`` (``keyword_side``'s).
    """
    words = content_words(text)
    if not ids or not words:
        return {}
    notes = note_count(conn)
    wanted = set(ids)
    known = wanted.intersection(holds_all)
    looked_up = set(ids[:seek]) if seek is not None else wanted
    titles: dict[int, set[str]] | None = None
    held: dict[int, list[float]] = {}
    weights: list[float] = []
    for word in words:
        term = word_term(word, stem=stem)
        df = _frequencies(conn, [term], frequencies)[term]
        weight = math.log(1.0 + (notes - df.notes + 0.5) / (df.notes + 0.5))
        weights.append(weight)
        if not df.notes:
            continue
        rest = (looked_up if df.common else wanted) - known
        for fid in known | holders(conn, term, df, rest):
            held.setdefault(fid, [0.0, 0.0])[0] += weight
        if not df.common:
            for (fid,) in conn.execute(ROWIDS, ("{title aliases}: " + term,)):
                if fid in wanted:
                    held.setdefault(int(fid), [0.0, 0.0])[1] += weight
            continue
        # A common word's title doclist is as long as its body one: read the titles instead.
        titles = title_words(conn, looked_up) if titles is None else titles
        root = term.strip('"*')
        prefix = term.endswith("*")
        for fid, tokens in titles.items():
            if any(t.startswith(root) for t in tokens) if prefix else root in tokens:
                held.setdefault(fid, [0.0, 0.0])[1] += weight
    total = sum(weights) or 1.0
    return {fid: (w[0] / total, w[1] / total) for fid, w in held.items()}


def _any_word_total(conn: sqlite3.Connection, terms: list[str], df: dict[str, Frequency]) -> int:
    """How many notes hold any of ``terms``: counted when that is cheap, else estimated from
    each word's note count as if they occurred independently."""
    if len(terms) == 1:
        return df[terms[0]].notes
    if not any(f.common for f in df.values()):
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH ?", (" OR ".join(terms),)
            ).fetchone()[0]
        )
    notes = note_count(conn)
    missing = 1.0
    for t in terms:
        missing *= 1.0 - min(1.0, df[t].notes / notes)
    return max(*(f.notes for f in df.values()), round(notes * (1.0 - missing)))
