"""vaultpilot's own files are its owner's alone: data folders 0700, databases and locks 0600.

Each database is opened the way the programs open it (``index.db.connect``, ``memory.db.connect``,
``EmbedLock``) under the common umask 022, which on its own would leave files 0644 in 0755
folders; real writes then make SQLite create its ``-wal`` and ``-shm`` files.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.errors import SetupError, StorageError
from vaultpilot.index.background import EmbedLock, lock_path
from vaultpilot.index.db import connect as connect_index
from vaultpilot.locations import find_vault, vault_data_dir
from vaultpilot.memory.db import connect as connect_memory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def loose_database(path: Path) -> sqlite3.Connection:
    """A database as an older vaultpilot left it: 0644 with its -wal and -shm, in a 0755 folder.

    The returned connection stays open so that SQLite keeps the -wal and -shm files.
    """
    path.parent.mkdir(parents=True, mode=0o755)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    os.chmod(path.parent, 0o755)
    for name in ("", "-wal", "-shm"):
        os.chmod(path.with_name(path.name + name), 0o644)
    return conn


def test_a_new_index_is_private_with_its_wal_and_shm(tmp_path: Path) -> None:
    root = tmp_path / "data"
    folder = vault_data_dir(tmp_path / "vault", root)
    db = folder / "index.db"
    conn = connect_index(db)
    try:
        conn.execute("INSERT INTO files (path, path_lower, folder, title, is_note, mtime_ns, size)"
                     " VALUES ('a.md', 'a.md', '', 'a', 1, 0, 0)")  # fmt: skip
        for created in (root, root / "vaults", folder):
            assert mode(created) == 0o700, created
        for name in ("index.db", "index.db-wal", "index.db-shm"):
            assert mode(folder / name) == 0o600, name
    finally:
        conn.close()


def test_a_new_memory_database_is_private(tmp_path: Path) -> None:
    db = tmp_path / "data" / "memory.db"
    conn = connect_memory(db)
    try:
        conn.execute("CREATE TABLE probe (x)")  # a write, so the -wal file exists
        assert mode(db.parent) == 0o700
        for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
            assert mode(db.parent / name) == 0o600, name
    finally:
        conn.close()


@pytest.mark.parametrize("opener", [connect_index, connect_memory], ids=["index", "memory"])
def test_a_loose_existing_database_is_tightened_at_open(tmp_path: Path, opener: object) -> None:
    db = tmp_path / "data" / "x.db"
    keep = loose_database(db)
    try:
        assert mode(db.with_name("x.db-wal")) == 0o644
        conn = opener(db)  # type: ignore[operator]
        conn.close()
        assert mode(db.parent) == 0o700
        for name in ("x.db", "x.db-wal", "x.db-shm"):
            assert mode(db.parent / name) == 0o600, name
        assert keep.execute("SELECT x FROM t").fetchall() == [(1,)]  # nothing lost on the way
    finally:
        keep.close()


def test_the_embedding_lock_is_private_new_or_old(tmp_path: Path) -> None:
    db = tmp_path / "data" / "index.db"
    connect_index(db).close()
    lock = EmbedLock(db, "test")
    assert lock.acquire()
    lock.release()
    assert mode(lock_path(db)) == 0o600
    os.chmod(lock_path(db), 0o644)  # as an older version left it
    assert lock.acquire()
    lock.release()
    assert mode(lock_path(db)) == 0o600


def test_private_dir_makes_every_missing_folder_0700(tmp_path: Path) -> None:
    from vaultpilot.locations import private_dir

    (tmp_path / "mine").mkdir(mode=0o755)
    os.chmod(tmp_path / "mine", 0o751)
    assert private_dir(tmp_path / "mine" / "a" / "b") == tmp_path / "mine" / "a" / "b"
    assert mode(tmp_path / "mine" / "a") == 0o700 and mode(tmp_path / "mine" / "a" / "b") == 0o700
    assert mode(tmp_path / "mine") == 0o751  # an existing parent is not ours to change
    private_dir(tmp_path / "mine")
    assert mode(tmp_path / "mine") == 0o700  # the folder asked for is


def test_tighten_only_removes_permissions(tmp_path: Path) -> None:
    from vaultpilot.locations import tighten

    path = tmp_path / "f"
    path.write_text("x")
    os.chmod(path, 0o400)
    tighten(path)
    assert mode(path) == 0o400  # already private: never widened
    os.chmod(path, 0o666)
    tighten(path)
    assert mode(path) == 0o600
    tighten(tmp_path / "missing")  # nothing there, nothing to do


def test_a_data_folder_that_is_a_file_is_a_clear_storage_error(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")
    with pytest.raises(StorageError, match=r"Could not create the index at .*index\.db"):
        connect_index(tmp_path / "data" / "index.db")
    with pytest.raises(StorageError, match="Could not open the memory database"):
        connect_memory(tmp_path / "data" / "memory.db")


def test_the_disk_root_or_home_is_no_vault_without_obsidian(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SetupError, match="root of the file system, not a vault"):
        find_vault("/")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(SetupError, match="your home folder, not a vault"):
        find_vault(str(tmp_path))
    (tmp_path / ".obsidian").mkdir()  # a vault kept right in the home folder is one
    assert find_vault(str(tmp_path)) == tmp_path.resolve()
