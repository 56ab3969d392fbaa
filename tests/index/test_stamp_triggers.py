"""Folder stamps are trusted only while the triggers that clear them exist (``index/stamps.py``):
a schema that lost one (a table rebuilt by a later migration) makes every sync compare every
file again instead of trusting stamps nothing keeps honest."""

from __future__ import annotations

from pathlib import Path

from tests.index.helpers import assert_equals_rebuild, write
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
