"""Links survive moves: every link to a moved note keeps leading to it, in the form it was written.

The check is on the index: before a move, every resolved link as (source, target, line, kind,
subpath); after it, the same list with moved paths mapped to their new places, and the same
unresolved links. So the number of resolved links is unchanged and no link became unresolved.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.tools import ToolContext, open_context

from .conftest import NOW, manage, pin_times

Row = tuple[str, str, int, str, str]


def resolved(conn: sqlite3.Connection) -> list[Row]:
    return sorted(
        conn.execute(
            "SELECT s.path, t.path, l.line, l.kind, l.subpath FROM links l"
            " JOIN files s ON s.id = l.source_id JOIN files t ON t.id = l.target_id"
        ).fetchall()
    )


def unresolved(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return sorted(
        conn.execute(
            "SELECT s.path, l.target_text FROM links l JOIN files s ON s.id = l.source_id"
            " WHERE l.target_id IS NULL"
        ).fetchall()
    )


def moved(rows: list[Row], moves: dict[str, str]) -> list[Row]:
    def m(path: str) -> str:
        for old, new in moves.items():
            if path == old:
                return new
            if path.startswith(old + "/"):
                return new + path[len(old) :]
        return path

    return sorted((m(s), m(t), line, kind, sub) for s, t, line, kind, sub in rows)


def check_move(ctx: ToolContext, moves: dict[str, str], **call: object) -> dict[str, Any]:
    ctx.fresh()
    before, lost = resolved(ctx.conn), unresolved(ctx.conn)
    result = manage(ctx, **call)
    assert result["success"] is True, result
    after = resolved(ctx.conn)
    assert len(after) == len(before)
    assert after == moved(before, moves)
    assert [u[1] for u in unresolved(ctx.conn)] == [u[1] for u in lost]
    return result


LINKS_MD = """---
up: "[[Target]]"
list:
  - '[[Notes/Target|Target]]'
---
# Links

[[Target]] [[Target.md]] [[Notes/Target]] [[Target|alias]] [[Target|Target]]
[[Target#Heading]] [[Target#Heading#Sub]] [[Target#^blk]] [[Target#^blk|block]]
![[Target]] ![[Target#Heading]] ![[pic.png|100]] [[ Target ]]

| who | link |
|---|---|
| a | [[Target\\|Target]] |

[md](Target.md) [md2](Notes/Target.md#Heading) [md3](<Notes/Target.md>) [Target](Target.md)
![img](Media/pic.png) [two](Notes/Target%20Two.md) [[Target Two|Target Two]]

Inline `[[Target]]` and a fence:

```
[[Target]] [md](Target.md)
```

[[#Links]] [[Missing note]]
"""


@pytest.fixture
def forms(tmp_path: Path) -> Iterator[ToolContext]:
    root = tmp_path / "forms"
    files = {
        ".obsidian/app.json": '{"newLinkFormat": "shortest"}',
        "Notes/Target.md": "# Target\n\n## Heading\n\n### Sub\n\nA paragraph. ^blk\n\n"
        "[[Other]] [rel](../Notes/Other.md) [[Target Two]] ![[pic.png]]\n",
        "Notes/Other.md": "# Other\n\nBack to [[Target]] and [[Notes/Target#Heading|there]].\n",
        "Notes/Target Two.md": "# Two\n",
        "Sub/Deep.md": "[up](../Notes/Target.md) [[Notes/Target]]\n",
        "Links.md": LINKS_MD,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "Media").mkdir()
    (root / "Media/pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    pin_times(root)
    ctx = open_context(root, tmp_path / "forms.db", now=lambda: NOW)
    yield ctx
    ctx.conn.close()


def test_rename_keeps_every_form(forms: ToolContext) -> None:
    result = check_move(
        forms,
        {"Notes/Target.md": "Archive/Renamed.md"},
        operation="move_note",
        target="Notes/Target.md",
        destination="Archive/Renamed.md",
    )
    text = (forms.root / "Links.md").read_text(encoding="utf-8")
    assert text == LINKS_MD.replace('up: "[[Target]]"', 'up: "[[Renamed]]"').replace(
        "'[[Notes/Target|Target]]'", "'[[Renamed|Renamed]]'"
    ).replace(
        "[[Target]] [[Target.md]] [[Notes/Target]] [[Target|alias]] [[Target|Target]]",
        "[[Renamed]] [[Renamed.md]] [[Renamed]] [[Renamed|alias]] [[Renamed|Renamed]]",
    ).replace(
        "[[Target#Heading]] [[Target#Heading#Sub]] [[Target#^blk]] [[Target#^blk|block]]",
        "[[Renamed#Heading]] [[Renamed#Heading#Sub]] [[Renamed#^blk]] [[Renamed#^blk|block]]",
    ).replace(
        "![[Target]] ![[Target#Heading]] ![[pic.png|100]] [[ Target ]]",
        "![[Renamed]] ![[Renamed#Heading]] ![[pic.png|100]] [[ Renamed ]]",
    ).replace("| a | [[Target\\|Target]] |", "| a | [[Renamed\\|Renamed]] |").replace(
        "[md](Target.md) [md2](Notes/Target.md#Heading) [md3](<Notes/Target.md>) "
        "[Target](Target.md)",
        "[md](Renamed.md) [md2](Renamed.md#Heading) [md3](<Renamed.md>) [Renamed](Renamed.md)",
    )
    # inside code nothing changed
    assert "Inline `[[Target]]`" in text and "```\n[[Target]] [md](Target.md)\n```" in text
    moved_note = (forms.root / "Archive/Renamed.md").read_text(encoding="utf-8")
    assert "[rel](../Notes/Other.md)" in moved_note  # still right from Archive/: left alone
    assert set(result["affectedPaths"]) >= {
        "Archive/Renamed.md",
        "Links.md",
        "Notes/Other.md",
        "Sub/Deep.md",
    }
    assert "updated" in str(result["message"])


def test_move_folder_carries_attachments_and_relative_links(forms: ToolContext) -> None:
    manage(forms, operation="create_folder", target="Archive")
    check_move(
        forms,
        {"Notes": "Archive/Notes"},
        operation="move_folder",
        target="Notes",
        destination="Archive",
    )
    check_move(
        forms,
        {"Media": "Archive/Pictures"},
        operation="move_folder",
        target="Media",
        destination="Archive/Pictures",
    )
    links = (forms.root / "Links.md").read_text(encoding="utf-8")
    assert "![img](pic.png)" in links and "![[pic.png|100]]" in links
    # 'Notes/Target' still names Archive/Notes/Target.md (a path suffix): nothing to rewrite
    assert "[md2](Notes/Target.md#Heading)" in links and "[[Notes/Target]]" in links


def test_bulk_move_into_one_folder(forms: ToolContext) -> None:
    check_move(
        forms,
        {"Notes/Target.md": "Done/Target.md", "Notes/Other.md": "Done/Other.md"},
        operation="bulk_move",
        targets=["Notes/Target.md", "Other"],
        destination="Done",
    )


@pytest.mark.parametrize(
    ("link_format", "in_links", "in_deep"),
    [
        ("absolute", "[[Archive/Renamed|alias]] [md](Archive/Renamed.md)", "[[Archive/Renamed]]"),
        (
            "relative",
            "[[Archive/Renamed|alias]] [md](Archive/Renamed.md)",
            "[[../Archive/Renamed]]",
        ),
        ("shortest", "[[Renamed|alias]] [md](Renamed.md)", "[[Renamed]]"),
    ],
)
def test_new_link_text_follows_link_format(
    forms: ToolContext, tmp_path: Path, link_format: str, in_links: str, in_deep: str
) -> None:
    (forms.root / ".obsidian/app.json").write_text(
        json.dumps({"newLinkFormat": link_format}), encoding="utf-8"
    )
    (forms.root / "Links.md").write_text("[[Target|alias]] [md](Target.md)\n", encoding="utf-8")
    ctx = open_context(forms.root, tmp_path / "other.db", now=lambda: NOW)
    try:
        check_move(
            ctx,
            {"Notes/Target.md": "Archive/Renamed.md"},
            operation="move_note",
            target="Notes/Target.md",
            destination="Archive/Renamed.md",
        )
        assert (forms.root / "Links.md").read_text(encoding="utf-8") == in_links + "\n"
        deep = (forms.root / "Sub/Deep.md").read_text(encoding="utf-8")
        assert in_deep in deep
    finally:
        ctx.conn.close()


def test_duplicate_name_gets_full_paths(forms: ToolContext) -> None:
    """Moving a note next to links that meant another note of the same name (rule 7)."""
    check_move(
        forms,
        {"Notes/Target Two.md": "Target.md"},
        operation="move_note",
        target="Notes/Target Two.md",
        destination="Target.md",
    )
    links = (forms.root / "Links.md").read_text(encoding="utf-8")
    assert "[[Notes/Target]]" in links  # kept leading to Notes/Target.md, not the root one
    assert "[[Target|Target]]" in links  # the renamed note's alias followed its name


def test_example_vault_renames(ctx: ToolContext) -> None:
    moves = {"Projects/Database Migration.md": "Projects/Postgres Migration.md"}
    check_move(
        ctx,
        moves,
        operation="move_note",
        target="Database Migration",
        destination="Projects/Postgres Migration.md",
    )
    root = ctx.root
    home = (root / "Home.md").read_text(encoding="utf-8")
    assert "[[Postgres Migration|Postgres migration]]" in home
    retro = (root / "Meetings/Sprint Retro 2025-10-24.md").read_text(encoding="utf-8")
    assert "[rollback rules](Postgres%20Migration.md#Rollback)" in retro
    goals = (root / "Projects/2025/Q4 Goals.md").read_text(encoding="utf-8")
    assert "[[Postgres Migration#^cutover-date]]" in goals
    review = (root / "Meetings/Architecture Review 2025-10-16.md").read_text(encoding="utf-8")
    assert 'project: "[[Postgres Migration]]"' in review
    assert "![[Postgres Migration#Decisions]]" in review
    note = (root / "Projects/Postgres Migration.md").read_text(encoding="utf-8")
    assert "[[#Cutover plan]]" in note  # a self link is left alone


def test_example_vault_folder_and_duplicate_names(ctx: ToolContext) -> None:
    check_move(
        ctx,
        {"Projects/Garden": "Archive/Garden"},
        operation="move_folder",
        target="Projects/Garden",
        destination="Archive",
    )
    check_move(
        ctx,
        {"Reference/Concepts": "Knowledge"},
        operation="move_folder",
        target="Reference/Concepts",
        destination="Knowledge",
    )
    people = [f"People/{n}.md" for n in ("Lena Park", "Marcus Feld", "Priya Raman")]
    check_move(
        ctx,
        {p: "Team/" + p.split("/")[1] for p in people},
        operation="bulk_move",
        targets=people,
        destination="Team",
    )
    # both Overview notes now compete for [[Overview]]; links that meant one still mean it
    check_move(
        ctx,
        {"Projects/Mobile App/Overview.md": "Daily/Overview.md"},
        operation="move_note",
        target="Projects/Mobile App/Overview.md",
        destination="Daily",
    )
    daily = (ctx.root / "Daily/2025-10-21.md").read_text(encoding="utf-8")
    assert "[[Archive/Garden/Overview]]" in daily
