"""Turn the ``filters`` parameter into an index ``NoteFilter``, with messages that guide.

``note_filter(ctx, filters, folder=...)`` reads tags (``#`` optional, nested tags included),
folder, ``dateRange`` (``days``, ``from``/``to``) and property conditions, given under
``properties`` or as top-level keys of ``filters``.

``dateRange`` without ``field`` filters on the note's own date: its ``date`` or ``created``
property, else a date in its file name, else its modification time (``index.metadata``), so
"meeting notes from last week" finds the meetings held then, not the notes edited then.
``field: 'modified'`` asks for the file time only, ``field: 'created'`` for the created date.
``add_note_dates`` puts each result's ``date`` and ``dateSource`` in the result.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.index.metadata import NoteFilter, PropertyCondition, note_dates
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.models import DateRange, PropertyOps, PropertyValue, QueryFilters
from vaultpilot.tools.notes import folder_arg
from vaultpilot.tools.results import NoteInfo

__all__ = ["add_note_dates", "describe_filters", "note_filter"]

_VALUE: TypeAdapter[PropertyValue] = TypeAdapter(PropertyValue)
_OPS = ("eq", "ne", "in_", "contains", "gt", "gte", "lt", "lte", "exists")


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise InvalidArgumentError(
            f"dateRange.{what} {text!r} is not a date; write it as YYYY-MM-DD, e.g. '2025-01-15'."
        ) from None


def _conditions(key: str, value: PropertyValue) -> list[PropertyCondition]:
    if isinstance(value, PropertyOps):
        out = []
        for op in _OPS:
            given = getattr(value, op)
            if given is None:
                continue
            name = "in" if op == "in_" else op
            arg = tuple(given) if isinstance(given, list) else given
            out.append(PropertyCondition(key, name, arg))  # type: ignore[arg-type]
        if not out:
            raise InvalidArgumentError(
                f"The filter for property '{key}' names no operator; use one of eq, ne, in, "
                "contains, gt, gte, lt, lte, exists, e.g. {priority: {gte: 2}}."
            )
        return out
    if isinstance(value, list):
        return [PropertyCondition(key, "in", tuple(value))]
    return [PropertyCondition(key, "eq", value)]


def _dates(ctx: ToolContext, rng: DateRange) -> dict[str, Any]:
    now = ctx.now()
    start = _day(rng.from_, "from") if rng.from_ else None
    end = _day(rng.to, "to") if rng.to else None
    if rng.days is None and start is None and end is None:
        raise InvalidArgumentError(
            "dateRange needs 'days' or 'from'/'to', e.g. {days: 7} or "
            "{from: '2025-01-01', to: '2025-01-31'}."
        )
    if "field" not in rng.model_fields_set:  # the note's own date
        if rng.days is not None:
            start = max(start or date.min, (now - timedelta(days=rng.days)).date())
        return {
            "date_from": start.isoformat() if start else None,
            "date_to": end.isoformat() if end else None,
        }
    if rng.field == "created":
        if rng.days is not None:
            start = max(start or date.min, (now - timedelta(days=rng.days)).date())
        return {
            "created_from": start.isoformat() if start else None,
            "created_to": end.isoformat() if end else None,
        }
    lo = None if start is None else datetime.combine(start, time.min, tzinfo=now.tzinfo)
    if rng.days is not None:
        recent = now - timedelta(days=rng.days)
        lo = recent if lo is None else max(lo, recent)
    hi = None if end is None else datetime.combine(end, time.max, tzinfo=now.tzinfo)
    return {
        "modified_from_ns": int(lo.timestamp() * 1e9) if lo else None,
        "modified_to_ns": int(hi.timestamp() * 1e9) if hi else None,
    }


def note_filter(
    ctx: ToolContext, filters: QueryFilters | None, *, folder: str = ""
) -> NoteFilter | None:
    """The index filter for ``filters`` and a folder (None when nothing narrows the notes)."""
    folder = folder_arg(folder)
    if filters is None:
        return NoteFilter(folder=folder) if folder else None
    tags = [t.strip().lstrip("#") for t in filters.tags or [] if t.strip().lstrip("#")]
    conditions: list[PropertyCondition] = []
    for key, value in (filters.properties or {}).items():
        conditions.extend(_conditions(key, value))
    for key, raw in (filters.model_extra or {}).items():
        if key.lower() == "tag":  # a common slip for 'tags'
            tags.extend(str(t).lstrip("#") for t in (raw if isinstance(raw, list) else [raw]))
            continue
        try:
            value = _VALUE.validate_python(raw)
        except ValidationError:
            raise InvalidArgumentError(
                f"The filter for property '{key}' should be a value, a list of values, or "
                "operators such as {gte: 2} or {contains: 'text'}."
            ) from None
        conditions.extend(_conditions(key, value))
    if filters.folder:
        folder = folder_arg(filters.folder)
    extra = _dates(ctx, filters.date_range) if filters.date_range else {}
    result = NoteFilter(
        tags=tuple(tags), folder=folder or None, properties=tuple(conditions), **extra
    )
    return None if result == NoteFilter() else result


def add_note_dates(ctx: ToolContext, results: list[NoteInfo], filters: QueryFilters | None) -> None:
    """With a ``dateRange`` on the note's date, give each result its ``date`` and ``dateSource``."""
    rng = filters.date_range if filters is not None else None
    if rng is None or "field" in rng.model_fields_set or not results:
        return
    dates = note_dates(ctx.conn, [r["path"] for r in results])
    for info in results:
        found = dates.get(info["path"])
        if found is not None:
            info["date"] = found.date
            info["dateSource"] = found.source


def describe_filters(filters: QueryFilters | None, folder: str = "") -> str:
    """The filters in the caller's own words, for messages."""
    parts: list[str] = []
    if filters is not None:
        dumped = filters.model_dump(by_alias=True, exclude_none=True)
        dumped.pop("depth", None)
        parts.extend(f"{k}={v!r}" for k, v in dumped.items())
    if folder:
        parts.append(f"folder={folder!r}")
    return ", ".join(parts)
