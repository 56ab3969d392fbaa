"""Find notes by metadata: tags (nested included), folder, properties, created and modified dates.

``find_notes(conn, NoteFilter(...), order=..., limit=..., offset=...)`` returns the matching note
paths and how many match in all. Every condition of a filter must hold. How each is read:

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
from dataclasses import dataclass
from typing import Literal

from vaultpilot.index.search import filter_sql as _tag_folder_sql

__all__ = [
    "NoteDate",
    "NoteFilter",
    "Order",
    "PropertyCondition",
    "filter_sql",
    "find_notes",
    "note_dates",
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
    if filt.modified_from_ns is not None:
        where.append("f.mtime_ns >= ?")
        args.append(filt.modified_from_ns)
    if filt.modified_to_ns is not None:
        where.append("f.mtime_ns <= ?")
        args.append(filt.modified_to_ns)
    if filt.created_from is not None:
        where.append(f"{_CREATED} >= ?")
        args.append(filt.created_from)
    if filt.created_to is not None:
        where.append(f"{_CREATED} <= ?")
        args.append(filt.created_to)
    if filt.date_from is not None:
        where.append(f"{_NOTE_DATE} >= ?")
        args.append(filt.date_from)
    if filt.date_to is not None:
        where.append(f"{_NOTE_DATE} <= ?")
        args.append(filt.date_to)
    return " AND ".join(where), args


def note_dates(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, NoteDate]:
    """Each note's date and its source, for the given paths (missing paths are left out)."""
    wanted = list(dict.fromkeys(paths))
    out: dict[str, NoteDate] = {}
    for at in range(0, len(wanted), 500):
        chunk = wanted[at : at + 500]
        marks = ",".join("?" * len(chunk))
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
    return [r[0] for r in rows], int(total)
