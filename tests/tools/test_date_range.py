"""dateRange on the note's own date: its date/created property, a date in its file name, then the
file time ("meeting notes from last week" are the meetings held then, not the notes edited then)."""

from __future__ import annotations

from typing import Any

from vaultpilot.tools import ToolContext, is_error
from vaultpilot.tools.filters import add_note_dates
from vaultpilot.tools.models import QueryFilters
from vaultpilot.tools.results import NoteInfo

from .conftest import query, write


def _paths(result: dict[str, Any]) -> list[str]:
    assert not is_error(result), result
    return sorted(r["path"] for r in result["results"])


def test_last_weeks_meetings_by_their_date_not_their_file_time(ctx: ToolContext) -> None:
    # Edited today, but held in September: not a meeting from last week.
    write(ctx.root, "Meetings/Old Sync.md", "---\ndate: 2025-09-01\n---\nnotes\n", age_days=0)
    # Written up late (file time 30 days ago would miss it), held last week per its name.
    write(ctx.root, "Meetings/2025-11-10 Design Crit.md", "notes\n", age_days=30)
    week = query(
        ctx,
        queryType="search_by_metadata",
        filters={"folder": "Meetings", "dateRange": {"days": 7}},
        limit=20,
    )
    assert _paths(week) == [
        "Meetings/2025-11-10 Design Crit.md",
        "Meetings/Mobile App Go-No-Go 2025-11-05.md",
    ]
    by_file_time = query(
        ctx,
        queryType="search_by_metadata",
        filters={"folder": "Meetings", "dateRange": {"days": 7, "field": "modified"}},
        limit=20,
    )
    assert "Meetings/Old Sync.md" in _paths(by_file_time)
    assert "Meetings/2025-11-10 Design Crit.md" not in _paths(by_file_time)


def test_results_say_where_each_date_came_from(ctx: ToolContext) -> None:
    write(ctx.root, "Meetings/2025-11-10 Design Crit.md", "notes\n", age_days=30)
    write(ctx.root, "Loose.md", "no date at all\n", age_days=2)
    results: list[NoteInfo] = [
        {"path": "Meetings/Mobile App Go-No-Go 2025-11-05.md", "title": "x", "relevance": 1.0},
        {"path": "Meetings/2025-11-10 Design Crit.md", "title": "x", "relevance": 1.0},
        {"path": "Loose.md", "title": "x", "relevance": 1.0},
    ]
    ctx.fresh()
    add_note_dates(ctx, results, QueryFilters.model_validate({"dateRange": {"days": 7}}))
    assert [(r["date"], r["dateSource"]) for r in results] == [
        ("2025-11-05", "date"),
        ("2025-11-10", "filename"),
        ("2025-11-10", "modified"),
    ]
    untouched: list[NoteInfo] = [{"path": "Loose.md", "title": "x", "relevance": 1.0}]
    modified = QueryFilters.model_validate({"dateRange": {"days": 7, "field": "modified"}})
    add_note_dates(ctx, untouched, modified)
    assert "dateSource" not in untouched[0]
