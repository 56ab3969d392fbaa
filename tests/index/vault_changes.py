"""What the index property tests share: a scratch vault with its index, and the file changes
they make to it.

``scratch_vault(setup)`` makes a temporary folder (hypothesis runs many examples per test, so
not pytest's ``tmp_path``) holding an empty vault (``setup`` may write into it first) and an
index of it synced once; it yields (folder, vault, connection) and removes it all after.

``apply_change`` takes a ``kind`` and two strings drawn by hypothesis, and returns the paths a
file watcher would report:

* ``write a body``: write note ``a`` (a fresh, later mtime);
* ``rename a b`` and ``move_folder a b``: move ``a`` to ``b`` when ``a`` exists and ``b`` does
  not (a folder never into itself);
* ``delete a``: remove note ``a`` if it is a file;
* ``hide_folder a``: move folder ``a`` out of the indexed vault (to a dot-folder);
* ``put_back``: write every note of ``kept`` back exactly (content and mtime), as it was at the
  last full sync.

Any other kind, or a change that does not apply, changes nothing and reports nothing.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.index.helpers import write
from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_vault

__all__ = ["apply_change", "scratch_vault"]


@contextmanager
def scratch_vault(
    setup: Callable[[Path], object] | None = None,
) -> Iterator[tuple[Path, Path, sqlite3.Connection]]:
    """(a temporary folder, the vault in it, its index synced once); all removed after."""
    tmp = Path(tempfile.mkdtemp())
    try:
        root = tmp / "vault"
        root.mkdir()
        if setup is not None:
            setup(root)
        conn = connect(tmp / "inc" / "index.db")
        try:
            sync_vault(conn, root, workers=1)
            yield tmp, root, conn
        finally:
            conn.close()
    finally:
        shutil.rmtree(tmp)


def apply_change(
    root: Path,
    kind: str,
    a: str,
    b: str,
    *,
    kept: Mapping[str, tuple[bytes, int]] | None = None,
) -> list[str]:
    """Make one change to the vault at ``root``; returns the paths it touched."""
    src, dst = root / a, root / b
    if kind == "write":
        write(root, a, b)
        return [a]
    if kind in ("rename", "move_folder") and src.exists() and not dst.exists():
        if (b + "/").startswith(a + "/"):
            return []  # a folder cannot move into itself
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dst)
        return [a, b]
    if kind == "delete" and src.is_file():
        src.unlink()
        return [a]
    hidden = root / f".{a.replace('/', '_')}"
    if kind == "hide_folder" and src.is_dir() and not hidden.exists():
        src.rename(hidden)  # moved out of the indexed vault
        return [a]
    if kind == "put_back":
        for rel, (data, mtime_ns) in (kept or {}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
            os.utime(root / rel, ns=(mtime_ns, mtime_ns))
        return list(kept or {})
    return []
