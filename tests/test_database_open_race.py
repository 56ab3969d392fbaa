"""Connections opening a new database at the same moment all succeed.

A server's file watcher and its first tool call (or two processes) open a new index.db or
memory.db at once; SQLite then answers "database is locked" at once, without waiting, to one
of them (a write on a snapshot another has just moved past), which surfaced as "Could not open
the index … database is locked" at start-up under load. Both databases' ``connect`` retry that.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultpilot.index.db import connect as connect_index
from vaultpilot.memory.db import connect as connect_memory


def _open_together(connect: Callable[[Path], sqlite3.Connection], path: Path, n: int) -> list[str]:
    errors: list[str] = []
    start = threading.Barrier(n)

    def one() -> None:
        start.wait()
        try:
            connect(path).close()
        except Exception as exc:  # every failure is what this test counts
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize(
    "connect",
    [connect_index, lambda p: connect_index(p, read_only=True), connect_memory],
    ids=["index", "index read-only", "memory"],
)
def test_a_new_database_opened_by_four_at_once(
    connect: Callable[[Path], sqlite3.Connection], tmp_path: Path
) -> None:
    errors: list[str] = []
    for attempt in range(30):  # the race is narrow: each round is a new database
        folder = tmp_path / str(attempt) / "vaults" / "v"
        folder.mkdir(parents=True)
        errors += _open_together(connect, folder / "the.db", 4)
    assert errors == []
