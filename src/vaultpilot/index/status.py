"""How the index compares with the vault: what ``vaultpilot status`` reports."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from vaultpilot.index.sync import plan_sync

__all__ = ["IndexStatus", "index_status"]


@dataclass(frozen=True, slots=True)
class IndexStatus:
    notes_on_disk: int
    notes_indexed: int
    attachments: int
    stale_added: tuple[str, ...]
    stale_changed: tuple[str, ...]
    stale_deleted: tuple[str, ...]
    frontmatter_errors: tuple[tuple[str, str], ...]  # (path, error)
    unreadable: tuple[tuple[str, str], ...]  # (path, error)
    links: int
    unresolved_links: int
    tags: int
    db_bytes: int

    @property
    def up_to_date(self) -> bool:
        return not (self.stale_added or self.stale_changed or self.stale_deleted)


def index_status(conn: sqlite3.Connection, root: Path, db_path: Path) -> IndexStatus:
    """Compare the index with the vault without changing either."""
    plan = plan_sync(conn, root)
    on_disk = sum(1 for p in plan.on_disk if p.lower().endswith(".md"))
    indexed, attachments = conn.execute(
        "SELECT COALESCE(SUM(is_note), 0), COALESCE(SUM(1 - is_note), 0) FROM files"
    ).fetchone()
    fm_errors = conn.execute(
        "SELECT path, frontmatter_error FROM files WHERE frontmatter_error IS NOT NULL"
        " ORDER BY path"
    ).fetchall()
    unreadable = conn.execute(
        "SELECT path, read_error FROM files WHERE read_error IS NOT NULL ORDER BY path"
    ).fetchall()
    links, unresolved = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(target_id IS NULL), 0) FROM links"
    ).fetchone()
    tags = conn.execute("SELECT COUNT(DISTINCT tag_lower) FROM tags").fetchone()[0]
    size = sum(
        p.stat().st_size for p in (db_path, db_path.with_name(db_path.name + "-wal")) if p.exists()
    )
    return IndexStatus(
        notes_on_disk=on_disk,
        notes_indexed=indexed,
        attachments=attachments,
        stale_added=tuple(plan.added),
        stale_changed=tuple(plan.changed),
        stale_deleted=tuple(plan.deleted),
        frontmatter_errors=tuple((p, e) for p, e in fm_errors),
        unreadable=tuple((p, e) for p, e in unreadable),
        links=links,
        unresolved_links=unresolved,
        tags=tags,
        db_bytes=size,
    )
