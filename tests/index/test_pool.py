"""Parallel reads: a read-only connection per thread, readers beside a writer that keeps syncing."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.index.helpers import write
from vaultpilot.index.db import connect
from vaultpilot.index.pool import ReaderPool
from vaultpilot.index.queries import backlinks
from vaultpilot.index.search import search
from vaultpilot.index.sync import sync_paths, sync_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for i in range(200):
        write(root, f"N{i}.md", f"# Note {i}\ncommon words here, links [[N{(i + 1) % 200}]]\n")
    return root


def test_each_thread_gets_its_own_read_only_connection(vault: Path, tmp_path: Path) -> None:
    db = tmp_path / "db" / "index.db"
    writer = connect(db)
    sync_vault(writer, vault, workers=1)
    pool = ReaderPool(db)
    with ThreadPoolExecutor(4) as ex:
        conns = set(ex.map(lambda _: id(pool.connection()), range(64)))
    assert 1 <= len(conns) <= 4 and len(pool) <= 4
    conn = pool.connection()
    assert conn is pool.connection()  # the same thread gets the same one
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
        conn.execute("DELETE FROM files")
    pool.close()
    assert len(pool) == 0
    writer.close()


def test_connections_of_ended_threads_are_closed(vault: Path, tmp_path: Path) -> None:
    db = tmp_path / "db" / "index.db"
    connect(db).close()
    pool = ReaderPool(db)
    threads = [threading.Thread(target=pool.connection) for _ in range(5)]
    for t in threads:
        t.start()
        t.join()
    assert len(pool) == 1  # each new thread's first call closed the ones that had ended
    assert pool.prune() == 1 and len(pool) == 0


def test_parallel_reads_while_the_index_is_written(vault: Path, tmp_path: Path) -> None:
    db = tmp_path / "db" / "index.db"
    writer = connect(db)
    sync_vault(writer, vault, workers=1)
    pool = ReaderPool(db)
    stop = threading.Event()
    errors: list[BaseException] = []
    edits = 0

    def write_loop() -> None:
        nonlocal edits
        while not stop.is_set() and edits < 200:
            write(vault, f"N{edits % 200}.md", f"# Note\nedited {edits} words, [[N{edits}]]\n")
            sync_paths(writer, vault, [f"N{edits % 200}.md"], workers=1)
            edits += 1

    def read_loop(n: int) -> int:
        done = 0
        try:
            conn = pool.connection()
            for i in range(150):
                hits, _ = search(conn, "words", limit=5)
                assert hits
                backlinks(conn, f"N{(n + i) % 200}.md")
                done += 1
        except BaseException as exc:  # collected and re-raised below, in the test's thread
            errors.append(exc)
        return done

    w = threading.Thread(target=write_loop)
    w.start()
    with ThreadPoolExecutor(4) as ex:
        counts = list(ex.map(read_loop, range(4)))
    stop.set()
    w.join(timeout=60)
    assert not errors, errors[0]
    assert counts == [150] * 4 and edits > 0
    pool.close()
    writer.close()
