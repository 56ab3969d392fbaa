"""obsidian_get_context: every context type, versions, token estimates, daily notes, errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vaultpilot.tools import ToolContext, is_error, open_context
from vaultpilot.tools.tokens import estimate_tokens
from vaultpilot.vault.files import content_version

from .conftest import NOW, manage, read, write


def test_read_note_returns_body_metadata_and_version(ctx: ToolContext) -> None:
    result = read(ctx, contextType="read_note", target="Priya Raman")
    note = result["primaryNote"]
    raw = (ctx.root / "People/Priya Raman.md").read_bytes()
    assert note["version"] == content_version(raw)
    assert note["content"].startswith("# Priya Raman\n") and "---" not in note["content"][:5]
    assert note["metadata"]["skip_level"] == "[[Lena Park]]"
    assert note["wordCount"] > 50 and "truncated" not in note
    summary = result["metadataSummary"]
    assert summary["tags"] == ["person", "team/platform"] and summary["backlinks"] >= 5
    assert summary["created"] == "2025-03-03" and summary["aliases"] == ["Priya"]
    body = {k: v for k, v in result.items() if k != "tokenEstimate"}
    assert abs(result["tokenEstimate"] - estimate_tokens(body)) <= 10


def test_metadata_can_be_left_out_and_concise_is_short(ctx: ToolContext) -> None:
    plain = read(ctx, contextType="read_note", target="Database Migration", includeMetadata=False)
    assert "metadata" not in plain["primaryNote"]
    concise = read(
        ctx, contextType="read_note", target="Database Migration", responseFormat="concise"
    )
    note = concise["primaryNote"]
    assert (
        note["truncated"] is True
        and "[Outline: # Database Migration · ## Context" in note["content"]
    )
    assert "responseFormat='detailed'" in note["content"]
    assert concise["tokenEstimate"] < plain["tokenEstimate"] / 2


def test_include_metadata_false_leaves_out_everything_from_the_frontmatter(
    ctx: ToolContext,
) -> None:
    full = read(ctx, contextType="read_note", target="Database Migration")
    plain = read(ctx, contextType="read_note", target="Database Migration", includeMetadata=False)
    summary = plain["metadataSummary"]
    assert "aliases" not in summary and "created" not in summary
    assert summary["tags"] == ["project/active"]  # written in the body; the others are properties
    assert full["metadataSummary"]["created"] == "2025-09-22"
    assert "work/platform" in full["metadataSummary"]["tags"]
    assert summary["outgoingLinks"] < full["metadataSummary"]["outgoingLinks"]  # owner: [[...]]
    assert summary["backlinks"] == full["metadataSummary"]["backlinks"]
    many = read(
        ctx,
        contextType="read_multiple",
        targets=["Database Migration", "Priya Raman"],
        includeMetadata=False,
    )
    assert "work/platform" not in many["metadataSummary"]["tags"]
    assert "project/active" in many["metadataSummary"]["tags"]


def test_invalid_yaml_is_shown_with_a_warning(ctx: ToolContext) -> None:
    result = read(ctx, contextType="read_note", target="Blameless Postmortems")
    assert result["primaryNote"]["content"].startswith('---\ntitle: "Blameless Postmortems')
    assert result["primaryNote"]["metadata"] == {}
    assert "invalid YAML" in result["warnings"][0] and "update_note" in result["warnings"][0]


def test_long_note_is_cut_and_says_so(ctx: ToolContext) -> None:
    write(ctx.root, "Huge.md", "# Huge\n\n" + ("word " * 40 + "\n\n") * 300)
    note = read(ctx, contextType="read_note", target="Huge.md")["primaryNote"]
    assert note["truncated"] is True and "don't pass it to update_note" in note["content"]
    assert len(note["content"]) < 50_000 and note["wordCount"] == 12002


def test_read_multiple_reports_missing_targets(ctx: ToolContext) -> None:
    result = read(
        ctx,
        contextType="read_multiple",
        targets=["Peak", "Nope.md", "Reference/Concepts/CAP Theorem"],
    )
    assert result["primaryNote"]["path"] == "Reference/Books/Peak.md"
    assert [n["path"] for n in result["relatedNotes"]] == ["Reference/Concepts/CAP Theorem.md"]
    assert "Note 'Nope.md' doesn't exist" in result["warnings"][0]
    assert result["metadataSummary"]["notes"] == 2
    none = read(ctx, contextType="read_multiple", targets=["Nope.md"])
    assert is_error(none) and none["primaryNote"] is None
    empty = read(ctx, contextType="read_multiple")
    assert "needs 'targets'" in empty["error"]


def test_gather_related_reads_the_closest_notes(ctx: ToolContext) -> None:
    result = read(ctx, contextType="gather_related", target="CAP Theorem", maxRelated=2)
    related = result["relatedNotes"]
    assert len(related) == 2 and all(n["relation"] and n["version"] for n in related)
    assert "Reference/Books/Designing Data-Intensive Applications.md" in [
        n["path"] for n in related
    ]
    none = read(ctx, contextType="gather_related", target="CAP Theorem", maxRelated=0)
    assert "relatedNotes" not in none


def test_backlinks_come_with_their_context(ctx: ToolContext) -> None:
    result = read(ctx, contextType="note_with_backlinks", target="Priya Raman")
    by_note = {b["notePath"]: b["context"] for b in result["backlinks"]}
    contexts = [b["context"] for b in result["backlinks"]]
    assert '(property) owner: "[[Priya Raman]]"' in contexts
    assert by_note["Meetings/1on1 Priya 2025-10-07.md"] == '(property) attendees: "[[Priya Raman]]"'
    assert "- People: [[Priya Raman]] · [[Marcus Feld]]" in by_note["Home.md"]
    sprint = by_note["Meetings/Sprint Retro 2025-10-24.md"]
    assert "[[Priya Raman\\|Priya]]" in sprint
    assert all(
        b["noteTitle"] and b["notePath"] != "People/Priya Raman.md" for b in result["backlinks"]
    )
    with_read = read(ctx, contextType="read_note", target="Priya Raman", includeBacklinks=True)
    assert len(with_read["backlinks"]) == len(result["backlinks"])


def test_daily_note_for_today_and_a_date(ctx: ToolContext) -> None:
    today = read(ctx, contextType="daily_note")
    assert today["primaryNote"]["path"] == "Daily/2025-11-12.md"
    assert read(ctx, contextType="daily_note", date="2025-10-06")["primaryNote"]["path"] == (
        "Daily/2025-10-06.md"
    )


def test_missing_daily_note_says_how_to_create_it(ctx: ToolContext) -> None:
    result = read(ctx, contextType="daily_note", date="yesterday")
    assert not is_error(result)
    would_be = result["primaryNote"]  # the spec types primaryNote as always present
    assert would_be["path"] == "Daily/2025-11-11.md" and would_be["exists"] is False
    assert would_be["title"] == "2025-11-11" and "version" not in would_be
    assert would_be["content"] == result["suggestedCall"]["arguments"]["content"]
    assert would_be["metadata"]["created"] == "2025-11-11" and would_be["wordCount"] > 5
    assert (
        "There is no daily note for 2025-11-11 (it would be 'Daily/2025-11-11.md')"
        in result["message"]
    )
    call = result["suggestedCall"]
    assert call["tool"] == "obsidian_vault_manager"
    assert call["arguments"]["content"].startswith('---\ntags:\n  - daily\ncreated: "2025-11-11"')
    assert "# 2025-11-11\n" in call["arguments"]["content"]
    created = manage(ctx, **call["arguments"])
    assert created["success"], created
    assert read(ctx, contextType="daily_note", date="yesterday")["primaryNote"]["path"] == (
        "Daily/2025-11-11.md"
    )


def test_daily_note_format_with_subfolders(vault: Path, tmp_path: Path) -> None:
    (vault / ".obsidian/daily-notes.json").write_text(
        json.dumps({"folder": "Journal", "format": "YYYY/MM-MMMM/dddd D", "template": ""}),
        encoding="utf-8",
    )
    ctx = open_context(vault, tmp_path / "daily.db", now=lambda: datetime(2025, 1, 15, tzinfo=UTC))
    try:
        missing = read(ctx, contextType="daily_note", date="today")
        assert "'Journal/2025/01-January/Wednesday 15.md'" in missing["message"]
        assert missing["primaryNote"] == {
            "path": "Journal/2025/01-January/Wednesday 15.md",
            "title": "Wednesday 15",
            "content": "",
            "wordCount": 0,
            "exists": False,
            "metadata": {},
        }
        assert missing["suggestedCall"]["arguments"]["content"] == ""
        appended = manage(
            ctx,
            operation="append_note",
            target="Journal/2025/01-January/Wednesday 15.md",
            content="- idea",
        )
        assert appended["success"] and "Created the daily note" in appended["message"]
        assert read(ctx, contextType="daily_note")["primaryNote"]["content"] == "- idea"
    finally:
        ctx.conn.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"contextType": "read_note"}, "Give the note in 'target'"),
        ({"contextType": "gather_related", "target": "Nowhere"}, "Note 'Nowhere' doesn't exist"),
        ({"contextType": "note_with_backlinks"}, "Give the note in 'target'"),
        (
            {"contextType": "read_note", "target": "Missing Note"},
            "Note 'Missing Note' doesn't exist",
        ),
        ({"contextType": "read_note", "target": "Overview"}, "matches 2 notes"),
        ({"contextType": "read_note", "target": "../secret.md"}, "contains '..'"),
        ({"contextType": "daily_note", "date": "next friday"}, "is not understood"),
        ({"contextType": "read_note", "target": "x", "maxRelated": 50}, "'maxRelated'"),
        ({"contextType": "summary", "target": "x"}, "unknown contextType 'summary'"),
    ],
)
def test_errors_guide(ctx: ToolContext, args: dict[str, object], message: str) -> None:
    result = read(ctx, **args)
    assert is_error(result) and message in result["error"], result
    assert result["primaryNote"] is None and result["tokenEstimate"] > 0


def test_now_is_the_context_clock(ctx: ToolContext) -> None:
    assert ctx.now() == NOW


def test_daily_note_dates_are_a_day_or_a_moment_and_nothing_after() -> None:
    from datetime import date

    from vaultpilot.errors import InvalidArgumentError
    from vaultpilot.tools.daily import parse_day

    today = date(2025, 3, 10)
    assert parse_day("2025-01-15", today) == date(2025, 1, 15)
    assert parse_day("2025-01-15T09:30", today) == date(2025, 1, 15)
    assert parse_day("yesterday", today) == date(2025, 3, 9)
    for bad in ("2025-01-01/../../x", "2025-01-15 and more", "2025-13-01"):
        with pytest.raises(InvalidArgumentError, match="YYYY-MM-DD"):
            parse_day(bad, today)
