"""The index follows the corrected rules (docs/obsidian-rules.md): Unicode-normalised resolution,
degenerate links, links in %% comments, note dates, and excerpts that never break a link."""

from __future__ import annotations

import os
import sqlite3
import unicodedata
from collections.abc import Iterator
from datetime import date, datetime, time
from pathlib import Path

import pytest

from tests.index.helpers import dump, write
from vaultpilot.index.db import connect
from vaultpilot.index.metadata import NoteDate, NoteFilter, find_notes, note_dates
from vaultpilot.index.queries import backlinks, highlight, unmark_links, unresolved_links
from vaultpilot.index.sync import sync_vault

NFD_CAFE = unicodedata.normalize("NFD", "Café")
NFC_CAFE = unicodedata.normalize("NFC", "Café")


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(tmp_path / "db" / "index.db")
    yield connection
    connection.close()


def test_nfd_file_name_resolves_from_nfc_link_incrementally_and_on_rebuild(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    root = tmp_path / "vault"
    write(root, "Index.md", f"See [[{NFC_CAFE}]] and [[{NFD_CAFE}#Menu]].\n")
    sync_vault(conn, root, workers=1)
    assert sorted(u.target_text for u in unresolved_links(conn)) == sorted([NFC_CAFE, NFD_CAFE])
    write(root, f"Places/{NFD_CAFE}.md", "# Menu\n")  # as macOS stores the name
    sync_vault(conn, root, workers=1)
    assert unresolved_links(conn) == []
    assert [r.source for r in backlinks(conn, f"Places/{NFD_CAFE}.md")] == ["Index.md"] * 2
    fresh = connect(tmp_path / "fresh" / "index.db")
    sync_vault(fresh, root, workers=1)
    assert dump(fresh) == dump(conn)
    fresh.close()


def test_degenerate_links_are_stored_unresolved(tmp_path: Path, conn: sqlite3.Connection) -> None:
    root = tmp_path / "vault"
    write(root, "A.md", "[[|alias]] [[|]] [[#Top]]\n# Top\n")
    sync_vault(conn, root, workers=1)
    assert [(u.target_text, u.count) for u in unresolved_links(conn)] == [("", 2)]
    assert [r.subpath for r in backlinks(conn, "A.md")] == ["#Top"]


def test_links_in_percent_comments_are_indexed(tmp_path: Path, conn: sqlite3.Connection) -> None:
    root = tmp_path / "vault"
    write(root, "A.md", "text %% [[B]] #later %%\n")
    write(root, "B.md", "b\n")
    sync_vault(conn, root, workers=1)
    assert [r.source for r in backlinks(conn, "B.md")] == ["A.md"]
    assert conn.execute("SELECT tag FROM tags").fetchall() == [("later",)]


def _stamp(path: Path, day: date) -> None:
    """Set the file's modification time to local noon of ``day``."""
    ns = int(datetime.combine(day, time(12)).timestamp()) * 1_000_000_000
    os.utime(path, ns=(ns, ns))


def test_note_date_prefers_property_then_file_name_then_file_time(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    root = tmp_path / "vault"
    notes = {
        "Meetings/Standup.md": "---\ndate: 2025-11-05\ncreated: 2025-01-01\n---\n",
        "Meetings/Kickoff.md": "---\ncreated: 2025-11-06T09:30\n---\n",
        "Meetings/2025-11-07 Review.md": "---\ndate: {{date}}\n---\n",
        "Meetings/Retro 2025-10-01.md": "x\n",
        "Meetings/Old.md": "---\ndate: not a date\n---\n",
    }
    for rel, text in notes.items():
        _stamp(write(root, rel, text), date(2025, 11, 11))  # all edited on the 11th
    sync_vault(conn, root, workers=1)
    assert note_dates(conn, list(notes)) == {
        "Meetings/Standup.md": NoteDate("2025-11-05", "date"),
        "Meetings/Kickoff.md": NoteDate("2025-11-06", "created"),
        "Meetings/2025-11-07 Review.md": NoteDate("2025-11-07", "filename"),
        "Meetings/Retro 2025-10-01.md": NoteDate("2025-10-01", "filename"),
        "Meetings/Old.md": NoteDate("2025-11-11", "modified"),
    }
    last_week = NoteFilter(date_from="2025-11-03", date_to="2025-11-09")
    found, total = find_notes(conn, last_week, order="date", limit=10)
    assert found == [
        "Meetings/2025-11-07 Review.md",
        "Meetings/Kickoff.md",
        "Meetings/Standup.md",
    ]
    assert total == 3


# --- Excerpts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        (
            "see [[**Database** **Migration**|plan]] and **Database**",
            "see **[[Database Migration|plan]]** and **Database**",
        ),
        ("[**x**](Notes/**x**.md) y", "[**x**](Notes/x.md) y"),
        ("…tabase **Migration**|plan]] then", "**…tabase Migration|plan]]** then"),
        ("cut [[**Data**", "cut **[[Data**"),
        ("no marks [[A]]", "no marks [[A]]"),
    ],
)
def test_unmark_links(snippet: str, expected: str) -> None:
    assert unmark_links(snippet) == expected


def test_highlight_marks_outside_links_or_the_whole_link() -> None:
    text = "see [[Database Migration|the plan]] and the database"
    assert highlight(text, ["Database", "Migration"]) == (
        "see **[[Database Migration|the plan]]** and the **database**"
    )
    assert highlight("plain words", ["words", "absent"]) == "plain **words**"
    assert highlight("[a b](Notes/b.md) b", ["b"]) == "[a **b**](Notes/b.md) b"
    assert highlight("[a](Notes/b.md)", ["notes"]) == "[a](Notes/b.md)"
