"""The memory tests' fixture: ``ctx``, a tool context on a small real vault (``helpers.NOTES``)
with a real index and a real memory.db in a data folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.memory.helpers import NOTES
from vaultpilot.locations import memory_db_path, vault_data_dir
from vaultpilot.tools import open_context
from vaultpilot.tools.context import ToolContext


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    (root / "Archive").mkdir()
    db = vault_data_dir(root, tmp_path / "data") / "index.db"
    db.parent.mkdir(parents=True)
    c = open_context(root, db)
    assert c.journal is not None and c.journal.path == memory_db_path(tmp_path / "data")
    try:
        yield c
    finally:
        c.conn.close()
        c.journal.close()
