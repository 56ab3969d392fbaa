"""Questions the index answers: keyword search, links, backlinks, unresolved links, lookups.

Every function takes an open index connection and returns frozen values. Keyword search uses
FTS5 with BM25 (title weighted above aliases, headings and body) and returns a snippet; text with
CJK characters is also looked up in the trigram table, so words written without spaces are found.
Accents are ignored (``creme`` finds ``crème``). ``highlight`` and ``unmark_links`` build
excerpts whose highlight markers never land inside a link: a link whose text matched is marked
whole. (Search snippets keep FTS5's per-word markers: they say which words matched.)
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.vault.files import normalize_rel_path

__all__ = [
    "BM25_WEIGHTS",
    "CJK",
    "LinkRow",
    "SearchHit",
    "UnresolvedRow",
    "backlinks",
    "find_note",
    "folder_filter_sql",
    "fts_query",
    "highlight",
    "outgoing_links",
    "search",
    "tag_filter_sql",
    "unmark_links",
    "unresolved_links",
]

# Characters of scripts written without spaces (kana, CJK ideographs, hangul): text holding them is
# also kept in, and searched through, the trigram table.
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_TOKEN = re.compile(r'"([^"]+)"|(\S+)')
BM25_WEIGHTS = "10.0, 5.0, 3.0, 1.0"  # title, aliases, headings, body


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    title: str
    score: float  # higher is better
    snippet: str


@dataclass(frozen=True, slots=True)
class LinkRow:
    source: str
    target: str | None  # the resolved vault path, or None when unresolved
    target_text: str
    subpath: str
    alias: str | None
    kind: str
    syntax: str
    line: int


@dataclass(frozen=True, slots=True)
class UnresolvedRow:
    source: str
    target_text: str
    count: int


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 expression: every word (or "quoted phrase") must occur."""
    parts: list[str] = []
    for m in _TOKEN.finditer(text):
        phrase = m.group(1) or m.group(2)
        words = re.findall(r"\w+", phrase)
        if words:
            parts.append('"' + " ".join(words) + '"')
    return " ".join(dict.fromkeys(parts))  # a repeated word adds nothing but cost


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


def search(
    conn: sqlite3.Connection,
    text: str,
    *,
    tag: str | None = None,
    folder: str | None = None,
    limit: int = 10,
    offset: int = 0,
    any_word: bool = False,
) -> tuple[list[SearchHit], int]:
    """Keyword search; returns (hits, total number of matching notes).

    Every word (or "quoted phrase") must occur; with ``any_word`` one is enough, and notes
    holding more of them rank higher (the fallback when no note holds them all).
    """
    if limit < 1:
        raise InvalidArgumentError("limit must be at least 1.")
    match = fts_query(text).replace('" "', '" OR "') if any_word else fts_query(text)
    if not match:
        raise InvalidArgumentError(
            f"The query {text!r} has no words to search for; give at least one word."
        )
    where = ["notes_fts MATCH ?"]
    args: list[object] = [match]
    if tag:
        sub, targs = tag_filter_sql(tag)
        where.append(f"notes_fts.rowid IN ({sub})")
        args.extend(targs)
    if folder:
        cond, fargs = folder_filter_sql("f.path_lower", normalize_rel_path(folder))
        where.append(cond)
        args.extend(fargs)
    clause = " AND ".join(where)
    # The folder filter needs the files table; without it the count stays inside FTS5.
    source = "notes_fts JOIN files f ON f.id = notes_fts.rowid" if folder else "notes_fts"
    total = conn.execute(f"SELECT COUNT(*) FROM {source} WHERE {clause}", args).fetchone()[0]  # noqa: S608
    # Rank first, then build snippets for the page only: SQLite would otherwise compute a
    # snippet for every matching note before sorting (2x slower on common words).
    rows = conn.execute(
        f"WITH top AS (SELECT notes_fts.rowid AS id, bm25(notes_fts, {BM25_WEIGHTS}) AS rank"  # noqa: S608
        f" FROM {source} WHERE {clause} ORDER BY rank LIMIT ? OFFSET ?)"
        " SELECT f.path, f.title, top.rank, snippet(notes_fts, -1, '**', '**', '…', 16)"
        " FROM top JOIN notes_fts ON notes_fts.rowid = top.id AND notes_fts MATCH ?"
        " JOIN files f ON f.id = top.id ORDER BY top.rank",
        [*args, limit, offset, match],
    ).fetchall()
    hits = [SearchHit(p, t, -float(r), s) for p, t, r, s in rows]
    if CJK.search(text):
        hits, total = _merge_cjk(conn, text, hits, total, limit, tag, folder)
    return hits, total


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
    cond = " AND ".join("c.text LIKE ?" for _ in words)
    args: list[object] = [f"%{w}%" for w in words]
    sql = (
        "SELECT f.path, f.title, c.text FROM cjk_fts c JOIN files f ON f.id = c.rowid"  # noqa: S608
        f" WHERE {cond}"
    )
    if tag:
        sub, targs = tag_filter_sql(tag)
        sql += f" AND f.id IN ({sub})"
        args.extend(targs)
    extra: list[SearchHit] = []
    for path, title, body in conn.execute(sql, args):
        if folder and not path.lower().startswith(folder.lower().strip("/") + "/"):
            continue
        if path in seen:
            continue
        at = body.find(words[0])
        snippet = body[max(0, at - 30) : at + 60].replace("\n", " ")
        extra.append(SearchHit(path, title, float(sum(body.count(w) for w in words)), snippet))
    extra.sort(key=lambda h: (-h.score, h.path))
    return (extra + hits)[:limit], total + len(extra)


def find_note(conn: sqlite3.Connection, name: str) -> str:
    """The vault path a user means by ``name``: a path (with or without .md) or a note title."""
    canon = normalize_rel_path(name.strip())
    low = canon.lower()
    for candidate in (low, low + ".md"):
        row = conn.execute(
            "SELECT path FROM files WHERE path_lower = ? AND is_note = 1", (candidate,)
        ).fetchone()
        if row:
            return str(row[0])
    title = canon.rsplit("/", 1)[-1]
    if title.lower().endswith(".md"):
        title = title[:-3]
    rows = [
        r[0]
        for r in conn.execute(
            "SELECT path FROM files WHERE title = ? COLLATE NOCASE AND is_note = 1"
            " ORDER BY length(path), path",
            (title,),
        )
    ]
    if "/" in canon:
        rows = [r for r in rows if r.lower().endswith("/" + low.removesuffix(".md") + ".md")]
    if len(rows) == 1:
        return str(rows[0])
    if not rows:
        raise NotFoundError(
            f"No note named '{name}' in the index. Check the spelling, search with "
            "`vaultpilot search`, or run `vaultpilot index` if it was just created."
        )
    listing = ", ".join(rows[:10])
    raise InvalidArgumentError(
        f"'{name}' matches {len(rows)} notes ({listing}); give the full path of the one you mean."
    )


_LINK_COLS = (
    "s.path, t.path, l.target_text, l.subpath, l.alias, l.kind, l.syntax, l.line"
    " FROM links l JOIN files s ON s.id = l.source_id LEFT JOIN files t ON t.id = l.target_id"
)


def outgoing_links(conn: sqlite3.Connection, path: str) -> list[LinkRow]:
    """Links written in the note at ``path``, in order, with their resolved targets."""
    rows = conn.execute(
        f"SELECT {_LINK_COLS} WHERE s.path = ? ORDER BY l.line, l.rowid",
        (path,),
    )
    return [LinkRow(*r) for r in rows]


def backlinks(conn: sqlite3.Connection, path: str) -> list[LinkRow]:
    """Links from other notes (and the note itself) that resolve to ``path``."""
    row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if row is None:
        return []
    rows = conn.execute(
        f"SELECT {_LINK_COLS} WHERE l.target_id = ? ORDER BY s.path, l.line",
        (row[0],),
    )
    return [LinkRow(*r) for r in rows]


def unresolved_links(conn: sqlite3.Connection) -> list[UnresolvedRow]:
    """Obsidian's ``unresolvedLinks``: per source note, each unresolved target and its count."""
    rows = conn.execute(
        "SELECT s.path, l.target_text, COUNT(*) FROM links l JOIN files s ON s.id = l.source_id"
        " WHERE l.target_id IS NULL GROUP BY s.path, l.target_text COLLATE NOCASE"
        " ORDER BY s.path, l.target_text"
    )
    return [UnresolvedRow(*r) for r in rows]


# --- Excerpts: highlight words without breaking link syntax -------------------------------------

# A wikilink or embed, or a markdown link's destination, possibly cut short by the end of an
# excerpt. (A markdown link's text may hold emphasis, ``[**word** text](dest)``; its destination
# and every part of a wikilink may not.)
_LINK_SPAN = re.compile(r"!?\[\[[^\[\]\n]*(?:\]\]|$)|\]\([^()\n]*(?:\)|$)", re.MULTILINE)
_MARK = "**"


def _link_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _LINK_SPAN.finditer(text)]
    # An excerpt that starts inside a link: everything up to its first ']]' belongs to it.
    close = text.find("]]")
    if close >= 0 and "[[" not in text[:close] and "\n" not in text[:close]:
        spans.insert(0, (0, close + 2))
    return spans


def _is_destination(text: str, span: tuple[int, int]) -> bool:
    return text.startswith("](", span[0])


def unmark_links(snippet: str) -> str:
    """``snippet`` with no highlight markers inside a link: a marked wikilink is marked whole.

    FTS5 marks matched words wherever they are, which breaks ``[[**Database** Migration]]``. A
    markdown link's destination just loses its markers; its text may keep them.
    """
    if _MARK not in snippet:
        return snippet
    out: list[str] = []
    pos = 0
    for start, end in _link_spans(snippet):
        inner = snippet[start:end]
        if _MARK in inner:
            inner = inner.replace(_MARK, "")
            if not _is_destination(snippet, (start, end)):
                inner = _MARK + inner + _MARK
        out.append(snippet[pos:start])
        out.append(inner)
        pos = end
    out.append(snippet[pos:])
    return "".join(out).replace(_MARK * 2, "")


def highlight(text: str, words: list[str]) -> str:
    """Mark the first occurrence of each word in ``text`` with ``**``, never inside a link.

    A word found only inside a wikilink marks the whole link (``**[[Database Migration]]**``),
    which keeps the link intact and still shows where the match is; one found only in a markdown
    link's destination is not marked.
    """
    spans = _link_spans(text)
    low = text.lower()
    marks: dict[tuple[int, int], None] = {}
    for word in dict.fromkeys(w.lower() for w in words if w.strip()):
        at = low.find(word)
        while at >= 0:
            span = next((s for s in spans if s[0] <= at < s[1]), None)
            if span is None:
                marks[(at, at + len(word))] = None
                break
            at = low.find(word, span[1])
            if at < 0 and not _is_destination(text, span):
                marks[span] = None
    chosen: list[tuple[int, int]] = []
    for start, end in sorted(marks):
        if not chosen or start >= chosen[-1][1]:
            chosen.append((start, end))
    for start, end in reversed(chosen):
        text = text[:start] + _MARK + text[start:end] + _MARK + text[end:]
    return text
