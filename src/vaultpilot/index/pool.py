"""Read connections for parallel read tools: one read-only connection per worker thread.

A ``sqlite3.Connection`` must not run two statements at once, so read tools that run in parallel
(the server's worker threads) each need their own. ``ReaderPool(db_path).connection()`` returns
the calling thread's connection, opening it on first use (``connect(..., read_only=True)``:
WAL, ``query_only``, a busy timeout). Readers never block the writer nor each other; each sees
the last committed state when its statement starts. Writes stay on one writable connection per
vault, one at a time, under the vault's write lock.

``close()`` closes every connection the pool opened (from any thread: they are opened with
``check_same_thread=False``); a thread that asks again afterwards gets a new one. The pool
holds no connection for a thread that has ended: ``prune()`` closes those, and ``connection()``
calls it whenever it opens a new one, so a pool used by a changing set of threads stays small.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from vaultpilot.index.db import connect

__all__ = ["ReaderPool"]


class ReaderPool:
    """One read-only index connection per thread (see the module doc)."""

    def __init__(self, db_path: Path) -> None:
        self._db_path = db_path
        self._lock = threading.Lock()
        self._conns: dict[threading.Thread, sqlite3.Connection] = {}

    def connection(self) -> sqlite3.Connection:
        """The calling thread's read-only connection."""
        me = threading.current_thread()
        with self._lock:
            conn = self._conns.get(me)
        if conn is not None:
            return conn
        conn = connect(self._db_path, read_only=True)  # outside the lock: it may wait on disk
        with self._lock:
            self._conns[me] = conn
        self.prune()
        return conn

    def prune(self) -> int:
        """Close the connections of threads that have ended; returns how many."""
        with self._lock:
            dead = [t for t in self._conns if not t.is_alive()]
            conns = [self._conns.pop(t) for t in dead]
        for conn in conns:
            conn.close()
        return len(conns)

    def __len__(self) -> int:
        with self._lock:
            return len(self._conns)

    def close(self) -> None:
        with self._lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            conn.close()
