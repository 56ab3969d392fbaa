"""Keyword retrieval: every FTS5 query and every tag/folder filter the rankers and tools use.

One module so that words are split, FTS5 expressions built, BM25 weighted and filters written
one way only:

* ``search`` (every word, or "quoted phrase", must occur) and ``search_any`` (one word is
  enough; notes holding more of them rank higher) rank notes by FTS5 BM25, title weighted above
  aliases, headings and body, and return a snippet. Text with CJK characters is also looked up
  in the trigram table, so words written without spaces are found. Accents are ignored
  (``creme`` finds ``crème``). ``keyword_search`` is the keyword ranking of ``semantic_search``:
  every word, else any word, optionally kept to a set of paths.
* ``keyword_side`` is the keyword half of hybrid search: notes holding any query word, English
  stop words left out, notes holding every word first. With ``stem`` a word also matches by its
  stem as a prefix (``searches`` finds ``search`` and ``searching``): the index itself is not
  stemmed, so this is done on the query side. ``keyword_snippets`` gives those notes' snippets.
* ``coverage`` says, for given notes, which share of the query's words (weighted by how rare
  each word is in the vault) the note holds anywhere, and in its title or aliases: the keyword
  evidence of the calibrated relevance (``hybrid.relevance``), comparable across queries where
  BM25 is not.
* ``filter_sql`` (tags, nested tags included, and a folder at any depth, as index ranges rather
  than LIKE scans) and ``note_filter_ids`` are the one way a note filter becomes SQL.

Every function takes an open index connection (or none) and reads only.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.index.doclists import (
    Frequency,
    brevity,
    doc_frequency,
    holders,
    newest,
    note_count,
    title_words,
    titled_newest,
)
from vaultpilot.vault.files import normalize_rel_path

__all__ = [
    "BM25_WEIGHTS",
    "CJK",
    "KeywordHit",
    "KeywordResult",
    "SearchHit",
    "content_words",
    "coverage",
    "filter_sql",
    "folder_filter_sql",
    "fts_query",
    "keyword_search",
    "keyword_side",
    "keyword_snippets",
    "note_filter_ids",
    "query_words",
    "search",
    "search_any",
    "tag_filter_sql",
    "word_term",
]

# Characters of scripts written without spaces (kana, CJK ideographs, hangul): text holding them is
# also kept in, and searched through, the trigram table.
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
BM25_WEIGHTS = "10.0, 5.0, 3.0, 1.0"  # title, aliases, headings, body
_TOKEN = re.compile(r'"([^"]+)"|(\S+)')
_WORD = re.compile(r"\w+")
_SNIPPET = "snippet(notes_fts, -1, '**', '**', '…', 16)"
_ROWIDS = "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?"
_POOL = 1000  # hits considered when a set of allowed paths narrows the results afterwards

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
class SearchHit:
    path: str
    title: str
    score: float  # higher is better
    snippet: str


@dataclass(frozen=True, slots=True)
class KeywordHit:
    file_id: int
    score: float  # BM25, higher is better
    all_words: bool  # the note holds every query word


@dataclass(frozen=True, slots=True)
class KeywordResult:
    hits: list[SearchHit]
    total: int  # how many notes match in all
    any_word: bool  # no note held every word; these hold some of them


# --- Words and FTS5 expressions -----------------------------------------------------------------


def query_words(text: str) -> list[str]:
    """The distinct words of ``text`` in order, as written."""
    return list(dict.fromkeys(_WORD.findall(text)))


def content_words(text: str) -> list[str]:
    """The query's distinct lower-cased words, stop words left out (all of them when every
    word is a stop word)."""
    words = list(dict.fromkeys(w.lower() for w in query_words(text)))
    kept = [w for w in words if w not in _STOP]
    return kept or words


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 expression: every word (or "quoted phrase") must occur."""
    parts: list[str] = []
    for m in _TOKEN.finditer(text):
        words = _WORD.findall(m.group(1) or m.group(2))
        if words:
            parts.append('"' + " ".join(words) + '"')
    return " ".join(dict.fromkeys(parts))  # a repeated word adds nothing but cost


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


# --- Filters ------------------------------------------------------------------------------------


def _prefix_range(column: str, value: str) -> tuple[str, list[str]]:
    """SQL matching ``value`` or anything under ``value/`` (an index range, no LIKE scan)."""
    low = value.lower().strip("/")
    return f"({column} = ? OR ({column} >= ? AND {column} < ?))", [low, low + "/", low + "0"]


def folder_filter_sql(column: str, folder: str) -> tuple[str, list[str]]:
    """SQL fragment keeping paths inside ``folder`` at any depth (an index range, no LIKE)."""
    low = folder.lower().strip("/")
    return f"{column} >= ? AND {column} < ?", [low + "/", low + "0"]


def tag_filter_sql(tag: str) -> tuple[str, list[str]]:
    """SQL fragment selecting file ids with ``tag`` or a tag nested under it."""
    cond, args = _prefix_range("tag_lower", tag.lstrip("#"))
    return f"SELECT file_id FROM tags WHERE {cond}", args  # noqa: S608


def filter_sql(
    *, tags: Iterable[str] = (), folder: str | None = None, ids: str, paths: str
) -> tuple[list[str], list[object]]:
    """WHERE conditions keeping files with every tag (or one nested under it) that lie inside
    ``folder`` at any depth; ``ids`` and ``paths`` name the file id and lower-cased path
    columns."""
    where: list[str] = []
    args: list[object] = []
    for tag in tags:
        sub, targs = tag_filter_sql(tag)
        where.append(f"{ids} IN ({sub})")
        args.extend(targs)
    if folder:
        cond, fargs = folder_filter_sql(paths, folder)
        where.append(cond)
        args.extend(fargs)
    return where, args


def _tags(tag: str | None) -> tuple[str, ...]:
    return (tag,) if tag else ()


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
    where, args = filter_sql(
        tags=_tags(tag), folder=normalize_rel_path(folder) if folder else None,
        ids="id", paths="path_lower",
    )  # fmt: skip
    clause = " AND ".join(["is_note = 1", *where])
    rows = conn.execute(f"SELECT id, path FROM files WHERE {clause}", args)  # noqa: S608
    return {fid for fid, path in rows if allowed is None or path in allowed}


# --- Ranked search with snippets ----------------------------------------------------------------


def search(
    conn: sqlite3.Connection,
    text: str,
    *,
    tag: str | None = None,
    folder: str | None = None,
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[SearchHit], int]:
    """Keyword search; returns (hits, total number of matching notes).

    Every word (or "quoted phrase") must occur.
    """
    return _search(conn, text, fts_query(text), tag, folder, limit, offset)


def search_any(
    conn: sqlite3.Connection,
    text: str,
    *,
    tag: str | None = None,
    folder: str | None = None,
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[SearchHit], int]:
    """Notes holding any word of ``text``, those holding more of them first; (hits, total).

    The fallback when no note holds them all; a text without words finds nothing.
    """
    if not query_words(text):
        return [], 0
    match = fts_query(text).replace('" "', '" OR "')
    return _search(conn, text, match, tag, folder, limit, offset)


def _search(
    conn: sqlite3.Connection,
    text: str,
    match: str,
    tag: str | None,
    folder: str | None,
    limit: int,
    offset: int,
) -> tuple[list[SearchHit], int]:
    if limit < 1:
        raise InvalidArgumentError("limit must be at least 1.")
    if not match:
        raise InvalidArgumentError(
            f"The query {text!r} has no words to search for; give at least one word."
        )
    folder = normalize_rel_path(folder) if folder else None
    where, args = filter_sql(tags=_tags(tag), folder=folder, ids="notes_fts.rowid",
                             paths="f.path_lower")  # fmt: skip
    clause = " AND ".join(["notes_fts MATCH ?", *where])
    args.insert(0, match)
    # The folder filter needs the files table; without it the count stays inside FTS5.
    source = "notes_fts JOIN files f ON f.id = notes_fts.rowid" if folder else "notes_fts"
    total = conn.execute(f"SELECT COUNT(*) FROM {source} WHERE {clause}", args).fetchone()[0]  # noqa: S608
    # Rank first, then build snippets for the page only: SQLite would otherwise compute a
    # snippet for every matching note before sorting (2x slower on common words).
    rows = conn.execute(
        f"WITH top AS (SELECT notes_fts.rowid AS id, bm25(notes_fts, {BM25_WEIGHTS}) AS rank"  # noqa: S608
        f" FROM {source} WHERE {clause} ORDER BY rank LIMIT ? OFFSET ?)"
        f" SELECT f.path, f.title, top.rank, {_SNIPPET}"
        " FROM top JOIN notes_fts ON notes_fts.rowid = top.id AND notes_fts MATCH ?"
        " JOIN files f ON f.id = top.id ORDER BY top.rank",
        [*args, limit, offset, match],
    ).fetchall()
    hits = [SearchHit(p, t, -float(r), s) for p, t, r, s in rows]
    if CJK.search(text):
        hits, total = _merge_cjk(conn, text, hits, total, limit, tag, folder)
    return hits, int(total)


def _merge_cjk(
    conn: sqlite3.Connection,
    text: str,
    hits: list[SearchHit],
    total: int,
    limit: int,
    tag: str | None,
    folder: str | None,
) -> tuple[list[SearchHit], int]:
    words = [w for w in text.split() if w]
    seen = {h.path for h in hits}
    # Trigram MATCH needs three characters; shorter words use LIKE over the (small) CJK table.
    where, args = filter_sql(tags=_tags(tag), folder=folder, ids="f.id", paths="f.path_lower")
    clause = " AND ".join(["c.text LIKE ?" for _ in words] + where)
    rows = conn.execute(
        "SELECT f.path, f.title, c.text FROM cjk_fts c JOIN files f ON f.id = c.rowid"  # noqa: S608
        f" WHERE {clause}",
        [*(f"%{w}%" for w in words), *args],
    )
    extra: list[SearchHit] = []
    for path, title, body in rows:
        if path in seen:
            continue
        at = body.find(words[0])
        snippet = body[max(0, at - 30) : at + 60].replace("\n", " ")
        extra.append(SearchHit(path, title, float(sum(body.count(w) for w in words)), snippet))
    extra.sort(key=lambda h: (-h.score, h.path))
    return (extra + hits)[:limit], total + len(extra)


def keyword_search(
    conn: sqlite3.Connection,
    text: str,
    *,
    limit: int,
    tag: str | None = None,
    folder: str | None = None,
    allowed: frozenset[str] | None = None,
) -> KeywordResult:
    """The best ``limit`` notes holding every word of ``text``, else those holding any of them;
    ``allowed`` keeps only those paths (and ``total`` then counts the kept ones)."""
    pool = limit if allowed is None else max(limit, _POOL)
    any_word = False
    hits, total = search(conn, text, tag=tag, folder=folder, limit=pool)
    if allowed is not None:
        hits = [h for h in hits if h.path in allowed]
        total = len(hits)
    if not hits:
        hits, total = search_any(conn, text, tag=tag, folder=folder, limit=pool)
        if allowed is not None:
            hits = [h for h in hits if h.path in allowed]
            total = len(hits)
        any_word = bool(hits)
    return KeywordResult(hits[:limit], total, any_word)


# --- The keyword side of hybrid search ----------------------------------------------------------


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
    take = pool if ids is None else max(pool, _POOL)
    every, scored = _gather(conn, terms, df, take, bounded=ids is None)
    score = dict(scored)
    low = min(score.values(), default=0.0)
    # Notes found holding every word but not scored (common words only): shorter ones first.
    score.update(brevity(conn, [f for f, v in every if v is None and f not in score]))
    hits: dict[int, KeywordHit] = {}
    for fid, value in every:
        if ids is None or fid in ids:
            hits[fid] = KeywordHit(fid, score.get(fid, low) if value is None else value, True)
    for fid, value in scored:
        if (ids is None or fid in ids) and fid not in hits:
            hits[fid] = KeywordHit(fid, value, len(words) == 1)
    total = _any_word_total(conn, terms, df)
    ordered = sorted(hits.values(), key=lambda h: (not h.all_words, -h.score))
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


def keyword_snippets(conn: sqlite3.Connection, text: str, ids: list[int]) -> dict[int, str]:
    """FTS5 snippets (matched words marked ``**``) of the notes ``ids`` for any word of ``text``."""
    words = content_words(text)
    if not ids or not words:
        return {}
    match = " OR ".join(word_term(w, stem=False) for w in words)
    # One note at a time: with "rowid IN (...)" FTS5 reads the words' whole doclists, which
    # grow with the vault; a rowid lookup does not.
    out: dict[int, str] = {}
    for fid in dict.fromkeys(ids):
        row = conn.execute(
            f"SELECT {_SNIPPET} FROM notes_fts WHERE notes_fts MATCH ? AND rowid = ?",  # noqa: S608
            (match, fid),
        ).fetchone()
        if row is not None:
            out[fid] = str(row[0])
    return out


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
            for (fid,) in conn.execute(_ROWIDS, ("{title aliases}: " + term,)):
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
