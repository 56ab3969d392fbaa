"""A second connection in one process must not cost the first its SQLite locks.

Closing any descriptor of a file drops every POSIX lock the process holds on it. If opening a
connection opened and closed the database file itself, the process's earlier connection would be
left unlocked; another process closing its own connection would then take itself for the last
user, checkpoint and delete the ``-wal`` and ``-shm`` files the first still uses, and the next
write through the first would corrupt the database. This is what a server beside a one-shot
command did to index.db and memory.db.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultpilot.index.db import connect as connect_index
from vaultpilot.memory.db import connect as connect_memory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX advisory locks")

OTHER_PROCESS = """
import sys
from pathlib import Path
from vaultpilot.{module}.db import connect
conn = connect(Path(sys.argv[1]))
conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
conn.close()
"""

Connect = Callable[[Path], sqlite3.Connection]


@pytest.mark.parametrize(
    ("module", "connect"), [("index", connect_index), ("memory", connect_memory)]
)
def test_a_second_connection_keeps_the_first_ones_locks(
    tmp_path: Path, module: str, connect: Connect
) -> None:
    path = tmp_path / "data" / f"{module}.db"
    first = connect(path)
    first.execute("CREATE TABLE kept (n INTEGER)")
    first.execute("INSERT INTO kept VALUES (1)")
    first.execute("SELECT count(*) FROM kept").fetchall()
    second = connect(path)  # the same process opens another connection (a reader pool does)
    second.execute("SELECT count(*) FROM kept").fetchall()

    code = OTHER_PROCESS.format(module=module)
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)

    # The other process was not the last user: the files the first connection uses are there.
    assert path.with_name(path.name + "-wal").exists()
    assert path.with_name(path.name + "-shm").exists()
    for n in range(2, 50):
        first.execute("INSERT INTO kept VALUES (?)", (n,))
    second.close()
    first.close()

    check = sqlite3.connect(path)
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert check.execute("SELECT count(*) FROM kept").fetchone() == (49,)
    check.close()
