"""Small lookups the tools need from the index: paths, folders, per-note facts, link sources.

Every function takes an open index connection and returns plain values; none writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultpilot.index.search import folder_filter_sql, tag_filter_sql

__all__ = [
    "NoteFacts",
    "all_paths",
    "database_file",
    "file_ids",
    "folder_note_counts",
    "note_bodies",
    "note_count",
    "note_facts",
    "note_outlines",
    "note_titles",
    "notes_in_folder",
    "notes_titled_near",
    "path_chunks",
    "paths_under",
    "sources_linking_to",
    "tag_in_use",
    "tags_like",
]


@dataclass(frozen=True, slots=True)
class NoteFacts:
    """What the index knows about one note, enough to describe it in a result."""

    path: str
    title: str
    mtime_ns: int
    word_count: int
    properties: dict[str, Any]
    tags: tuple[str, ...]  # frontmatter and inline tags, unique, in first-seen order


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file of the connection's main database, or None when it is kept in memory."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row is not None and row[2] else None


def note_count(conn: sqlite3.Connection) -> int:
    """How many notes (Markdown files) the index holds."""
    return int(conn.execute("SELECT COUNT(*) FROM files WHERE is_note = 1").fetchone()[0])


def all_paths(conn: sqlite3.Connection) -> list[str]:
    """Every indexed file (notes and attachments)."""
    return [r[0] for r in conn.execute("SELECT path FROM files ORDER BY path")]


def paths_under(conn: sqlite3.Connection, folder: str) -> list[str]:
    """Every indexed file inside ``folder`` (at any depth)."""
    cond, args = folder_filter_sql("path_lower", folder)
    rows = conn.execute(f"SELECT path FROM files WHERE {cond} ORDER BY path", args)  # noqa: S608
    return [r[0] for r in rows]


def notes_in_folder(conn: sqlite3.Connection, folder: str) -> list[tuple[str, str]]:
    """(path, folder) of every note in ``folder`` or below it ("" is the whole vault), by path."""
    if not folder:
        rows = conn.execute("SELECT path, folder FROM files WHERE is_note = 1 ORDER BY path")
        return [(str(p), str(f)) for p, f in rows]
    cond, args = folder_filter_sql("path_lower", folder)
    rows = conn.execute(
        f"SELECT path, folder FROM files WHERE is_note = 1 AND (folder = ? OR ({cond}))"  # noqa: S608
        " ORDER BY path",
        [folder, *args],
    )
    return [(str(p), str(f)) for p, f in rows]


def file_ids(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, int]:
    """The index id of each given path (missing paths are left out)."""
    wanted = list(dict.fromkeys(paths))
    out: dict[str, int] = {}
    for at in range(0, len(wanted), 500):
        chunk = wanted[at : at + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT path, id FROM files WHERE path IN ({marks})", chunk)  # noqa: S608
        out.update((str(p), int(i)) for p, i in rows)
    return out


def notes_titled_near(
    conn: sqlite3.Connection, words: list[str], *, limit: int = 1000
) -> list[str]:
    """Note paths whose title (or an alias) holds one of ``words``, or for a word of four
    letters or more a word beginning with its first three (accents aside), those matching most
    first: the candidates among which spelling suggestions look for a close title, found
    through the full-text index whatever the vault's size."""
    terms = sorted(
        {'"' + w[:3].lower().replace('"', '""') + '"*' if len(w) >= 4 else
         '"' + w.lower().replace('"', '""') + '"' for w in words if w}
    )  # fmt: skip
    if not terms:
        return []
    rows = conn.execute(
        "SELECT f.path FROM notes_fts JOIN files f ON f.id = notes_fts.rowid"
        " WHERE notes_fts MATCH ? AND f.is_note = 1 ORDER BY rank LIMIT ?",
        (f"{{title aliases}} : ({' OR '.join(terms)})", limit),
    )
    return [str(r[0]) for r in rows]


def tag_in_use(conn: sqlite3.Connection, tag: str) -> bool:
    """Whether any file has ``tag`` or a tag nested under it."""
    sub, args = tag_filter_sql(tag)
    return bool(conn.execute(f"SELECT EXISTS ({sub})", args).fetchone()[0])


def tags_like(conn: sqlite3.Connection, text: str, *, limit: int = 3) -> list[str]:
    """Up to ``limit`` tags (as written) holding ``text``, case-insensitive."""
    rows = conn.execute(
        "SELECT DISTINCT tag FROM tags WHERE tag_lower LIKE ? LIMIT ?", (f"%{text}%", limit)
    )
    return [str(r[0]) for r in rows]


def folder_note_counts(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Per folder ("" is the root): (notes directly in it, other files directly in it)."""
    out: dict[str, tuple[int, int]] = {}
    for folder, notes, files in conn.execute(
        "SELECT folder, SUM(is_note), SUM(1 - is_note) FROM files GROUP BY folder"
    ):
        out[folder] = (int(notes), int(files))
    return out


def path_chunks(paths: Iterable[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """The paths, each once, ``size`` at a time, with the ``?`` marks of an ``IN (...)`` for
    them (SQLite limits a statement's parameters)."""
    wanted = list(dict.fromkeys(paths))
    for at in range(0, len(wanted), size):
        chunk = wanted[at : at + size]
        yield chunk, ",".join("?" * len(chunk))


def note_titles(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, str]:
    """The title of each given note path (missing paths are left out): what a concise result
    needs of ``note_facts``, without its tags and properties."""
    out: dict[str, str] = {}
    for chunk, marks in path_chunks(paths):
        rows = conn.execute(
            f"SELECT path, title FROM files WHERE path IN ({marks}) AND is_note = 1",  # noqa: S608
            chunk,
        )
        out.update((str(p), str(t)) for p, t in rows)
    return out


def note_facts(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, NoteFacts]:
    """Facts for the given note paths (missing paths are left out)."""
    out: dict[str, NoteFacts] = {}
    for chunk, marks in path_chunks(paths):
        rows = conn.execute(
            "SELECT id, path, title, mtime_ns, word_count, frontmatter FROM files"  # noqa: S608
            f" WHERE path IN ({marks}) AND is_note = 1",
            chunk,
        ).fetchall()
        ids = {r[0]: r for r in rows}
        tags: dict[int, list[str]] = {i: [] for i in ids}
        seen: dict[int, set[str]] = {i: set() for i in ids}  # each note's tags, lower-cased
        if ids:
            id_marks = ",".join("?" * len(ids))
            for fid, tag in conn.execute(
                f"SELECT file_id, tag FROM tags WHERE file_id IN ({id_marks})"  # noqa: S608
                " ORDER BY file_id, source = 'inline', line, rowid",
                list(ids),
            ):
                low = tag.lower()
                if low not in seen[fid]:
                    seen[fid].add(low)
                    tags[fid].append(tag)
        for fid, path, title, mtime_ns, words, fm in rows:
            props = json.loads(fm) if fm else {}
            out[path] = NoteFacts(path, title, mtime_ns, words, props, tuple(tags[fid]))
    return out


def note_bodies(conn: sqlite3.Connection, paths: Iterable[str], *, chars: int) -> dict[str, str]:
    """The first ``chars`` characters of each note's body (frontmatter removed), from the index."""
    wanted = list(dict.fromkeys(paths))
    found: dict[str, str] = {}
    for at in range(0, len(wanted), 500):  # one statement for a page (a statement per note
        chunk = wanted[at : at + 500]  # cost ~5 µs each, 10 a page)
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT f.path, substr(n.body, 1, ?) FROM files f"  # noqa: S608
            f" JOIN notes_fts n ON n.rowid = f.id WHERE f.path IN ({marks})",
            [chars, *chunk],
        )
        found.update((str(p), b or "") for p, b in rows)
    return {p: found[p] for p in wanted if p in found}


def note_outlines(
    conn: sqlite3.Connection, paths: Iterable[str], *, max_level: int = 3, limit: int = 8
) -> dict[str, list[str]]:
    """The first ``limit`` headings (levels 1 to ``max_level``) of each note, in order."""
    wanted = list(dict.fromkeys(paths))
    found: dict[str, list[str]] = {}
    for at in range(0, len(wanted), 500):  # one statement for a page, as ``note_bodies``
        chunk = wanted[at : at + 500]
        marks = ",".join("?" * len(chunk))
        # (Every heading of a note is read either way: ``headings`` is indexed by file only,
        # so ``ORDER BY line LIMIT`` per note sorted them all too.)
        rows = conn.execute(
            "SELECT f.path, h.text FROM files f JOIN headings h ON h.file_id = f.id"  # noqa: S608
            f" WHERE f.path IN ({marks}) AND h.level <= ? ORDER BY f.path, h.line",
            [*chunk, max_level],
        )
        for path, text in rows:
            heads = found.setdefault(str(path), [])
            if len(heads) < limit:
                heads.append(text)
    return {p: found.get(p, []) for p in wanted}


def sources_linking_to(conn: sqlite3.Connection, keys: Iterable[str]) -> list[str]:
    """Notes holding a link whose target names one of the file-name ``keys`` (see resolve)."""
    wanted = sorted(set(keys))
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        "SELECT DISTINCT f.path FROM links l JOIN files f ON f.id = l.source_id"  # noqa: S608
        f" WHERE l.target_key IN ({marks}) ORDER BY f.path",
        wanted,
    )
    return [r[0] for r in rows]
