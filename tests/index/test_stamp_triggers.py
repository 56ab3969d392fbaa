"""What a full sync may take for granted: folder stamps only while the triggers that clear them
exist (``index/stamps.py``; a table rebuilt by a later migration would lose them), and a folder
it cannot list only when that means the folder is gone or private (``index/scan.py``)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.index.helpers import assert_equals_rebuild, write
from vaultpilot.errors import StorageError
from vaultpilot.index.db import connect
from vaultpilot.index.stamps import STAMP_TRIGGERS, read_stamps
from vaultpilot.index.sync import sync_vault


def test_every_migration_leaves_the_stamp_triggers_in_place(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    assert {r[0] for r in rows} >= STAMP_TRIGGERS


def test_without_a_trigger_no_stamp_is_trusted(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "A/one.md", "# One\n")
    write(root, "A/two.md", "# Two\n")
    conn = connect(tmp_path / "index.db")
    sync_vault(conn, root)
    assert read_stamps(conn).get("A")  # stamped by the sync
    conn.execute("DROP TRIGGER files_stamp_changed")
    # A row changed behind the stamps' back (nothing clears the folder's stamp any more) ...
    conn.execute("UPDATE files SET mtime_ns = 1, size = 1 WHERE path = 'A/one.md'")
    assert read_stamps(conn) == {}
    sync_vault(conn, root)  # ... is still compared, and put right
    assert_equals_rebuild(conn, root, tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="names a descriptor through /proc")
def test_a_folder_that_cannot_be_listed_for_a_passing_reason_is_not_taken_for_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    write(root, "A/one.md", "# One\n")
    write(root, "B/two.md", "# Two\n")
    conn = connect(tmp_path / "index.db")
    sync_vault(conn, root)
    write(root, "B/three.md", "# Three\n")  # a change the failed sync must not half-apply
    real = os.scandir

    def busy(target: Any) -> Any:  # a folder opened by descriptor is named through /proc
        where = os.readlink(f"/proc/self/fd/{target}") if isinstance(target, int) else target
        if os.fspath(where).endswith(os.sep + "A"):
            raise OSError(errno.EMFILE, "Too many open files")
        return real(target)

    monkeypatch.setattr(os, "scandir", busy)
    with pytest.raises(StorageError, match="Could not list the vault folder 'A/'"):
        sync_vault(conn, root)
    monkeypatch.undo()
    paths = {r[0] for r in conn.execute("SELECT path FROM files")}
    assert paths == {"A/one.md", "B/two.md"}  # nothing dropped, nothing half-written
    sync_vault(conn, root)
    assert_equals_rebuild(conn, root, tmp_path)
