"""Helpers shared by the index tests: writing small vaults and dumping an index canonically."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

_clock = [1_700_000_000_000_000_000]


def write(root: Path, rel: str, text: str | bytes) -> Path:
    """Write a file and give it a fresh, strictly later mtime (so a sync can never miss it)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    _clock[0] += 1_000_000_000
    os.utime(path, ns=(_clock[0], _clock[0]))
    return path


def _key(row: tuple[object, ...]) -> tuple[str, ...]:
    return tuple(repr(v) for v in row)


def _sorted(rows: Iterable[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(rows, key=_key)


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every table's content with file ids replaced by paths, sorted: equal iff same index.
    Read in one transaction, so a sync committed by another connection (a watcher) meanwhile
    is seen whole or not at all."""
    if conn.in_transaction:
        return _dump(conn)
    conn.execute("BEGIN")
    try:
        return _dump(conn)
    finally:
        conn.execute("COMMIT")


def _dump(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    paths = dict(conn.execute("SELECT id, path FROM files"))
    out: dict[str, list[tuple[object, ...]]] = {}
    out["files"] = _sorted(
        conn.execute(
            "SELECT path, path_lower, folder, title, is_note, mtime_ns, size, hash, word_count,"
            " frontmatter, frontmatter_error, read_error FROM files"
        )
    )
    for table, cols in {
        "properties": "file_id, key, key_lower, value, num",
        "tags": "file_id, tag, tag_lower, source, line",
        "aliases": "file_id, alias, alias_lower",
        "headings": "file_id, level, text, line",
        "blocks": "file_id, block_id, line",
    }.items():
        rows = conn.execute(f"SELECT {cols} FROM {table}")
        out[table] = _sorted((paths[r[0]], *r[1:]) for r in rows)
    out["links"] = _sorted(
        (paths[r[0]], paths.get(r[1]), *r[2:])
        for r in conn.execute(
            "SELECT source_id, target_id, target_text, target_key, subpath, alias, kind, syntax,"
            " line FROM links"
        )
    )
    out["fts"] = _sorted(
        (paths[r[0]], *r[1:])
        for r in conn.execute(
            "SELECT rowid, title, aliases, headings, body, properties FROM notes_fts"
        )
    )
    out["cjk"] = _sorted(
        (paths[r[0]], r[1]) for r in conn.execute("SELECT rowid, text FROM cjk_fts")
    )
    return out


def assert_equals_rebuild(conn: sqlite3.Connection, root: Path, tmp: Path) -> None:
    """``conn``'s index holds exactly what a fresh full sync of ``root`` gives (then closes it)."""
    from vaultpilot.index.db import connect
    from vaultpilot.index.sync import sync_vault

    fresh = connect(tmp / "fresh" / "index.db")
    sync_vault(fresh, root, workers=1)
    try:
        assert dump(conn) == dump(fresh)
    finally:
        conn.close()
        fresh.close()
