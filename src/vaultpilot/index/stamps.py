"""Folder stamps: what lets a sync that finds nothing changed skip comparing every file.

A full sync still stats every file (a note edited in place changes its own mtime, not its
folder's), but it compares file by file only the folders whose stamp (``scan._stamp``: the
folder's file names, mtimes and sizes) differs from the one stored in ``folder_stamps``.

Why a stored stamp can be trusted: it is written only by a sync, in the transaction that leaves
the folder's index rows equal to the very listing the stamp was computed from (checked against
the rows themselves, so a file that changed or vanished mid-sync leaves its folder unstamped),
and triggers on ``files`` (``index/db.py``) clear a folder's stamp whenever any row in it is
added, changed or removed, by whatever writes it (a watcher's scoped sync, a write tool, another
process). So an equal stamp means the folder's files on disk are exactly the ones its rows
describe. The same triggers keep a ``folder_stamps`` row for every folder that has file rows,
which is how a sync finds folders that vanished from disk without reading every row.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from vaultpilot.index.scan import FolderScan

__all__ = [
    "STAMP_TRIGGERS",
    "StampUpdate",
    "folder_rows",
    "read_stamps",
    "store_stamps",
    "store_stamps_if_free",
]

IndexedRow = tuple[str, int, int, int]  # (path, id, mtime_ns, size)
_BATCH = 500


@dataclass(frozen=True, slots=True)
class StampUpdate:
    """The stamps a sync records once its writes are done: ``folders`` were compared file by
    file and may get their scanned stamp; ``gone`` are folders no longer on disk."""

    scan: FolderScan
    folders: tuple[str, ...]
    gone: tuple[str, ...]

    @property
    def pending(self) -> bool:
        return bool(self.folders or self.gone)


# The triggers on ``files`` (index/db.py) that clear a folder's stamp when its rows change: a
# stamp is trusted only while all of them exist (a later migration that rebuilt the table the
# usual SQLite way would drop them, and stale stamps would then hide changes).
STAMP_TRIGGERS = frozenset({"files_stamp_added", "files_stamp_removed", "files_stamp_changed"})


def read_stamps(conn: sqlite3.Connection) -> dict[str, str | None]:
    """Every stored folder stamp (None: the folder has rows but no trusted stamp); none at all
    when a trigger that keeps them honest is missing (every folder is then compared)."""
    present = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'files'"
        )
    }
    if not present >= STAMP_TRIGGERS:
        return {}
    return dict(conn.execute("SELECT folder, stamp FROM folder_stamps"))


def _chunks(items: list[str]) -> list[list[str]]:
    return [items[i : i + _BATCH] for i in range(0, len(items), _BATCH)]


def folder_rows(conn: sqlite3.Connection, folders: list[str]) -> list[IndexedRow]:
    """The index rows of the files directly in ``folders``."""
    rows: list[IndexedRow] = []
    for part in _chunks(folders):
        marks = ", ".join("?" for _ in part)
        query = f"SELECT path, id, mtime_ns, size FROM files WHERE folder IN ({marks})"  # noqa: S608
        rows.extend(conn.execute(query, part))
    return rows


def _rows_by_folder(
    conn: sqlite3.Connection, folders: tuple[str, ...]
) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, tuple[int, int]]] = {f: {} for f in folders}
    if not folders:
        return out
    if len(folders) > _BATCH:  # a first build: one pass over the table
        cursor = conn.execute("SELECT folder, path, mtime_ns, size FROM files")
        for folder, path, mtime_ns, size in cursor:
            if folder in out:
                out[folder][path] = (mtime_ns, size)
        return out
    marks = ", ".join("?" for _ in folders)
    query = f"SELECT folder, path, mtime_ns, size FROM files WHERE folder IN ({marks})"  # noqa: S608
    for folder, path, mtime_ns, size in conn.execute(query, folders):
        out[folder][path] = (mtime_ns, size)
    return out


def store_stamps(conn: sqlite3.Connection, update: StampUpdate) -> None:
    """Record the stamps of ``update`` (inside the caller's write transaction, after its writes).

    A folder gets its scanned stamp only if its rows now equal the very listing the stamp was
    computed from (not one read later: the folder may have changed in between); a gone folder's
    row is dropped once it has no file rows left.
    """
    scan = update.scan
    rows = _rows_by_folder(conn, update.folders)
    fresh = [
        (f, scan.stamps[f])
        for f in update.folders
        if scan.stamps[f] is not None and rows[f] == scan.views.get(f)  # not a late read
    ]
    conn.executemany(
        "INSERT INTO folder_stamps (folder, stamp) VALUES (?, ?)"
        " ON CONFLICT(folder) DO UPDATE SET stamp = excluded.stamp",
        fresh,
    )
    conn.executemany(
        "DELETE FROM folder_stamps WHERE folder = ?1"
        " AND NOT EXISTS (SELECT 1 FROM files WHERE folder = ?1)",
        [(f,) for f in update.gone],
    )


def store_stamps_if_free(conn: sqlite3.Connection, update: StampUpdate) -> None:
    """``store_stamps`` in a transaction of its own, after a sync that wrote nothing, only if
    the write lock is free at once: stamps only save later syncs time, never worth a wait (nor
    an error, on a read-only connection)."""
    (timeout,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout=0")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return  # another connection is writing, or this one may not
    finally:
        conn.execute(f"PRAGMA busy_timeout={int(timeout)}")
    try:
        store_stamps(conn, update)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
