"""``search.keyword_snippets`` takes its snippets in a large index from a scratch copy of the
notes: they must be the snippets FTS5 gives in the index itself, note by note, for every kind of
note and query (``scratch_from=0`` takes the copy in this small index)."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.index.db import connect
from vaultpilot.index.search import (
    _SNIPPET,
    SCRATCH_FROM,
    content_words,
    keyword_snippets,
    word_term,
)
from vaultpilot.index.sync import sync_vault

WORDS = [
    *("budget", "review", "meeting", "café", "crème", "naïve", "résumé", "zeppelin"),
    *("project", "plan", "database", "migration", "postgres", "index", "search", "note"),
    *("link", "tag", "alpha", "beta", "gamma", "delta", "the", "and", "of"),
]


def _note(rng: random.Random, i: int) -> str:
    def line(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    aliases = f"aliases: [{line(2)}]\n" if i % 3 == 0 else ""
    props = f"status: {rng.choice(WORDS)}\n" if i % 4 == 0 else ""
    body = "\n\n".join(
        f"## {line(3)}\n\n{line(rng.randint(5, 120))}" for _ in range(rng.randint(1, 4))
    )
    if i % 7 == 0:
        body += "\n\n日本語のメモ 検索 テスト"
    return f"---\n{aliases}{props}tags: [t{i % 5}]\n---\n# {line(2)}\n\n{body}\n"


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    root = tmp_path_factory.mktemp("snippets")
    vault = root / "vault"
    vault.mkdir()
    rng = random.Random(5)
    for i in range(150):
        (vault / f"{' '.join(rng.sample(WORDS, 2))} {i}.md").write_text(
            _note(rng, i), encoding="utf-8"
        )
    c = connect(root / "index.db", read_only=False)
    sync_vault(c, vault)
    c.close()
    ro = connect(root / "index.db", read_only=True)  # as the server's read workers open it
    yield ro
    ro.close()


def _in_index(conn: sqlite3.Connection, text: str, ids: list[int]) -> dict[int, str]:
    """The snippets FTS5 gives in the index, one note at a time."""
    words = content_words(text)
    if not ids or not words:
        return {}
    match = " OR ".join(word_term(w, stem=False) for w in words)
    out: dict[int, str] = {}
    for fid in dict.fromkeys(ids):
        row = conn.execute(
            f"SELECT {_SNIPPET} FROM notes_fts WHERE notes_fts MATCH ? AND rowid = ?",
            (match, fid),
        ).fetchone()
        if row is not None:
            out[fid] = str(row[0])
    return out


@pytest.mark.parametrize("scratch_from", [0, SCRATCH_FROM])
def test_snippets_are_those_of_the_index(conn: sqlite3.Connection, scratch_from: int) -> None:
    ids = [int(r[0]) for r in conn.execute("SELECT rowid FROM notes_fts")]
    rng = random.Random(11)
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(150)]
    queries += ["creme", "CAFÉ résume", "naive plan", "検索", "the of and", "nowhere zzz"]
    shown = 0
    for query in queries:
        page = [*rng.sample(ids, 10), 10**9]  # and an id no note has
        got = keyword_snippets(conn, query, page, scratch_from=scratch_from)
        assert got == _in_index(conn, query, page), query
        assert list(got) == [f for f in dict.fromkeys(page) if f in got]  # in the page's order
        shown += len(got)
    assert shown > 500  # most pages had snippets to compare
    assert keyword_snippets(conn, "budget", [], scratch_from=scratch_from) == {}


def test_snippets_from_several_threads(conn: sqlite3.Connection, tmp_path: Path) -> None:
    ids = [int(r[0]) for r in conn.execute("SELECT rowid FROM notes_fts")]
    want = _in_index(conn, "budget zeppelin", ids[:40])
    db = Path(conn.execute("PRAGMA database_list").fetchone()[2])
    problems: list[str] = []

    def run() -> None:
        own = connect(db, read_only=True)
        try:
            for _ in range(20):
                if keyword_snippets(own, "budget zeppelin", ids[:40], scratch_from=0) != want:
                    problems.append("differs")
        finally:
            own.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems
    assert want
