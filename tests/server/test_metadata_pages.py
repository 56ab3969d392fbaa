"""search_by_metadata pages whose cost does not grow with the number of matches.

``index.metadata.page_notes`` counts matches only up to a cap and, past it, finds the newest
matches by walking the modification-time index from the newest file down. These tests pin that
the page it returns is the page a sort of every match gives (``find_notes``), on a real index
with ties in modification time, nested tags, look-alike tags and attachments, for caps and walk
windows small enough to take every path; and, through a real server, the reply past the cap.
"""

from __future__ import annotations

import itertools
import os
import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.server.conftest import Live
from vaultpilot.index.db import connect
from vaultpilot.index.metadata import NoteFilter, PropertyCondition, find_notes, page_notes
from vaultpilot.index.sync import sync_vault

_BASE_NS = 1_700_000_000 * 1_000_000_000
_TAGS = ["project", "project/active", "project-x", "projects", "idea", "area/health", "Idea"]


def _vault(root: Path, n: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    for i in range(n):
        folder = rng.choice(["", "Work", "Work/Deep", "Home"])
        tags = rng.sample(_TAGS, rng.randint(0, 3))
        body = " ".join(f"#{t}" for t in tags[1:])
        status = rng.choice(["open", "done"])
        front = f"---\ntags: [{tags[0]}]\nstatus: {status}\n---\n" if tags else ""
        text = front + f"# Note {i}\n{body}\n"
        path = root / folder / f"Note {i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        # Many notes share a modification time: ties are sorted by path.
        stamp = _BASE_NS + rng.randint(0, n // 4) * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))
    (root / "Work" / "diagram.png").write_bytes(b"\x89PNG not a note")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    root = tmp_path_factory.mktemp("pages")
    vault = root / "vault"
    vault.mkdir()
    _vault(vault, 160)
    conn = connect(root / "index.db")
    sync_vault(conn, vault)
    yield conn
    conn.close()


FILTERS = [
    NoteFilter(),
    NoteFilter(tags=("project",)),
    NoteFilter(tags=("#Project",)),
    NoteFilter(tags=("idea",)),
    NoteFilter(tags=("project", "idea")),
    NoteFilter(tags=("area/health",)),
    NoteFilter(tags=("missing",)),
    NoteFilter(folder="Work"),
    NoteFilter(tags=("project",), folder="Work"),
    NoteFilter(properties=(PropertyCondition("status", "eq", "open"),)),
    NoteFilter(tags=("idea",), properties=(PropertyCondition("status", "eq", "done"),)),
]


@pytest.mark.parametrize("filt", FILTERS, ids=lambda f: repr(f)[10:60])
def test_a_page_is_the_page_of_a_full_sort_whatever_the_cap(
    filt: NoteFilter, index: sqlite3.Connection
) -> None:
    conn = index
    everything, total = find_notes(conn, filt, limit=1000)
    assert total == len(everything)
    for cap, window, limit, offset in itertools.product(
        (1, 4, 30, 1000), (1, 7, 40, 4096), (1, 3, 10), (0, 2)
    ):
        page = page_notes(
            conn,
            filt,
            limit=limit,
            offset=offset,
            count_up_to=cap,
            window=window,
        )
        where = f"cap={cap} window={window} limit={limit} offset={offset}"
        assert page.paths == everything[offset : offset + limit], where
        assert page.exact == (total <= cap), where
        assert page.total == min(total, cap), where


def test_every_order_gives_the_full_sort_page(index: sqlite3.Connection) -> None:
    conn = index
    filt = NoteFilter(tags=("project",))
    for order in ("modified", "path", "created", "date"):
        expected = find_notes(conn, filt, order=order, limit=5)[0]
        got = page_notes(conn, filt, order=order, limit=5, count_up_to=3)
        assert got.paths == expected, order


def test_past_the_cap_the_reply_says_more_than(live: Callable[..., Live], tmp_path: Path) -> None:
    vault = tmp_path / "big"
    vault.mkdir()
    for i in range(505):
        note = vault / f"n{i:04d}.md"
        note.write_text(f"#bulk note {i}\n", encoding="utf-8")
        os.utime(note, ns=(_BASE_NS + i * 1_000_000_000,) * 2)
    (vault / "odd.md").write_text("#rare one\n", encoding="utf-8")
    os.utime(vault / "odd.md", ns=(_BASE_NS,) * 2)
    server = live(vaults={"big": vault})
    query = {"queryType": "search_by_metadata", "filters": {"tags": ["bulk"]}, "limit": 3}
    reply = server.rpc("obsidian_query_vault", {**query, "responseFormat": "concise"})
    assert reply["success"], reply["error"]
    result = reply["result"]
    assert [r["path"] for r in result["results"]] == ["n0504.md", "n0503.md", "n0502.md"]
    assert result["totalFound"] == 500 and result["truncated"] is True
    assert result["suggestion"].startswith("Showing 3 of more than 500 results, newest first.")
    # Under the cap the count is exact, as before.
    rare = {"queryType": "search_by_metadata", "filters": {"tags": ["rare"]}}
    result = server.rpc("obsidian_query_vault", rare)["result"]
    assert result["totalFound"] == 1 and result["truncated"] is False
    assert [r["path"] for r in result["results"]] == ["odd.md"]
    recent = server.rpc("obsidian_query_vault", {"queryType": "recent_changes", "limit": 2})
    assert recent["result"]["totalFound"] == 500
    assert recent["result"]["suggestion"].startswith(
        "Showing the 2 most recently modified of more than 500 notes."
    )
