"""Questions the index answers about notes and links: find a note, links, backlinks, unresolved
links; and excerpts whose highlights never break a link.

Every function takes an open index connection and returns frozen values. Keyword search lives
in ``index.search``. ``highlight`` and ``unmark_links`` build excerpts whose highlight markers
never land inside a link: a link whose text matched is marked whole. (Search snippets keep
FTS5's per-word markers: they say which words matched.)
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.vault.files import normalize_rel_path

__all__ = [
    "LinkRow",
    "UnresolvedRow",
    "backlinks",
    "find_note",
    "highlight",
    "outgoing_links",
    "unmark_links",
    "unresolved_links",
]


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
