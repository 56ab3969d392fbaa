"""obsidian_query_vault: every query type, its filters, limits, suggestions and errors."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from vaultpilot.tools import ToolContext, is_error
from vaultpilot.tools.rules import VaultRules
from vaultpilot.tools.tokens import estimate_tokens

from .conftest import query, write


def paths(result: dict[str, Any]) -> list[str]:
    return [r["path"] for r in result["results"]]


# --- semantic_search -----------------------------------------------------------------------------


def test_search_ranks_and_says_how(ctx: ToolContext) -> None:
    result = query(ctx, queryType="semantic_search", query="pgloader debezium")
    assert result["ranking"] == "keyword"
    assert set(paths(result)[:2]) == {
        "Projects/Database Migration.md",
        "Meetings/Architecture Review 2025-10-16.md",
    }
    assert result["results"][0]["relevance"] >= 0.9  # calibrated: linked both ways
    assert all(0 < r["relevance"] <= 1 for r in result["results"])
    assert "**" in result["results"][0]["excerpt"]  # the matching context, highlighted


def test_search_falls_back_to_any_word(ctx: ToolContext) -> None:
    result = query(ctx, queryType="semantic_search", query="sourdough zeppelin")
    assert paths(result)[0] == "Recipes/Sourdough Starter.md"
    assert result["results"][0]["relevance"] <= 0.5
    assert "No note contains every word" in result["suggestion"]


def test_search_nothing_found_suggests_broader_terms(ctx: ToolContext) -> None:
    result = query(ctx, queryType="semantic_search", query="quantum physics")
    assert result == {
        "results": [],
        "totalFound": 0,
        "truncated": False,
        "suggestion": "No notes found matching 'quantum physics'. Try broader terms like "
        "'quantum' or 'physics', or check spelling.",
        "ranking": "keyword",
    }


def test_search_truncates_with_suggestion(ctx: ToolContext) -> None:
    result = query(ctx, queryType="semantic_search", query="the", limit=3)
    assert len(result["results"]) == 3 and result["truncated"] and result["totalFound"] > 3
    assert result["suggestion"].startswith(f"Showing 3 of {result['totalFound']} results.")


def test_search_with_filters_and_folder(ctx: ToolContext) -> None:
    tagged = query(
        ctx, queryType="semantic_search", query="postgres", filters={"tags": ["meeting"]}
    )
    assert paths(tagged) and all(p.startswith("Meetings/") for p in paths(tagged))
    narrowed = query(
        ctx,
        queryType="semantic_search",
        query="postgres",
        filters={"tags": ["meeting"], "properties": {"status": "done"}},
    )
    assert set(paths(narrowed)) < set(paths(tagged)) or not paths(narrowed)
    folder = query(ctx, queryType="semantic_search", query="postgres", path="Reference")
    assert paths(folder) and all(p.startswith("Reference/") for p in paths(folder))


def test_search_cjk_and_accents(ctx: ToolContext) -> None:
    assert "Travel/Japan Trip.md" in paths(query(ctx, queryType="semantic_search", query="お会計"))
    assert paths(query(ctx, queryType="semantic_search", query="creme brulee"))[0] == (
        "Recipes/Crème Brûlée.md"
    )


def test_search_needs_a_query(ctx: ToolContext) -> None:
    result = query(ctx, queryType="semantic_search")
    assert is_error(result) and "needs 'query'" in result["error"]
    assert result["results"] == [] and result["suggestion"] == result["error"]


def test_concise_and_detailed_sizes(ctx: ToolContext) -> None:
    sizes = {}
    for fmt in ("concise", "detailed"):
        result = query(
            ctx, queryType="semantic_search", query="migration", limit=10, responseFormat=fmt
        )
        per = [estimate_tokens(r) for r in result["results"]]
        sizes[fmt] = sum(per) / len(per)
        if fmt == "concise":
            assert all(set(r) == {"path", "title", "relevance"} for r in result["results"])
        else:
            assert all({"excerpt", "tags", "modified"} <= set(r) for r in result["results"])
    assert sizes["concise"] <= 60
    assert 100 <= sizes["detailed"] <= 250
    assert sizes["detailed"] >= 3 * sizes["concise"]


# --- list_structure ------------------------------------------------------------------------------


def test_structure_of_root_is_depth_limited(ctx: ToolContext) -> None:
    result = query(ctx, queryType="list_structure", limit=100, responseFormat="concise")
    folders = {r["path"]: r["noteCount"] for r in result["results"] if r.get("type") == "folder"}
    assert folders["Projects"] == 7 and folders["Projects/Garden"] == 2
    assert "Reference/Concepts" in folders and folders["Reference"] == 10
    notes = [r["path"] for r in result["results"] if "type" not in r]
    assert "Home.md" in notes and "Projects/Database Migration.md" in notes
    assert "Projects/Garden/Overview.md" not in notes  # level 3: counted, not listed
    deep = query(ctx, queryType="list_structure", limit=100, filters={"depth": 1})
    assert all("/" not in r["path"] for r in deep["results"])


def test_structure_shows_empty_folders_and_truncates(ctx: ToolContext) -> None:
    (ctx.root / "Projects/Empty").mkdir()
    result = query(ctx, queryType="list_structure", path="Projects", limit=2)
    assert result["results"][:2] == [
        {
            "path": "Projects/2025",
            "title": "2025",
            "relevance": 1.0,
            "type": "folder",
            "noteCount": 2,
        },
        {
            "path": "Projects/Empty",
            "title": "Empty",
            "relevance": 1.0,
            "type": "folder",
            "noteCount": 0,
        },
    ]
    assert result["truncated"] and "path='Projects/2025'" in result["suggestion"]


def test_structure_counts_only_what_the_rules_show(ctx: ToolContext) -> None:
    write(ctx.root, "Voyages/Japan Trip.md", "# Japan Trip\n\nKyoto in April.\n")
    write(ctx.root, "Voyages/Lisbon.md", "# Lisbon\n\nTrams.\n")
    write(ctx.root, "Voyages/Hidden/Visa.md", "# Visa\n\nPapers.\n")
    write(ctx.root, "Voyages/Open/Route.md", "# Route\n\nTrains.\n")
    ruled = replace(ctx, rules=VaultRules(deny=("Voyages/Japan Trip.md", "Voyages/Hidden")))
    shown = query(ruled, queryType="list_structure", path="Voyages")
    assert paths(shown) == ["Voyages/Open", "Voyages/Lisbon.md", "Voyages/Open/Route.md"]
    assert shown["totalFound"] == 3 and not shown["truncated"]
    assert shown["results"][0]["noteCount"] == 1
    root = query(ruled, queryType="list_structure", limit=100)
    counts = {r["path"]: r.get("noteCount") for r in root["results"]}
    assert counts["Voyages"] == 2 and "Voyages/Hidden" not in counts  # Lisbon and Route
    assert root["totalFound"] == len(root["results"])
    unruled = query(ctx, queryType="list_structure", path="Voyages")  # without rules: all
    assert unruled["totalFound"] == 6
    assert {r["path"]: r.get("noteCount") for r in unruled["results"]}["Voyages/Hidden"] == 1


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("Nope", "Folder 'Nope' doesn't exist."),
        ("Home.md", "Folder 'Home.md' is a note, not a folder."),
        ("../etc", "contains '..'"),
    ],
)
def test_structure_errors(ctx: ToolContext, path: str, message: str) -> None:
    result = query(ctx, queryType="list_structure", path=path)
    assert is_error(result) and message in result["error"]


# --- find_related --------------------------------------------------------------------------------


def test_related_explains_each_relation(ctx: ToolContext) -> None:
    result = query(ctx, queryType="find_related", referenceNote="Database Migration", limit=20)
    by_path = {r["path"]: r["relation"] for r in result["results"]}
    review = by_path["Meetings/Architecture Review 2025-10-16.md"]
    assert "links here" in review and "linked from it" in review
    assert "shares #postgres" in by_path["Reference/Postgres Cheatsheet.md"]
    assert result["results"][0]["relevance"] >= 0.9  # calibrated: linked both ways
    assert "Projects/Database Migration.md" not in by_path


def test_related_errors_and_lonely_note(ctx: ToolContext) -> None:
    missing = query(ctx, queryType="find_related")
    assert "needs 'referenceNote'" in missing["error"]
    unknown = query(ctx, queryType="find_related", referenceNote="Sourdough Starters Guide.md")
    assert "doesn't exist" in unknown["error"]
    assert "Similar notes: Recipes/Sourdough Starter.md" in unknown["error"]
    write(ctx.root, "Lonely.md", "# Zzyzx\n\nQwxv plorf.\n")
    lonely = query(ctx, queryType="find_related", referenceNote="Lonely")
    assert lonely["results"] == [] and "Nothing links to or from" in lonely["suggestion"]


# --- search_by_metadata --------------------------------------------------------------------------


def test_metadata_nested_tags_and_folder(ctx: ToolContext) -> None:
    result = query(ctx, queryType="search_by_metadata", filters={"tags": ["#project"]}, limit=50)
    assert set(paths(result)) >= {
        "Projects/Database Migration.md",
        "Archive/2024/Redis Cache Rollout.md",
    }
    done = query(
        ctx,
        queryType="search_by_metadata",
        filters={"tags": ["project"], "folder": "Archive"},
    )
    assert paths(done) == ["Archive/2024/Redis Cache Rollout.md"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"status": "in-progress", "tags": ["postgres"]}, ["Projects/Database Migration.md"]),
        ({"properties": {"owner": "Priya Raman"}}, ["Projects/Database Migration.md"]),
        ({"properties": {"budget_eur": {"gte": 10000}}}, ["Projects/2025/Team Offsite.md"]),
        ({"properties": {"attendees": {"contains": "Tomás"}, "decision": "go"}},
         ["Meetings/Mobile App Go-No-Go 2025-11-05.md"]),
        ({"properties": {"appointment": {"exists": True}}}, ["Areas/Health/Dental Care.md"]),
        ({"country": "no"}, ["Travel/Norway Fjords.md"]),
        ({"tag": "旅行"}, ["Travel/Japan Trip.md"]),
        ({"dateRange": {"from": "2025-10-07", "to": "2025-10-07", "field": "created"}},
         ["Meetings/1on1 Priya 2025-10-07.md"]),
    ],
)  # fmt: skip
def test_metadata_property_filters(
    ctx: ToolContext, filters: dict[str, Any], expected: list[str]
) -> None:
    result = query(ctx, queryType="search_by_metadata", filters=filters, limit=50)
    assert not is_error(result), result
    assert sorted(paths(result)) == expected


def test_metadata_date_range_on_modified(ctx: ToolContext) -> None:
    write(ctx.root, "Fresh.md", "---\ntags: [urgent]\n---\n# Fresh\n", age_days=1)
    write(ctx.root, "Stale.md", "---\ntags: [urgent]\n---\n# Stale\n", age_days=10)
    week = query(
        ctx, queryType="search_by_metadata", filters={"tags": ["urgent"], "dateRange": {"days": 7}}
    )
    assert paths(week) == ["Fresh.md"]
    window = query(
        ctx,
        queryType="search_by_metadata",
        filters={"tags": ["urgent"], "dateRange": {"from": "2025-10-01", "to": "2025-11-05"}},
    )
    assert paths(window) == ["Stale.md"]


def test_metadata_with_query_ranks(ctx: ToolContext) -> None:
    result = query(
        ctx, queryType="search_by_metadata", query="cutover", filters={"tags": ["meeting"]}
    )
    assert result["ranking"] == "keyword"
    assert all(p.startswith("Meetings/") for p in paths(result)) and paths(result)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (None, "needs 'filters'"),
        ({"dateRange": {}}, "dateRange needs 'days'"),
        ({"dateRange": {"from": "last week"}}, "is not a date"),
        ({"priority": {"around": 2}}, "should be a value"),
        ({"properties": {"priority": {}}}, "names no operator"),
    ],
)
def test_metadata_errors(ctx: ToolContext, filters: Any, message: str) -> None:
    result = query(ctx, queryType="search_by_metadata", filters=filters)
    assert is_error(result) and message in result["error"], result


def test_metadata_nothing_found_names_the_missing_tag(ctx: ToolContext) -> None:
    result = query(ctx, queryType="search_by_metadata", filters={"tags": ["recipes"]})
    assert result["totalFound"] == 0
    assert "no note has the tag #recipes (similar: #recipe)" in result["suggestion"]


# --- recent_changes ------------------------------------------------------------------------------


def test_recent_changes_newest_first(ctx: ToolContext) -> None:
    write(ctx.root, "Just Now.md", "# Just now\n", age_days=0)
    result = query(ctx, queryType="recent_changes", limit=5, responseFormat="detailed")
    assert paths(result)[0] == "Just Now.md"
    times = [r["modified"] for r in result["results"]]
    assert times == sorted(times, reverse=True)
    assert result["totalFound"] == 48 and "most recently modified" in result["suggestion"]
    meetings = query(ctx, queryType="recent_changes", path="Meetings", limit=50)
    assert len(paths(meetings)) == 6 and not meetings["truncated"]


@pytest.mark.parametrize("limit", [0, 101, "many"])
def test_limit_is_checked(ctx: ToolContext, limit: Any) -> None:
    result = query(ctx, queryType="recent_changes", limit=limit)
    assert is_error(result) and "'limit'" in result["error"]
