"""Batched writes of parsed notes into the index tables.

``RowWriter.add`` queues the rows of one note; ``flush`` writes every queued row with one
``executemany`` per table. Batching matters: a 10k-note vault has ~200k link rows, and one
statement per note per table costs more than the inserts themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from vaultpilot.index.scan import NoteRecord

__all__ = [
    "FTS_BUFFER_BULK",
    "FTS_BUFFER_DEFAULT",
    "RowWriter",
    "clear_derived",
    "delete_files",
    "drop_child_indexes",
    "recreate_indexes",
    "set_fts_buffer",
]

_CHILD_TABLES = ("links", "properties", "tags", "aliases", "headings", "blocks")
_NOTE_ID_COLUMNS = ("file_id", "source_id")

_SQL = {
    "files": "INSERT INTO files (id, path, path_lower, folder, title, is_note, mtime_ns, size,"
    " hash, word_count, frontmatter, frontmatter_error, read_error)"
    " VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)"
    # A changed note keeps its row (an update, never delete + insert): deleting it would null
    # the target of every link pointing at it.
    " ON CONFLICT(id) DO UPDATE SET path = excluded.path, path_lower = excluded.path_lower,"
    " folder = excluded.folder, title = excluded.title, is_note = 1,"
    " mtime_ns = excluded.mtime_ns, size = excluded.size, hash = excluded.hash,"
    " word_count = excluded.word_count, frontmatter = excluded.frontmatter,"
    " frontmatter_error = excluded.frontmatter_error, read_error = excluded.read_error",
    "touch": "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
    "properties": "INSERT INTO properties (file_id, key, key_lower, value, num)"
    " VALUES (?, ?, ?, ?, ?)",
    "tags": "INSERT INTO tags (file_id, tag, tag_lower, source, line) VALUES (?, ?, ?, ?, ?)",
    "aliases": "INSERT INTO aliases (file_id, alias, alias_lower) VALUES (?, ?, ?)",
    "links": "INSERT INTO links (source_id, target_id, target_text, target_key, subpath, alias,"
    " kind, syntax, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "headings": "INSERT INTO headings (file_id, level, text, line) VALUES (?, ?, ?, ?)",
    "blocks": "INSERT INTO blocks (file_id, block_id, line) VALUES (?, ?, ?)",
    "fts": "INSERT INTO notes_fts (rowid, title, aliases, headings, body, properties)"
    " VALUES (?, ?, ?, ?, ?, ?)",
    "cjk": "INSERT INTO cjk_fts (rowid, text) VALUES (?, ?)",
}


# Properties whose values are not words of the note: tags and aliases have their own places,
# CSS classes and publishing settings are presentation.
_NOT_WORDS = frozenset({"tags", "tag", "aliases", "alias", "cssclasses", "cssclass", "publish"})


def property_words(properties: Iterable[tuple[str, str | None, float | None]]) -> str:
    """The text of a note's property values for keyword search (numbers and booleans left out:
    they are filters, not words)."""
    return " ".join(
        value
        for key, value, num in properties
        if value
        and num is None
        and value not in ("true", "false")
        and key.lower() not in _NOT_WORDS
    )


def delete_files(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """Remove files and everything derived from them (child tables cascade)."""
    rows = [(i,) for i in ids]
    if not rows:
        return
    conn.executemany("DELETE FROM notes_fts WHERE rowid = ?", rows)
    conn.executemany("DELETE FROM cjk_fts WHERE rowid = ?", rows)
    conn.executemany("DELETE FROM files WHERE id = ?", rows)


def drop_child_indexes(conn: sqlite3.Connection) -> list[str]:
    """Drop the secondary indexes of the per-note tables; returns the SQL that recreates them.

    For a sync that writes most of the vault, inserting into unindexed tables and building each
    index once afterwards (a sort) is about twice as fast as updating three B-trees per row.
    The definitions are read back from the schema, so they always match the migrations.
    ``links_target`` stays while foreign keys are checked: ``links.target_id`` is a deferred
    foreign key, and SQLite looks up its child rows on every insert into ``files``; without the
    index that lookup is a scan (a first build into an empty index turns the checks off).
    The indexes that start with the note's id (``file_id``, ``source_id``) stay too: notes are
    written in id order, so those grow at their right edge, cheaply, while the workers parse;
    building them afterwards would add to the part of the sync nothing runs beside.
    """
    marks = ", ".join("?" for _ in _CHILD_TABLES)
    checked = conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    rows = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"  # noqa: S608
        f" AND tbl_name IN ({marks}) AND (name != 'links_target' OR ?)",
        (*_CHILD_TABLES, not checked),
    ).fetchall()
    dropped: list[str] = []
    for name, sql in rows:
        first = conn.execute(f'PRAGMA index_info("{name}")').fetchone()
        if first is not None and first[2] in _NOTE_ID_COLUMNS:
            continue
        conn.execute(f'DROP INDEX "{name}"')
        dropped.append(sql)
    return dropped


def recreate_indexes(conn: sqlite3.Connection, statements: list[str]) -> None:
    for sql in statements:
        conn.execute(sql)


FTS_BUFFER_DEFAULT = 1024 * 1024  # FTS5's own default
FTS_BUFFER_BULK = 16 * 1024 * 1024


def set_fts_buffer(conn: sqlite3.Connection, size: int) -> None:
    """How many bytes of new terms FTS5 holds in memory before it writes them as a segment.

    FTS5 merges its segments as they accumulate, and that merging is what makes a large full
    index cost more than linear time. A bulk write raises the buffer (fewer, larger segments to
    merge: 50k notes 2.9 -> 2.1 s of insert CPU) and puts it back afterwards. The setting
    ('hashsize') is stored with the table, which is why it is set back.
    """
    for table in ("notes_fts", "cjk_fts"):
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)", (size,))  # noqa: S608


def clear_derived(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """Remove what was parsed out of notes about to be written again; keep their file rows."""
    rows = [(i,) for i in ids]
    if not rows:
        return
    for sql in (
        "DELETE FROM notes_fts WHERE rowid = ?",
        "DELETE FROM cjk_fts WHERE rowid = ?",
        "DELETE FROM properties WHERE file_id = ?",
        "DELETE FROM tags WHERE file_id = ?",
        "DELETE FROM aliases WHERE file_id = ?",
        "DELETE FROM links WHERE source_id = ?",
        "DELETE FROM headings WHERE file_id = ?",
        "DELETE FROM blocks WHERE file_id = ?",
    ):
        conn.executemany(sql, rows)


class RowWriter:
    """Queues the rows of parsed notes and writes them in batches (see the module doc)."""

    def __init__(self, conn: sqlite3.Connection, ids: dict[str, int], *, batch: int = 500):
        self._conn = conn
        self._ids = ids
        self._batch = batch
        self._queued = 0
        self._rows: dict[str, list[tuple[object, ...]]] = {k: [] for k in _SQL}

    def add(self, fid: int, r: NoteRecord) -> None:
        rows = self._rows
        if r.unchanged:
            rows["touch"].append((r.mtime_ns, r.size, fid))
        else:
            path = r.path
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            title = r.title or path.rsplit("/", 1)[-1][:-3]
            rows["files"].append(
                (fid, path, path.lower(), folder, title, r.mtime_ns, r.size, r.hash,
                 r.word_count, r.frontmatter, r.frontmatter_error, r.error)
            )  # fmt: skip
            if not r.error:
                self._add_derived(fid, title, r)
        self._queued += 1
        if self._queued >= self._batch:
            self.flush()

    def _add_derived(self, fid: int, title: str, r: NoteRecord) -> None:
        rows = self._rows
        ids = self._ids
        rows["properties"].extend((fid, k, k.lower(), v, n) for k, v, n in r.properties)
        rows["tags"].extend((fid, t, t.lower(), s, ln) for t, s, ln in r.tags)
        rows["aliases"].extend((fid, a, a.lower()) for a in r.aliases)
        rows["links"].extend(
            (fid, ids.get(res) if res else None, t, k, sp, al, kd, sx, ln)
            for t, k, sp, al, kd, sx, ln, res in r.links
        )
        rows["headings"].extend((fid, lv, tx, ln) for lv, tx, ln in r.headings)
        rows["blocks"].extend((fid, b, ln) for b, ln in r.blocks)
        rows["fts"].append(
            (
                fid,
                title,
                " ".join(r.aliases),
                " ".join(h[1] for h in r.headings),
                r.body,
                property_words(r.properties),
            )
        )
        if r.cjk:
            rows["cjk"].append((fid, f"{title}\n{r.body}"))

    def flush(self) -> None:
        for table, rows in self._rows.items():
            if rows:
                self._conn.executemany(_SQL[table], rows)
                rows.clear()
        self._queued = 0
