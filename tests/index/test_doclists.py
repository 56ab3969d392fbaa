"""Keyword evidence that reads at most ``COMMON`` entries of a word's doclist, on a real index of
a vault where some words are common (held by more than ``COMMON`` notes) and others rare."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.index.db import connect
from vaultpilot.index.doclists import (
    COMMON,
    brevity,
    doc_frequency,
    holders,
    note_count,
    title_words,
    titled_newest,
)
from vaultpilot.index.hybrid import hybrid_search
from vaultpilot.index.keyword_side import coverage, keyword_side
from vaultpilot.index.sync import sync_vault

NOTES = 2 * COMMON + 200  # "meeting" is in every note, "budget" in every other one


def _note(i: int) -> str:
    words = ["meeting", "notes", f"item{i}"]
    if i % 2 == 0:
        words.append("budget")
    if i % 100 == 7:
        words.append("zeppelin")  # rare: 8 notes
    return " ".join(words) + "\n"


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    root = tmp_path_factory.mktemp("doclists")
    vault = root / "vault"
    vault.mkdir()
    for i in range(NOTES):
        name = f"Budget review {i:04d}.md" if i % 250 == 3 else f"Note {i:04d}.md"
        (vault / name).write_text(_note(i), encoding="utf-8")
    (vault / "Café crème.md").write_text("a note with an accent\n", encoding="utf-8")
    c = connect(root / "index.db")
    sync_vault(c, vault)
    yield c
    c.close()


def _ids(conn: sqlite3.Connection, match: str) -> set[int]:
    return {
        int(r[0])
        for r in conn.execute("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?", (match,))
    }


def test_note_count_reads_the_fts_totals(conn: sqlite3.Connection) -> None:
    assert (
        note_count(conn)
        == conn.execute("SELECT COUNT(*) FROM notes_fts").fetchone()[0]
        == NOTES + 1
    )


def test_rare_words_are_counted_exactly_common_ones_estimated(conn: sqlite3.Connection) -> None:
    rare = doc_frequency(conn, '"zeppelin"')
    assert (rare.notes, rare.common) == (len(_ids(conn, '"zeppelin"')), False) == (12, False)
    assert doc_frequency(conn, '"nothinglikethis"').notes == 0
    for word, true in (("meeting", NOTES), ("budget", len(_ids(conn, '"budget"')))):
        found = doc_frequency(conn, f'"{word}"')
        assert found.common
        assert abs(found.notes - true) <= 0.15 * true, (word, found.notes, true)
        # The window holds exactly the COMMON newest notes holding the word.
        newest = sorted(_ids(conn, f'"{word}"'))[-COMMON:]
        assert found.since == newest[0]


def test_holders_are_exact_for_common_and_rare_words(conn: sqlite3.Connection) -> None:
    some = sorted(_ids(conn, '"notes"'))[::37]
    for word in ("budget", "zeppelin", "meeting"):
        term = f'"{word}"'
        assert holders(conn, term, doc_frequency(conn, term), some) == _ids(conn, term) & set(some)


def test_title_words_fold_like_the_tokenizer(conn: sqlite3.Connection) -> None:
    fid = conn.execute("SELECT id FROM files WHERE path = 'Café crème.md'").fetchone()[0]
    assert title_words(conn, [fid])[fid] == {"cafe", "creme"}
    assert _ids(conn, '"creme"') == {fid}


def test_a_query_of_common_words_ranks_title_matches_then_the_shortest_newest(
    conn: sqlite3.Connection,
) -> None:
    hits, total = keyword_side(conn, "budget", pool=10)
    titled = _ids(conn, '{title aliases}: "budget"')
    window = sorted(_ids(conn, '"budget"'))[-COMMON:]  # the newest COMMON notes holding it
    got = [h.file_id for h in hits]
    assert set(got[: len(titled)]) == titled  # old ones too: they are named after the word
    assert set(got[len(titled) :]) <= set(window)
    short = brevity(conn, got)
    rest = got[len(titled) :]
    assert [short[f] for f in rest] == sorted((short[f] for f in rest), reverse=True)
    assert all(h.all_words for h in hits)
    budget = len(_ids(conn, '"budget"'))
    assert abs(total - budget) <= 0.15 * budget
    assert titled_newest(conn, '"budget"', window[0], 3)[0][0] in titled


def test_brevity_follows_the_note_length(conn: sqlite3.Connection) -> None:
    long_note = conn.execute("SELECT id FROM files WHERE path = 'Note 0007.md'").fetchone()[0]
    short_note = conn.execute("SELECT id FROM files WHERE path = 'Note 0001.md'").fetchone()[0]
    short = brevity(conn, [long_note, short_note])
    assert 0 < short[long_note] < short[short_note] < 1


def test_a_rare_word_is_ranked_by_bm25_and_common_words_only_test_every_word(
    conn: sqlite3.Connection,
) -> None:
    hits, total = keyword_side(conn, "zeppelin budget", pool=20)
    zeppelin, budget = _ids(conn, '"zeppelin"'), _ids(conn, '"budget"')
    assert {h.file_id for h in hits} == zeppelin  # no note holding only the common word
    both = [h for h in hits if h.all_words]
    assert {h.file_id for h in both} == zeppelin & budget
    assert hits[: len(both)] == both  # notes holding every word come first
    assert total >= len(zeppelin | budget) * 0.85


def test_coverage_matches_the_whole_doclists(conn: sqlite3.Connection) -> None:
    ids = sorted(_ids(conn, '"zeppelin"'))[:5] + sorted(_ids(conn, '"notes"'))[:5]
    got = coverage(conn, "zeppelin budget review", ids, stem=False)
    n = note_count(conn)
    weight = {}
    for word in ("zeppelin", "budget", "review"):
        df = doc_frequency(conn, f'"{word}"').notes
        weight[word] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    for fid in ids:
        held = sum(w for word, w in weight.items() if fid in _ids(conn, f'"{word}"'))
        titled = sum(
            w for word, w in weight.items() if fid in _ids(conn, f'{{title aliases}}: "{word}"')
        )
        want = (held / sum(weight.values()), titled / sum(weight.values()))
        assert got.get(fid, (0.0, 0.0)) == pytest.approx(want), fid


def test_hybrid_search_without_vectors_on_common_words(conn: sqlite3.Connection) -> None:
    result = hybrid_search(conn, "meeting budget", embedder=None, vectors=None, limit=5)
    assert len(result.hits) == 5
    assert all("budget" in h.snippet.lower() or "budget" in h.title.lower() for h in result.hits)
    assert result.total >= COMMON


def test_a_read_only_connection_gets_the_same_answers(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("alpha beta\n", encoding="utf-8")
    (vault / "b.md").write_text("gamma\n", encoding="utf-8")
    c = connect(tmp_path / "i.db")
    sync_vault(c, vault)
    c.close()
    ro = connect(tmp_path / "i.db", read_only=True)
    hits, total = keyword_side(ro, "alpha", pool=5)
    path = ro.execute("SELECT path FROM files WHERE id = ?", (hits[0].file_id,)).fetchone()[0]
    assert (path, len(hits), total) == ("a.md", 1, 1)
    assert note_count(ro) == 2
    ro.close()


def test_a_note_is_found_by_its_title_however_many_notes_link_to_it(tmp_path: Path) -> None:
    """Notes linking to "Sprint Timeline" hold its words, so on a large vault both words are
    common; the note itself (the oldest, never among the newest) still comes first."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Sprint Timeline.md").write_text("Dates of the sprint.\n", encoding="utf-8")
    (vault / "Broad Climate Outline 77.md").write_text("An outline.\n", encoding="utf-8")
    for i in range(COMMON + 100):
        (vault / f"Log {i:04d}.md").write_text(
            f"See [[Sprint Timeline]] and [[Broad Climate Outline 77]], entry {i}.\n",
            encoding="utf-8",
        )
    c = connect(tmp_path / "index.db")
    try:
        sync_vault(c, vault)
        assert doc_frequency(c, '"sprint"').common and doc_frequency(c, '"outline"').common
        for query, note in [
            ("Sprint Timeline", "Sprint Timeline.md"),
            ("sprint timeline", "Sprint Timeline.md"),
            ("Broad Climate Outline 77", "Broad Climate Outline 77.md"),
            ("climate outline", "Broad Climate Outline 77.md"),
        ]:
            hits, _ = keyword_side(c, query, pool=50)
            assert hits[0].titled, query
            for limit in (1, 5, 50):
                found = hybrid_search(c, query, embedder=None, vectors=None, limit=limit)
                assert found.hits[0].path == note, (query, limit)
    finally:
        c.close()
