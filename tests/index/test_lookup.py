"""The lookups the tools ask of the index, on a small written vault."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.index.helpers import write
from vaultpilot.index.db import connect
from vaultpilot.index.lookup import (
    database_file,
    file_ids,
    notes_in_folder,
    notes_titled_near,
    tag_in_use,
    tags_like,
)
from vaultpilot.index.search import filter_sql, note_filter_ids
from vaultpilot.index.sync import sync_vault


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    root = tmp_path / "vault"
    write(root, "Top.md", "# Top\n#project/active\n")
    write(root, "Projects/Plan.md", "# Plan\n#project\n")
    write(root, "Projects/Deep/Design Notes.md", "# Design\n#projects\n")
    write(root, "Projects Old/Plan.md", "# Old plan\n")
    write(root, "Projects/pic.png", b"\x89PNG")
    c = connect(tmp_path / "db" / "index.db")
    sync_vault(c, root)
    return c


def test_notes_in_folder_keeps_the_folder_and_below_not_its_namesakes(
    conn: sqlite3.Connection,
) -> None:
    assert notes_in_folder(conn, "Projects") == [
        ("Projects/Deep/Design Notes.md", "Projects/Deep"),
        ("Projects/Plan.md", "Projects"),
    ]
    assert [p for p, _ in notes_in_folder(conn, "")] == [
        "Projects Old/Plan.md",
        "Projects/Deep/Design Notes.md",
        "Projects/Plan.md",
        "Top.md",
    ]


def test_tags_count_with_their_nested_tags_only(conn: sqlite3.Connection) -> None:
    assert tag_in_use(conn, "project")  # project and project/active
    assert tag_in_use(conn, "PROJECT/active")
    assert not tag_in_use(conn, "proj")  # a prefix of a word is not a parent tag
    assert sorted(tags_like(conn, "proj", limit=5)) == ["project", "project/active", "projects"]
    assert len(tags_like(conn, "proj", limit=2)) == 2


def test_titles_ids_and_the_database_file(conn: sqlite3.Connection, tmp_path: Path) -> None:
    assert sorted(notes_titled_near(conn, ["plan"])) == ["Projects Old/Plan.md", "Projects/Plan.md"]
    assert sorted(notes_titled_near(conn, ["Plans"])) == sorted(notes_titled_near(conn, ["plan"]))
    assert notes_titled_near(conn, ["pla"]) == []  # a short word counts only whole
    assert notes_titled_near(conn, ["Desing"]) == ["Projects/Deep/Design Notes.md"]  # "des"*
    assert notes_titled_near(conn, ['"x']) == [] and notes_titled_near(conn, []) == []
    ids = file_ids(conn, ["Top.md", "Missing.md", "Projects/pic.png"])
    assert set(ids) == {"Top.md", "Projects/pic.png"}
    assert len(set(ids.values())) == 2
    assert database_file(conn) == tmp_path / "db" / "index.db"
    assert database_file(sqlite3.connect(":memory:")) is None


def test_one_filter_assembly_for_tags_and_folders(conn: sqlite3.Connection) -> None:
    ids = note_filter_ids(conn, tag="project", folder="Projects")
    assert ids is not None
    by_id = {i: p for p, i in file_ids(conn, ["Projects/Plan.md", "Top.md"]).items()}
    assert {by_id.get(i) for i in ids} == {"Projects/Plan.md"}
    assert note_filter_ids(conn) is None
    where, args = filter_sql(tags=("a", "b/c"), folder="X/Y", ids="f.id", paths="f.path_lower")
    assert len(where) == 3
    assert args[-2:] == ["x/y/", "x/y0"]
