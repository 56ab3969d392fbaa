"""One vector cache shared by per-thread read connections: each connection checks the snapshot's
signature once per change, not on every switch between connections, and still sees every change
(real SQLite in WAL, the hash embedder)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.index.helpers import write
from tests.semantic.conftest import HashEmbedder
from vaultpilot.index.db import connect
from vaultpilot.index.semantic import embed_pending
from vaultpilot.index.sync import sync_vault
from vaultpilot.index.vectors import VectorCache


class Traced:
    """A read-only connection that records the statements it runs."""

    def __init__(self, db: Path) -> None:
        self.conn = connect(db, read_only=True)
        self.sql: list[str] = []
        self.conn.set_trace_callback(self.sql.append)

    def take(self) -> list[str]:
        out, self.sql[:] = list(self.sql), []
        return out


@pytest.fixture
def readers(tmp_path: Path, indexed: sqlite3.Connection) -> Iterator[list[Traced]]:
    out = [Traced(tmp_path / "data" / "index.db") for _ in range(3)]
    yield out
    for r in out:
        r.conn.close()


def test_connections_share_the_snapshot_without_reading_the_signature_again(
    example_vault: Path,
    indexed: sqlite3.Connection,
    hash_embedder: HashEmbedder,
    readers: list[Traced],
) -> None:
    embed_pending(indexed, hash_embedder)
    cache = VectorCache()
    first = cache.get(readers[0].conn)
    assert first is not None and cache.loads == 1
    for r in readers[1:]:  # each connection new to the cache checks the signature once
        assert cache.get(r.conn) is first
        assert any("FROM chunks" in q for q in r.take())
    for r in readers:
        r.take()
    for _ in range(5):  # switching between connections: one cheap pragma each, nothing else
        for r in readers:
            assert cache.get(r.conn) is first
            assert r.take() == ["PRAGMA data_version"]
    assert cache.loads == 1

    # A change committed by the writer: every connection sees it, the matrix loads once.
    (example_vault / "Inbox.md").unlink()
    sync_vault(indexed, example_vault)
    second = cache.get(readers[1].conn)
    assert second is not None and second is not first and len(second) < len(first)
    assert all(cache.get(r.conn) is second for r in readers)
    assert cache.loads == 2

    # Vectors added by an embedding pass: appended once, seen by every connection.
    write(example_vault, "New.md", "# New\nfresh words about sourdough starters\n")
    sync_vault(indexed, example_vault)
    embed_pending(indexed, hash_embedder)
    third = cache.get(readers[2].conn)
    assert third is not None and len(third) > len(second)
    assert all(cache.get(r.conn) is third for r in readers)
    assert (cache.loads, cache.appends) == (3, 0)  # new chunks: a reload, once


def test_a_cleared_cache_makes_every_connection_look_again(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder, readers: list[Traced]
) -> None:
    embed_pending(indexed, hash_embedder)
    cache = VectorCache()
    snapshot = cache.get(readers[0].conn)
    assert snapshot is not None and cache.get(readers[1].conn) is snapshot
    cache.clear()
    again = cache.get(readers[1].conn)
    assert again is not None and again is not snapshot and cache.loads == 2
    readers[0].take()
    assert cache.get(readers[0].conn) is again  # its old mark is forgotten: it checks again
    assert any("FROM chunks" in q for q in readers[0].take())
