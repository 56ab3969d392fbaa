"""Find notes by metadata: tags (nested included), folder, properties, created and modified dates.

``find_notes(conn, NoteFilter(...), order=..., limit=..., offset=...)`` returns the matching note
paths and how many match in all. ``page_notes(..., count_up_to=N)`` returns one page the same
way, but counts the matches only up to ``N`` (``NotePage.exact`` says whether the count is the
whole), so a page of a filter matching half of a 50,000-note vault costs about what it costs on a
small vault: the count stops at ``N``, and when more than ``N`` notes match, the newest are found
by walking the modification-time index from the newest note down (stopping at the page's last
note) instead of sorting every match. Every condition of a filter must hold. How each is read:

* ``tags``: the note has each tag, or a tag nested under it (``project`` matches
  ``project/active``), in frontmatter or in the body; case-insensitive.
* ``folder``: the note lies in the folder or below it.
* a property condition: ``eq`` (text compares case-insensitively and also matches a link
  ``[[value]]``; numbers and booleans compare as such; a list property matches when any item
  does), ``ne``, ``in`` (any of several values), ``contains`` (a substring of the text, or of any
  list item), ``gt``/``gte``/``lt``/``lte`` (numbers as numbers; other values as text, which
  orders ISO dates correctly), ``exists`` (true or false).
* ``modified``: the file's modification time, in nanoseconds since the epoch.
* ``created``: the note's ``created`` property, else its ``date`` property, else the local date
  of its modification time; compared as ``YYYY-MM-DD`` text.
* ``date`` (the note's date, what "notes from last week" means): its ``date`` property, else its
  ``created`` property (each only when it starts with a real ``YYYY-MM-DD`` date), else a date at
  the start or end of its file name (``2025-11-12``, ``2023-09-12 Meeting``, ``Review
  2025-10-16``), else the local date of its modification time. ``note_dates`` gives each note's
  date with its source (``date``, ``created``, ``filename`` or ``modified``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from vaultpilot.index.lookup import path_chunks
from vaultpilot.index.search import filter_sql as _tag_folder_sql

__all__ = [
    "NoteDate",
    "NoteFilter",
    "NotePage",
    "Order",
    "PropertyCondition",
    "filter_sql",
    "find_notes",
    "note_dates",
    "page_notes",
]

Op = Literal["eq", "ne", "in", "contains", "gt", "gte", "lt", "lte", "exists"]
Order = Literal["modified", "path", "created", "date"]
DateSource = Literal["date", "created", "filename", "modified"]
Scalar = str | int | float | bool | None

_CMP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_CREATED = (
    "COALESCE((SELECT substr(p.value, 1, 10) FROM properties p WHERE p.file_id = f.id"
    " AND p.key_lower IN ('created', 'date') AND p.value IS NOT NULL"
    " ORDER BY p.key_lower = 'date' LIMIT 1),"
    " date(f.mtime_ns / 1000000000, 'unixepoch', 'localtime'))"
)

_DAY_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"


def _prop_date(key: str) -> str:
    # ``key`` is one of our own constants ('date', 'created'), never user text.
    return (
        "(SELECT substr(p.value, 1, 10) FROM properties p WHERE p.file_id = f.id"  # noqa: S608
        f" AND p.key_lower = '{key}' AND p.value GLOB '{_DAY_GLOB}*'"
        " AND date(substr(p.value, 1, 10)) IS NOT NULL LIMIT 1)"
    )


# A date at the start or end of the file name, when it is a real day.
_NAME_DATE = (
    f"(CASE WHEN f.title GLOB '{_DAY_GLOB}*' AND date(substr(f.title, 1, 10)) IS NOT NULL"
    " THEN substr(f.title, 1, 10)"
    f" WHEN f.title GLOB '*{_DAY_GLOB}' AND date(substr(f.title, -10)) IS NOT NULL"
    " THEN substr(f.title, -10) END)"
)
_MTIME_DATE = "date(f.mtime_ns / 1000000000, 'unixepoch', 'localtime')"
_NOTE_DATE = f"COALESCE({_prop_date('date')}, {_prop_date('created')}, {_NAME_DATE}, {_MTIME_DATE})"
_DATE_SOURCE = (
    f"CASE WHEN {_prop_date('date')} IS NOT NULL THEN 'date'"
    f" WHEN {_prop_date('created')} IS NOT NULL THEN 'created'"
    f" WHEN {_NAME_DATE} IS NOT NULL THEN 'filename' ELSE 'modified' END"
)


@dataclass(frozen=True, slots=True)
class NoteDate:
    """A note's date (``YYYY-MM-DD``) and where it was read from."""

    date: str
    source: DateSource


@dataclass(frozen=True, slots=True)
class PropertyCondition:
    key: str
    op: Op
    value: Scalar | tuple[Scalar, ...] = None


@dataclass(frozen=True, slots=True)
class NoteFilter:
    tags: tuple[str, ...] = ()
    folder: str | None = None
    properties: tuple[PropertyCondition, ...] = ()
    modified_from_ns: int | None = None
    modified_to_ns: int | None = None
    created_from: str | None = None  # YYYY-MM-DD, inclusive
    created_to: str | None = None  # YYYY-MM-DD, inclusive
    date_from: str | None = None  # the note's date (see the module docstring), inclusive
    date_to: str | None = None
    # Notes and folders left out (lower-cased paths without '.md': a note, or a folder and all
    # below it), as the vault's rules hide them: neither listed nor counted; ``shown`` are the
    # entries inside them that a longer rule opens again.
    hidden: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _equals(value: Scalar) -> tuple[str, list[object]]:
    if isinstance(value, bool):
        return "p.value = ?", ["true" if value else "false"]
    if isinstance(value, int | float):
        return "(p.num = ? OR p.value = ?)", [float(value), str(value)]
    if value is None:
        return "p.value IS NULL", []
    text = str(value)
    return (
        "(p.value = ? COLLATE NOCASE OR p.value = ? COLLATE NOCASE OR p.value LIKE ? ESCAPE '\\')",
        [text, f"[[{text}]]", f"[[{_escape_like(text)}|%]]"],
    )


def _property_sql(cond: PropertyCondition) -> tuple[str, list[object]]:
    head = "SELECT 1 FROM properties p WHERE p.file_id = f.id AND p.key_lower = ?"
    args: list[object] = [cond.key.lower()]
    if cond.op == "exists":
        return ("EXISTS" if cond.value is not False else "NOT EXISTS") + f" ({head})", args
    if cond.op in ("eq", "ne", "in"):
        values = cond.value if isinstance(cond.value, tuple) else (cond.value,)
        parts = [_equals(v) for v in values]
        where = " OR ".join(p[0] for p in parts) or "0"
        for p in parts:
            args.extend(p[1])
        prefix = "NOT EXISTS" if cond.op == "ne" else "EXISTS"
        return f"{prefix} ({head} AND ({where}))", args
    if cond.op == "contains":
        args.append(f"%{_escape_like(str(cond.value))}%")
        return f"EXISTS ({head} AND p.value LIKE ? ESCAPE '\\')", args
    sign = _CMP[cond.op]
    if isinstance(cond.value, int | float) and not isinstance(cond.value, bool):
        args.append(float(cond.value))
        return f"EXISTS ({head} AND p.num IS NOT NULL AND p.num {sign} ?)", args
    args.append(str(cond.value))
    return f"EXISTS ({head} AND p.value IS NOT NULL AND p.value {sign} ?)", args


def filter_sql(filt: NoteFilter) -> tuple[str, list[object]]:
    """A WHERE clause over ``files f`` selecting the notes that match ``filt``."""
    where, args = _tag_folder_sql(
        tags=filt.tags, folder=filt.folder, ids="f.id", paths="f.path_lower"
    )
    where.insert(0, "f.is_note = 1")
    for cond in filt.properties:
        sql, pargs = _property_sql(cond)
        where.append(sql)
        args.extend(pargs)
    bounds = (
        ("f.mtime_ns >= ?", filt.modified_from_ns), ("f.mtime_ns <= ?", filt.modified_to_ns),
        (f"{_CREATED} >= ?", filt.created_from), (f"{_CREATED} <= ?", filt.created_to),
        (f"{_NOTE_DATE} >= ?", filt.date_from), (f"{_NOTE_DATE} <= ?", filt.date_to),
    )  # fmt: skip
    for sql, value in bounds:
        if value is not None:
            where.append(sql)
            args.append(value)
    if filt.hidden:
        hidden, hargs = _covered(filt.hidden)
        shown, sargs = _covered(filt.shown) if filt.shown else ("0", [])
        where.append(f"NOT ({hidden} AND NOT {shown})")
        args.extend([*hargs, *sargs])
    return " AND ".join(where), args


def _covered(entries: tuple[str, ...]) -> tuple[str, list[object]]:
    """A condition true for a note that is one of ``entries`` or lies in one (see NoteFilter)."""
    one = "f.path_lower = ? OR f.path_lower = ? OR f.path_lower LIKE ? ESCAPE '\\'"
    args: list[object] = []
    for entry in entries:
        args.extend([entry, f"{entry}.md", f"{_escape_like(entry)}/%"])
    return "(" + " OR ".join([one] * len(entries)) + ")", args


def note_dates(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, NoteDate]:
    """Each note's date and its source, for the given paths (missing paths are left out)."""
    out: dict[str, NoteDate] = {}
    for chunk, marks in path_chunks(paths):
        rows = conn.execute(
            f"SELECT f.path, {_NOTE_DATE}, {_DATE_SOURCE} FROM files f"  # noqa: S608
            f" WHERE f.is_note = 1 AND f.path IN ({marks})",
            chunk,
        )
        for path, day, source in rows:
            out[path] = NoteDate(day, source)
    return out


def find_notes(
    conn: sqlite3.Connection,
    filt: NoteFilter,
    *,
    order: Order = "modified",
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[str], int]:
    """Paths of the notes matching ``filt`` (newest first, by path, or by created date)."""
    where, args = filter_sql(filt)
    total = conn.execute(f"SELECT COUNT(*) FROM files f WHERE {where}", args).fetchone()[0]  # noqa: S608
    return _sorted(conn, filt, order, limit, offset), int(total)


def _sorted(
    conn: sqlite3.Connection, filt: NoteFilter, order: Order, limit: int, offset: int
) -> list[str]:
    """A page of the matches, every match sorted (the plan for few matches, or any order)."""
    where, args = filter_sql(filt)
    order_by = {
        "modified": "f.mtime_ns DESC, f.path",
        "path": "f.path",
        "created": f"{_CREATED} DESC, f.path",
        "date": f"{_NOTE_DATE} DESC, f.mtime_ns DESC, f.path",
    }[order]
    rows = conn.execute(
        f"SELECT f.path FROM files f WHERE {where} ORDER BY {order_by} LIMIT ? OFFSET ?",  # noqa: S608
        [*args, limit, offset],
    )
    return [r[0] for r in rows]


@dataclass(frozen=True, slots=True)
class NotePage:
    """One page of matching notes; ``total`` is every match when ``exact``, else a lower bound
    (more than ``total`` notes match: the count stopped there)."""

    paths: list[str]
    total: int
    exact: bool


# The newest notes a page walks at most (the modification-time index, newest first) before it
# falls back to sorting every match: enough that a filter matching a few percent of the notes
# fills a page well within it, small enough to bound a miss.
_WINDOW = 4096


def _tag_range(tag: str) -> list[str]:
    low = tag.lstrip("#").lower().strip("/")
    return [low, low + "0", low, low + "/"]


# ``tag`` or a tag nested under it (``tag/...``) as ONE index range with a residual test:
# SQLite streams a single range, where the two-range OR (``index.search.tag_filter_sql``) first
# collects every matching row. Same rows: [t, t0) holds t, t/... and the few tags such as t-x
# or t.x that the residual test drops.
_TAG_RANGE = "tag_lower >= ? AND tag_lower < ? AND (tag_lower = ? OR tag_lower >= ?)"


def _correlated_sql(filt: NoteFilter) -> tuple[str, list[object]]:
    """``filter_sql`` with each tag tested per note (an EXISTS probe of the note's own tags)
    instead of an IN list built from every note with the tag: for plans driven by another
    index that stop early."""
    where, args = filter_sql(replace(filt, tags=()))
    parts, targs = [where], []
    for tag in filt.tags:
        parts.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.file_id = f.id AND {_TAG_RANGE})")  # noqa: S608
        targs.extend(_tag_range(tag))
    return " AND ".join(parts), [*args, *targs]


def _count_up_to(conn: sqlite3.Connection, filt: NoteFilter, cap: int) -> int:
    """How many notes match, counting no further than ``cap``."""
    if filt.tags:
        # Driven by the first tag's notes, one index range, each note once, stopping at ``cap``.
        rest, args = _correlated_sql(replace(filt, tags=filt.tags[1:]))
        sql = (
            "SELECT COUNT(*) FROM (SELECT 1 FROM"  # noqa: S608
            f" (SELECT DISTINCT file_id AS id FROM tags WHERE {_TAG_RANGE}) m"
            f" CROSS JOIN files f ON f.id = m.id WHERE {rest} LIMIT ?)"
        )
        args = [*_tag_range(filt.tags[0]), *args]
    else:
        where, args = _correlated_sql(filt)
        sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM files f WHERE {where} LIMIT ?)"  # noqa: S608
    return int(conn.execute(sql, [*args, cap]).fetchone()[0])


def _newest_within(
    conn: sqlite3.Connection, filt: NoteFilter, limit: int, offset: int, window: int
) -> list[str] | None:
    """The page by modification time, found among the ``window`` newest files; None when
    fewer than a page of matches lie there (the caller then sorts every match)."""
    bound = conn.execute(
        "SELECT mtime_ns FROM files INDEXED BY files_mtime ORDER BY mtime_ns DESC LIMIT 1 OFFSET ?",
        [window],
    ).fetchone()
    where, args = _correlated_sql(filt)
    if bound is not None:
        # Every file at least as new as the bound is looked at (ties included), so the page
        # is the same as a sort of every match would give.
        where += " AND f.mtime_ns >= ?"
        args.append(bound[0])
    rows = conn.execute(
        f"SELECT f.path FROM files f INDEXED BY files_mtime WHERE {where}"  # noqa: S608
        " ORDER BY f.mtime_ns DESC, f.path LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    if len(rows) < limit and bound is not None:
        return None
    return [r[0] for r in rows]


def page_notes(
    conn: sqlite3.Connection,
    filt: NoteFilter,
    *,
    order: Order = "modified",
    limit: int = 10,
    offset: int = 0,
    count_up_to: int,
    window: int = _WINDOW,
) -> NotePage:
    """One page of the notes matching ``filt`` (as ``find_notes``), counted up to
    ``count_up_to`` (see the module doc); past it, a page by modification time is looked for
    among the ``window`` newest files first."""
    counted = _count_up_to(conn, filt, count_up_to + 1)
    exact = counted <= count_up_to
    total = counted if exact else count_up_to
    if total == 0:
        return NotePage([], 0, exact=True)
    if not exact and order == "modified":
        paths = _newest_within(conn, filt, limit, offset, window)
        if paths is not None:
            return NotePage(paths, total, exact=False)
    return NotePage(_sorted(conn, filt, order, limit, offset), total, exact)
