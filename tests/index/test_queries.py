"""Keyword search, filters, non-English text, and note lookup on the example vault."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.index.db import connect
from vaultpilot.index.queries import find_note
from vaultpilot.index.search import SearchHit, fts_query, search
from vaultpilot.index.sync import sync_vault


@pytest.fixture
def conn(example_vault: Path, tmp_path: Path) -> sqlite3.Connection:
    c = connect(tmp_path / "db" / "index.db")
    sync_vault(c, example_vault)
    return c


def paths(hits: list[SearchHit]) -> list[str]:
    return [h.path for h in hits]


def test_accents_are_optional(conn: sqlite3.Connection) -> None:
    for query in ("creme brulee", "crème brûlée", "CRÈME"):
        hits, _ = search(conn, query)
        assert paths(hits)[0] == "Recipes/Crème Brûlée.md", query


def test_cjk_words_without_spaces_are_found(conn: sqlite3.Connection) -> None:
    for query in ("京都まで", "すみません", "日本語", "会話"):
        hits, total = search(conn, query)
        assert "Travel/Japan Trip.md" in paths(hits), query
        assert total >= 1


def test_title_outranks_body(conn: sqlite3.Connection) -> None:
    hits, _ = search(conn, "sourdough")
    assert paths(hits)[0] == "Recipes/Sourdough Starter.md"
    assert "**" in hits[0].snippet


def test_nested_tag_filter_finds_children(conn: sqlite3.Connection) -> None:
    hits, _ = search(conn, "migration", tag="project")
    assert "Projects/Database Migration.md" in paths(hits)
    only_child, _ = search(conn, "migration", tag="project/active")
    assert "Projects/Database Migration.md" in paths(only_child)
    none, total = search(conn, "migration", tag="proj")  # a prefix of a name is not a parent
    assert none == [] and total == 0


def test_folder_filter_and_paging(conn: sqlite3.Connection) -> None:
    hits, total = search(conn, "the", folder="Daily", limit=2)
    assert len(hits) == 2 and total > 2
    assert all(p.startswith("Daily/") for p in paths(hits))
    rest, _ = search(conn, "the", folder="Daily", limit=50, offset=2)
    assert not set(paths(hits)) & set(paths(rest))
    assert len(rest) == total - 2


def test_query_syntax_is_never_passed_raw(conn: sqlite3.Connection) -> None:
    assert fts_query('AND OR "exact phrase" NEAR(x') == '"AND" "OR" "exact phrase" "NEAR x"'
    search(conn, 'title:* ^ "unterminated')  # no FTS5 syntax error reaches the caller
    with pytest.raises(InvalidArgumentError, match="no words"):
        search(conn, "  ** !! ")


def test_find_note_by_title_path_and_ambiguity(conn: sqlite3.Connection) -> None:
    assert find_note(conn, "sourdough starter") == "Recipes/Sourdough Starter.md"
    assert find_note(conn, "Projects/Garden/Overview") == "Projects/Garden/Overview.md"
    with pytest.raises(InvalidArgumentError, match="matches 2 notes"):
        find_note(conn, "Overview")
    with pytest.raises(NotFoundError):
        find_note(conn, "Nothing Like This")


def test_property_values_are_words_of_the_note(tmp_path: Path) -> None:
    """As in Obsidian's search: a word only in a property value finds the note; tags, CSS
    classes, numbers and booleans are not words there (tags have their own filter)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Dune.md").write_text(
        "---\nauthor: Frank Herbert\ngenre: [space opera, ecology]\ntags: [zanzibar]\n"
        "cssclasses: [wideview]\nrating: 5\nread: true\n---\n![[cover.png]]\n",
        encoding="utf-8",
    )
    (vault / "Other.md").write_text("# Other\n\nNothing about books.\n", encoding="utf-8")
    c = connect(tmp_path / "db" / "index.db")
    sync_vault(c, vault)
    for query in ("herbert", "ecology", "space opera"):
        assert paths(search(c, query)[0]) == ["Dune.md"], query
    for query in ("zanzibar", "wideview"):
        assert paths(search(c, query)[0]) == [], query


def test_an_index_from_before_the_properties_column_is_filled_again(tmp_path: Path) -> None:
    """The migration that adds the column leaves the note tables to be rebuilt: the next full
    sync fills them, properties included."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Dune.md").write_text("---\nauthor: Frank Herbert\n---\nA book.\n", encoding="utf-8")
    c = connect(tmp_path / "db" / "index.db")
    sync_vault(c, vault)
    c.execute("DELETE FROM notes_fts")  # as the migration leaves it
    c.execute("DELETE FROM index_meta")
    c.commit()
    assert search(c, "herbert")[0] == []
    sync_vault(c, vault)
    assert paths(search(c, "herbert")[0]) == ["Dune.md"]
