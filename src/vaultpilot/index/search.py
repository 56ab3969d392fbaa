"""Keyword retrieval: every FTS5 query and every tag/folder filter the rankers and tools use.

One module so that words are split, FTS5 expressions built, BM25 weighted and filters written
one way only:

* ``search`` (every word, or "quoted phrase", must occur) and ``search_any`` (one word is
  enough; notes holding more of them rank higher) rank notes by FTS5 BM25, title weighted above
  aliases, headings and body, and return a snippet. Text with CJK characters is also looked up
  in the trigram table, so words written without spaces are found. Accents are ignored
  (``creme`` finds ``crème``). ``keyword_search`` is the keyword ranking of ``semantic_search``:
  every word, else any word, optionally kept to a set of paths.
* ``keyword_snippets`` gives the snippets of the keyword side's notes (the keyword side itself
  and the word coverage are in ``keyword_side``); in a large index it takes them from a scratch
  copy of those notes in an in-memory database of the calling thread.
* ``filter_sql`` (tags, nested tags included, and a folder at any depth, as index ranges rather
  than LIKE scans) and ``note_filter_ids`` are the one way a note filter becomes SQL.

Every function takes an open index connection (or none) and reads only.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.index.doclists import note_count
from vaultpilot.vault.files import normalize_rel_path

__all__ = [
    "BM25_WEIGHTS",
    "CJK",
    "POOL",
    "SCRATCH_FROM",
    "KeywordResult",
    "SearchHit",
    "content_words",
    "filter_sql",
    "folder_filter_sql",
    "fts_query",
    "keyword_search",
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
BM25_WEIGHTS = "10.0, 5.0, 3.0, 1.0, 1.0"  # title, aliases, headings, body, properties
_TOKEN = re.compile(r'"([^"]+)"|(\S+)')
_WORD = re.compile(r"\w+")
_SNIPPET = "snippet(notes_fts, -1, '**', '**', '…', 16)"
POOL = 1000  # hits considered when a set of allowed paths narrows the results afterwards
# From this many notes, snippets are taken from a scratch copy of the shown notes (see
# ``keyword_snippets``): a page of ten at 1,000 notes 0.31 ms in the index, 0.56 ms copied; at
# 10,000 0.62-0.69 ms against 0.47 ms; at 50,000 0.89 against 0.48 ms.
SCRATCH_FROM = 5_000

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


def only_stop_words(text: str) -> bool:
    """Whether every word of the query is a stop word ("the", "not and or"): its words say
    nothing about which note is meant."""
    words = query_words(text)
    return bool(words) and all(w.lower() in _STOP for w in words)


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
    pool = limit if allowed is None else max(limit, POOL)
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


# --- Snippets ----------------------------------------------------------------------------------


def keyword_snippets(
    conn: sqlite3.Connection, text: str, ids: list[int], *, scratch_from: int = SCRATCH_FROM
) -> dict[int, str]:
    """FTS5 snippets (matched words marked ``**``) of the notes ``ids`` for any word of ``text``.

    In the index each note's snippet is a ``MATCH ? AND rowid = ?`` that seeks every word's
    doclist in every segment: cheap in a small index (~30 µs a note at 1,000 notes), ~70 µs a
    note at 50,000. FTS5 makes a snippet from the row alone (its text and where the words occur
    in it), so in an index of ``scratch_from`` notes or more the notes are copied into a scratch
    FTS5 table made by the index's own ``CREATE`` statement (the same columns and tokenizer) in
    an in-memory database of this thread, and their snippets taken there, in a transaction that
    is rolled back: the same snippets at a cost that follows the notes' length (~45 µs a note of
    ~1,300 characters), not the vault's size.
    """
    words = content_words(text)
    if not ids or not words:
        return {}
    match = " OR ".join(word_term(w, stem=False) for w in words)
    wanted = list(dict.fromkeys(ids))
    if note_count(conn) < scratch_from:
        return _in_index(conn, match, wanted)
    marks = ",".join("?" * len(wanted))
    cursor = conn.execute(
        f"SELECT rowid, * FROM notes_fts WHERE rowid IN ({marks})",  # noqa: S608
        wanted,
    )
    rows = cursor.fetchall()
    if not rows:
        return {}
    columns = [d[0] for d in cursor.description]  # rowid, then the table's own columns
    insert = f"INSERT INTO notes_fts ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})"  # noqa: S608
    scratch = _scratch(conn)
    scratch.execute("BEGIN")
    try:
        scratch.executemany(insert, rows)
        found = dict(
            scratch.execute(
                f"SELECT rowid, {_SNIPPET} FROM notes_fts WHERE notes_fts MATCH ?",  # noqa: S608
                (match,),
            )
        )
    finally:
        scratch.execute("ROLLBACK")
    return {fid: str(found[fid]) for fid in wanted if fid in found}


def _in_index(conn: sqlite3.Connection, match: str, ids: list[int]) -> dict[int, str]:
    # One note at a time: with "rowid IN (...)" FTS5 reads the words' whole doclists, which
    # grow with the vault; a rowid lookup does not.
    out: dict[int, str] = {}
    for fid in ids:
        row = conn.execute(
            f"SELECT {_SNIPPET} FROM notes_fts WHERE notes_fts MATCH ? AND rowid = ?",  # noqa: S608
            (match, fid),
        ).fetchone()
        if row is not None:
            out[fid] = str(row[0])
    return out


_SCRATCH = threading.local()  # per thread: {the index's CREATE of notes_fts: in-memory database}


def _scratch(conn: sqlite3.Connection) -> sqlite3.Connection:
    """This thread's in-memory database holding an empty copy of ``conn``'s ``notes_fts``."""
    (create,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'notes_fts'"
    ).fetchone()
    made: dict[str, sqlite3.Connection] = _SCRATCH.__dict__.setdefault("made", {})
    scratch = made.get(create)
    if scratch is None:
        scratch = sqlite3.connect(":memory:", isolation_level=None)
        scratch.execute(create)
        made[create] = scratch
    return scratch
