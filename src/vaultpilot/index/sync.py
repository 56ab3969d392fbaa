"""Incremental sync: bring ``index.db`` in line with the vault, re-parsing only what changed.

A sync compares the vault's files (path, mtime, size) with the index. Files that are new, or whose
mtime or size differ, are read and hashed; only those whose hash changed are parsed again.
Deleted files are removed; a rename is a delete plus an add. Links are resolved against the final
set of files, and every stored link whose target file name (``target_key``) matches an added or
removed file is resolved again, so the result always equals a rebuild from scratch.

A full sync (``sync_vault``) stats every file (an edit in place changes no folder's mtime), but
compares file by file only the folders whose stamp differs from the one stored for them
(``index/stamps.py``): in a vault where nothing changed it reads no file rows at all, and a few
changed folders are planned like a scoped ``sync_paths`` of those folders.

``sync_paths`` does the same for a given set of paths only (what a file watcher saw change, what
a write tool wrote): those paths are stat'ed, the rest of the index is trusted, and the same writer
runs, so when every change is among the paths the result equals a full sync. For up to
``_SCOPED_MAX`` paths the plan is *scoped*: only the index rows at or under those paths are read,
and the writer asks the index for the rest of the vault's file list when it needs it (the files a
few notes' links can name, by file name), so syncing one note costs about the same in a vault of
50,000 notes as in one of 50.

The whole sync is one transaction. Large syncs parse in worker processes while this process
writes. Notes that cannot be read (not UTF-8, too large, permission denied, vanished) are kept as
file rows with ``read_error`` set, reported in the summary, and never stop the sync.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import cast

from vaultpilot.index.scan import (
    FileStat,
    FolderScan,
    NoteRecord,
    PathScan,
    load_note,
    scan_folders,
    scan_paths,
    scan_vault,
)
from vaultpilot.index.stamps import (
    StampUpdate,
    folder_rows,
    read_stamps,
    store_stamps,
    store_stamps_if_free,
)
from vaultpilot.index.writer import (
    FTS_BUFFER_BULK,
    FTS_BUFFER_DEFAULT,
    RowWriter,
    clear_derived,
    delete_files,
    drop_child_indexes,
    recreate_indexes,
    set_fts_buffer,
)
from vaultpilot.vault.parse import PARSE_RULES
from vaultpilot.vault.resolve import LinkResolver, file_key

__all__ = [
    "SyncPlan",
    "SyncReport",
    "fill_counts",
    "plan_sync",
    "sync_paths",
    "sync_vault",
]

ProgressFn = Callable[[int, int], None]
_PARALLEL_MIN = 400  # below this many notes to parse, worker start-up costs more than it saves
_BATCH = 64
_IN_FLIGHT = 8  # batches per worker submitted ahead of the writer
_BULK_MIN = 1000  # from this many notes to write (and half the vault), indexes are rebuilt once
_FEW = 32  # up to this many notes, links are resolved against a narrowed file set
_SCOPED_MAX = 64  # up to this many paths, sync_paths reads only their rows of the index


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """What a sync would do: computed from a scan and the index, without writing."""

    on_disk: dict[str, FileStat]
    # path -> (path, id, mtime_ns, size); left empty when nothing is stale
    indexed: dict[str, tuple[str, int, int, int]]
    added: list[str]
    changed: list[str]
    deleted: list[str]
    # Scoped (sync_paths of a few paths): ``on_disk`` and ``indexed`` hold only the paths the scan
    # covered; every other file is as the index says, and is read from it when needed.
    scoped: bool = False
    # A full sync's folder stamps, recorded after the writes (see ``index/stamps.py``).
    stamps: StampUpdate | None = None

    @property
    def stale(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted)


@dataclass(slots=True)
class SyncReport:
    notes: int = 0
    attachments: int = 0
    parsed: int = 0
    unchanged_content: int = 0
    added: int = 0
    deleted: int = 0
    links: int = 0
    unresolved_links: int = 0
    tags: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def _is_note(path: str) -> bool:
    return path.lower().endswith(".md")


IndexedRow = tuple[str, int, int, int]  # (path, id, mtime_ns, size)
Planner = Callable[[sqlite3.Connection], "SyncPlan"]


def _indexed(conn: sqlite3.Connection) -> list[IndexedRow]:
    return conn.execute("SELECT path, id, mtime_ns, size FROM files").fetchall()


def _diff_vault(on_disk: dict[str, FileStat], rows: list[IndexedRow]) -> SyncPlan:
    """The plan that turns the indexed ``rows`` into the scanned vault ``on_disk``."""
    # (This runs on every sync, so it stays lean: set operations and C-level comparisons; the
    # common case, nothing changed, is one dict comparison, and builds nothing else.)
    if len(rows) == len(on_disk) and on_disk == {r[0]: (r[2], r[3]) for r in rows}:
        return SyncPlan(on_disk, {}, [], [], [])
    indexed = {row[0]: row for row in rows}
    added = sorted(on_disk.keys() - indexed.keys())
    deleted = sorted(indexed.keys() - on_disk.keys())
    changed = sorted(
        row[0] for row in rows if (st := on_disk.get(row[0])) is not None and (row[2], row[3]) != st
    )
    return SyncPlan(on_disk, indexed, added, changed, deleted)


def _diff_paths(seen: PathScan, rows: list[IndexedRow]) -> SyncPlan:
    """Like ``_diff_vault`` for what ``scan_paths`` saw; the rest is taken to be as indexed."""
    indexed = {row[0]: row for row in rows}
    deleted = sorted(p for p in indexed if seen.covers(p) and p not in seen.found)
    added = sorted(seen.found.keys() - indexed.keys())
    changed = sorted(
        p for p, st in seen.found.items() if (row := indexed.get(p)) and (row[2], row[3]) != st
    )
    gone = set(deleted)
    # The rest of the vault as indexed. Plain (mtime, size) tuples: one is made per indexed file
    # on every write and watcher batch, and only the paths ``seen`` found (real ``FileStat``s,
    # put in below) are ever read by field name.
    on_disk = cast(dict[str, FileStat], {p: r[2:] for p, r in indexed.items() if p not in gone})
    on_disk.update(seen.found)
    return SyncPlan(on_disk, indexed, added, changed, deleted)


def _covered_rows(conn: sqlite3.Connection, seen: PathScan) -> list[IndexedRow]:
    """The index rows at or under the paths ``seen`` covers (each path, and below it as a
    folder: ``path >= 'a/' AND path < 'a0'`` is every path starting with 'a/')."""
    rows: dict[str, IndexedRow] = {}
    for given in seen.exact:
        query = (
            "SELECT path, id, mtime_ns, size FROM files WHERE path = ? OR (path >= ? AND path < ?)"
        )
        for row in conn.execute(query, (given, given + "/", given + "0")):
            rows[row[0]] = row
    return list(rows.values())


def _diff_scoped(found: dict[str, FileStat], rows: list[IndexedRow]) -> SyncPlan:
    """Like ``_diff_paths`` when ``rows`` are the index rows of exactly what ``found`` covers
    (``_covered_rows``, ``folder_rows``): a plan of the covered paths only."""
    indexed = {row[0]: row for row in rows}
    deleted = sorted(p for p in indexed if p not in found)
    added = sorted(found.keys() - indexed.keys())
    changed = sorted(
        p for p, st in found.items() if (row := indexed.get(p)) and (row[2], row[3]) != st
    )
    return SyncPlan(dict(found), indexed, added, changed, deleted, scoped=True)


def _diff_folders(scan: FolderScan, conn: sqlite3.Connection) -> SyncPlan:
    """The plan of a full sync from ``scan``: only the folders whose stamp is not the stored
    one (or that are gone from disk) are compared file by file; the others are as indexed.

    When every folder is to be compared (a first build, a rebuild), or the folders to compare
    hold half the vault and at least ``_BULK_MIN`` files (a large change), every file is compared
    in one plan of the whole vault, the stamped folders read again from disk: the bulk write
    then applies as before. Folders whose stamp changed since the scan (another connection
    synced in between) are read again too.
    """
    stored = read_stamps(conn)
    stamps = scan.stamps
    compared = [f for f, stamp in stamps.items() if stamp is None or stored.get(f) != stamp]
    gone = [f for f in stored if f not in stamps]
    update = StampUpdate(scan, tuple(f for f in compared if stamps[f] is not None), tuple(gone))
    to_compare = sum(scan.counts[f] for f in compared)
    large = to_compare >= _BULK_MIN and 2 * to_compare >= sum(scan.counts.values())
    if len(compared) == len(stamps) or large:
        on_disk: dict[str, FileStat] = {}
        for folder in stamps:
            on_disk.update(scan.view(folder))
        return replace(_diff_vault(on_disk, _indexed(conn)), stamps=update)
    found: dict[str, FileStat] = {}
    for folder in compared:
        found.update(scan.view(folder))
    return replace(_diff_scoped(found, folder_rows(conn, compared + gone)), stamps=update)


class _IndexIds(dict[str, int]):
    """File ids by path for a scoped plan: the plan's own, the rest looked up in the index (as
    the write leaves it: deleted files are gone from it by the time links are resolved)."""

    def __init__(self, conn: sqlite3.Connection, known: dict[str, int]) -> None:
        super().__init__(known)
        self._conn = conn

    def get(self, path: str, default: int | None = None) -> int | None:  # type: ignore[override]
        found = super().get(path)
        if found is not None:
            return found
        row = self._conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        return default if row is None else int(row[0])


# The non-ASCII characters that fold (NFC, then lower-case) to an ASCII one: a name holding one
# can have an ASCII file-name key.
_ASCII_TWINS = {"k": "\u212a", ";": "\u037e", "`": "\u1fef"}
_SPELLINGS_MAX = 16


def _spellings(key: str) -> list[str] | None:
    """Every title that folds to the ASCII ``key``, up to ASCII letter case (None: too many)."""
    out = [""]
    for ch in key:
        twin = _ASCII_TWINS.get(ch)
        out = [o + c for o in out for c in ((ch, twin) if twin else (ch,))]
        if len(out) > _SPELLINGS_MAX:
            return None
    return out


def _index_named(conn: sqlite3.Connection, keys: set[str]) -> list[str]:
    """The indexed files whose name key is in ``keys``.

    A file's ``title`` is its name (a note's without ``.md``), so for ASCII keys the title index
    (``COLLATE NOCASE``) finds them all: a superset, checked exactly by ``_name_key``. Other
    keys (NFC folding SQL cannot repeat) go through every indexed path.
    """
    keys = {k for k in keys if k}  # "" (a link to a heading of its own note) names no file
    titles = [_spellings(k) if k.isascii() else None for k in keys]
    if len(keys) > _SCOPED_MAX or any(t is None for t in titles):
        return [p for (p,) in conn.execute("SELECT path FROM files") if _name_key(p) in keys]
    wanted = sorted({t for ts in titles for t in ts or ()})
    out: list[str] = []
    for i in range(0, len(wanted), 500):
        part = wanted[i : i + 500]
        marks = ", ".join("?" for _ in part)
        query = f"SELECT path FROM files WHERE title COLLATE NOCASE IN ({marks})"  # noqa: S608
        out.extend(p for (p,) in conn.execute(query, part) if _name_key(p) in keys)
    return out


PathsFn = Callable[[set[str] | None], list[str]]  # the files named by keys (None: every file)


def _vault_paths(conn: sqlite3.Connection, plan: SyncPlan) -> PathsFn:
    """The vault's files when notes are parsed (deleted ones left out, added ones in)."""
    if not plan.scoped:
        return lambda keys: [p for p in plan.on_disk if keys is None or _name_key(p) in keys]
    # Scoped: the index has lost the deleted files and gained the new attachments already; the
    # new notes are written after parsing.
    new_notes = [p for p in plan.added if _is_note(p)]

    def paths(keys: set[str] | None) -> list[str]:
        if keys is None:
            return [*(p for (p,) in conn.execute("SELECT path FROM files")), *new_notes]
        return [*_index_named(conn, keys), *(p for p in new_notes if _name_key(p) in keys)]

    return paths


def plan_sync(
    conn: sqlite3.Connection, root: Path, *, temp_files: list[str] | None = None
) -> SyncPlan:
    """What a full sync would do now: every file on disk compared with the index, nothing
    written (``on_disk`` lists the whole vault, which ``vaultpilot status`` counts)."""
    return _diff_vault(scan_vault(root, temp_files=temp_files), _indexed(conn))


# Worker-process state: set once per worker by the pool initializer.
_worker: dict[str, object] = {}


def _init_worker(root: str, paths: list[str]) -> None:
    _worker["root"] = root
    _worker["resolver"] = LinkResolver(paths)


def _load_batch(batch: list[tuple[str, FileStat, str | None]]) -> list[NoteRecord]:
    root = _worker["root"]
    resolver = _worker["resolver"]
    assert isinstance(root, str) and isinstance(resolver, LinkResolver)
    return [load_note(root, path, st, old, resolver) for path, st, old in batch]


def _records(
    root: str, vault: PathsFn, jobs: list[tuple[str, FileStat, str | None]], workers: int
) -> Iterator[NoteRecord]:
    if len(jobs) <= _FEW:
        yield from _few_records(root, vault, jobs)
        return
    paths = vault(None)
    if workers <= 1 or len(jobs) < _PARALLEL_MIN:
        resolver = LinkResolver(paths)
        for path, st, old in jobs:
            yield load_note(root, path, st, old, resolver)
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    batches = iter([jobs[i : i + _BATCH] for i in range(0, len(jobs), _BATCH)])
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(root, paths),
    ) as pool:
        # A bounded window of batches in flight (not all of them at once): when the writer is
        # the slower side, parsed notes wait in the workers' queue instead of piling up here.
        pending = deque(pool.submit(_load_batch, b) for b in islice(batches, _IN_FLIGHT * workers))
        while pending:
            records = pending.popleft().result()
            following = next(batches, None)
            if following is not None:
                pending.append(pool.submit(_load_batch, following))
            yield from records


def _hashes(conn: sqlite3.Connection, ids: list[int]) -> dict[str, str | None]:
    """The stored content hashes of some files, by path (read only for changed files)."""
    out: dict[str, str | None] = {}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ", ".join("?" for _ in part)
        out.update(conn.execute(f"SELECT path, hash FROM files WHERE id IN ({marks})", part))  # noqa: S608
    return out


def _name_key(path: str) -> str:
    """``file_key`` inlined for the loops over every vault path (non-ASCII names: NFC too)."""
    if not path.isascii():
        return file_key(path)
    name = path.rpartition("/")[2].lower()
    return name[:-3] if name.endswith(".md") else name


def _few_records(
    root: str, vault: PathsFn, jobs: list[tuple[str, FileStat, str | None]]
) -> list[NoteRecord]:
    """Parse a handful of notes, resolving their links against only the files they can name.

    Every file a link could resolve to has the link's ``target_key`` as its name key, so a
    resolver over just those files answers exactly as one over the whole vault, and costs far
    less to build when one note changed in a large vault.
    """
    records = [load_note(root, path, st, old, None) for path, st, old in jobs]
    keys = {link[1] for r in records for link in r.links}
    if not keys:
        return records
    resolver = LinkResolver(vault(keys))
    return [
        r._replace(
            links=tuple(
                (*link[:7], resolver.resolve(r.path, link[0], link[5], subpath=link[2]))
                for link in r.links
            ),
        )
        if r.links
        else r
        for r in records
    ]


def _reresolve(
    conn: sqlite3.Connection,
    keys: set[str],
    resolver: LinkResolver,
    ids: dict[str, int],
    skip: set[int] | None = None,
) -> None:
    """Resolve again every stored link whose target file name was added or removed, except
    the links of the notes in ``skip`` (written in this sync against the final file list)."""
    if not keys:
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _keys (k TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM _keys")
    conn.executemany("INSERT OR IGNORE INTO _keys VALUES (?)", [(k,) for k in keys])
    rows = conn.execute(
        "SELECT l.rowid, l.source_id, f.path, l.target_text, l.syntax, l.target_id FROM links l"
        " JOIN files f ON f.id = l.source_id WHERE l.target_key IN (SELECT k FROM _keys)"
    ).fetchall()
    updates = []
    for rowid, source_id, source, text, syntax, old in rows:
        if skip and source_id in skip:
            continue
        res = resolver.resolve(source, text, syntax)
        new = ids.get(res) if res else None
        if new != old:
            updates.append((new, rowid))
    conn.executemany("UPDATE links SET target_id = ? WHERE rowid = ?", updates)


_TABLES = (
    "notes_fts",
    "cjk_fts",
    "links",
    "properties",
    "tags",
    "aliases",
    "headings",
    "blocks",
    "files",
    "folder_stamps",
)


def _clear_index(conn: sqlite3.Connection) -> None:
    """Empty the note tables inside the caller's transaction (the one that fills them again, so
    no reader ever sees them empty and an interrupted rebuild leaves the index it had),
    recording that what fills them follows today's parse rules. The chunks go too (their notes
    get new ids); the stored vectors stay, found again by their text when the notes are
    chunked anew. Deleted explicitly: foreign keys may be off for the bulk refill."""
    for table in ("chunks", "chunked_notes", *_TABLES):
        conn.execute(f"DELETE FROM {table}")  # noqa: S608
    conn.execute(
        "INSERT INTO index_meta (key, value) VALUES ('parse_rules', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (str(PARSE_RULES),),
    )


def _built_with_other_rules(conn: sqlite3.Connection) -> bool:
    """Whether the note tables may hold notes read by other parse rules than today's (no
    record: a new index, cleared at no cost, or one built before the rules were versioned)."""
    row = conn.execute("SELECT value FROM index_meta WHERE key = 'parse_rules'").fetchone()
    return row is None or row[0] != str(PARSE_RULES)


def sync_vault(
    conn: sqlite3.Connection,
    root: Path,
    *,
    rebuild: bool = False,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    counts: bool = False,
    temp_files: list[str] | None = None,
) -> SyncReport:
    """Sync the index with the vault at ``root``; ``rebuild`` starts from an empty index, as
    does an index whose notes were read by other parse rules (``vault.parse.PARSE_RULES``).

    With ``counts`` the report also carries vault-wide totals (notes, links, tags), which cost a
    scan of the link table; a search that only needs a fresh index leaves them out. With
    ``temp_files`` the walk also collects leftover temp files of killed writes (``scan_vault``).
    """
    started = time.perf_counter()
    root = root.resolve()
    clear = rebuild or _built_with_other_rules(conn)
    scan = scan_folders(root, {} if clear else read_stamps(conn), temp_files=temp_files)
    report = _sync(
        conn, root, lambda c: _diff_folders(scan, c), workers=workers, progress=progress,
        clear=clear,
    )  # fmt: skip
    return _finish(conn, report, counts=counts, started=started)


def sync_paths(
    conn: sqlite3.Connection,
    root: Path,
    paths: Iterable[str],
    *,
    workers: int | None = None,
    counts: bool = False,
) -> SyncReport:
    """Sync only ``paths`` (vault paths of files or folders that were added, changed, moved or
    removed); the rest of the index is trusted. The result equals ``sync_vault`` whenever every
    change on disk is among ``paths`` or under one of them (see the module)."""
    started = time.perf_counter()
    root = root.resolve()
    seen = scan_paths(root, paths)
    if len(seen.exact) <= _SCOPED_MAX:
        planner: Planner = lambda c: _diff_scoped(seen.found, _covered_rows(c, seen))  # noqa: E731
    else:
        planner = lambda c: _diff_paths(seen, _indexed(c))  # noqa: E731
    report = _sync(conn, root, planner, workers=workers)
    return _finish(conn, report, counts=counts, started=started)


def _finish(
    conn: sqlite3.Connection, report: SyncReport, *, counts: bool, started: float
) -> SyncReport:
    if counts:
        fill_counts(conn, report)
    report.seconds = time.perf_counter() - started
    return report


def _sync(
    conn: sqlite3.Connection,
    root: Path,
    planner: Planner,
    *,
    workers: int | None,
    progress: ProgressFn | None = None,
    clear: bool = False,
) -> SyncReport:
    """Plan from the index and write the plan in one transaction (``clear``: empty the index
    first, in the same transaction).

    The common case, nothing changed, opens no transaction. Otherwise the plan is made again
    inside the write transaction: another connection (the file watcher's, another process's)
    may have synced since, and a plan from before it would write rows it already wrote.
    """
    report = SyncReport()
    first = None if clear else planner(conn)
    if first is not None and not first.stale:
        if first.stamps is not None and first.stamps.pending:
            store_stamps_if_free(conn, first.stamps)
        return report
    # A first build into an empty index writes rows that are consistent by construction (every
    # id comes from the plan), so SQLite's foreign-key lookups on each inserted row are skipped
    # (the pragma cannot change inside a transaction: it is set around it). If another
    # connection wrote in between, the sync starts over with the checks on.
    bulk = clear or (first is not None and _first_build(first))
    unchecked = bulk and conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    if unchecked:
        conn.execute("PRAGMA foreign_keys=OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if clear:
                _clear_index(conn)
            plan = planner(conn)
            if unchecked and plan.indexed:
                conn.execute("ROLLBACK")
            else:
                if plan.stale:
                    _write(conn, root, plan, report, workers=workers, progress=progress)
                if plan.stamps is not None:
                    store_stamps(conn, plan.stamps)
                conn.execute("COMMIT")
                return report
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        if unchecked:
            conn.execute("PRAGMA foreign_keys=ON")
    return _sync(conn, root, planner, workers=workers, progress=progress, clear=clear)


def _first_build(plan: SyncPlan) -> bool:
    """Whether ``plan`` fills an empty index with a bulk write (see ``_sync``)."""
    return not plan.scoped and not plan.indexed and len(plan.added) >= _BULK_MIN


def _write(
    conn: sqlite3.Connection,
    root: Path,
    plan: SyncPlan,
    report: SyncReport,
    *,
    workers: int | None,
    progress: ProgressFn | None,
) -> None:
    """Write ``plan`` into the index (inside the caller's transaction) and fill ``report``."""
    ids = {p: v[1] for p, v in plan.indexed.items() if p in plan.on_disk}
    if plan.scoped:
        ids = _IndexIds(conn, ids)
        next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM files").fetchone()[0]
    else:
        next_id = max((v[1] for v in plan.indexed.values()), default=0) + 1
    # Changed notes are deleted and written again; their ids are kept.
    changed_ids = {p: plan.indexed[p][1] for p in plan.changed}
    delete_files(conn, [plan.indexed[p][1] for p in plan.deleted])
    for p in plan.added:
        ids[p] = next_id
        next_id += 1
    writer = RowWriter(conn, ids)
    _write_attachments(conn, writer, plan, ids, changed_ids)
    fresh: set[int] = set()
    vanished = _write_notes(
        conn, root, plan, writer, ids, changed_ids, report, fresh, workers=workers,
        progress=progress,
    )  # fmt: skip
    keys = {file_key(p) for p in [*plan.added, *plan.deleted, *vanished]}
    # The links parsed in this sync were resolved against the final file list already, unless
    # a note vanished in between (its path was still in that list): only the others need it.
    skip = set() if vanished else fresh
    # A first build parsed every link against the final list: nothing to resolve again.
    first_build = not plan.scoped and not plan.indexed and not vanished
    if keys and not first_build:
        if plan.scoped:  # the index holds the final file list now
            named = _index_named(conn, keys)
        else:
            named = [p for p in plan.on_disk if p not in vanished and _name_key(p) in keys]
        _reresolve(conn, keys, LinkResolver(named), ids, skip)
    report.added = len(plan.added) - len(vanished & set(plan.added))
    report.deleted = len(plan.deleted)


def _write_attachments(
    conn: sqlite3.Connection,
    writer: RowWriter,
    plan: SyncPlan,
    ids: dict[str, int],
    changed_ids: dict[str, int],
) -> None:
    """Add new attachments' file rows; a changed one only gets its new mtime and size."""
    for p in plan.added + plan.changed:
        if _is_note(p):
            continue
        st = plan.on_disk[p]
        if p in changed_ids:
            writer.add(ids[p], NoteRecord(p, st.mtime_ns, st.size, None, unchanged=True))
            continue
        conn.execute(
            "INSERT INTO files (id, path, path_lower, folder, title, is_note, mtime_ns,"
            " size) VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
            (
                ids[p],
                p,
                p.lower(),
                p.rsplit("/", 1)[0] if "/" in p else "",
                p.rsplit("/", 1)[-1],
                st.mtime_ns,
                st.size,
            ),
        )


def _write_notes(
    conn: sqlite3.Connection,
    root: Path,
    plan: SyncPlan,
    writer: RowWriter,
    ids: dict[str, int],
    changed_ids: dict[str, int],
    report: SyncReport,
    fresh: set[int],
    *,
    workers: int | None,
    progress: ProgressFn | None,
) -> set[str]:
    """Parse the added and changed notes and write them; returns the paths that vanished.

    The ids of the notes whose links were parsed and written here are added to ``fresh``.
    """
    notes_to_parse = [p for p in plan.added + plan.changed if _is_note(p)]
    # Bulk mode (most of the vault is written): clear changed notes up front, write into
    # unindexed tables, index once at the end. Changed notes are then parsed in full.
    bulk = len(notes_to_parse) >= _BULK_MIN and 2 * len(notes_to_parse) >= _vault_size(conn, plan)
    saved_indexes: list[str] = []
    if bulk:
        clear_derived(conn, [changed_ids[p] for p in notes_to_parse if p in changed_ids])
        saved_indexes = drop_child_indexes(conn)
        set_fts_buffer(conn, FTS_BUFFER_BULK)
        old_hashes: dict[str, str | None] = {}
    else:
        old_hashes = _hashes(conn, [changed_ids[p] for p in notes_to_parse if p in changed_ids])
    jobs = [(p, plan.on_disk[p], old_hashes.get(p)) for p in notes_to_parse]
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
    vanished: set[str] = set()
    records = _records(str(root), _vault_paths(conn, plan), jobs, n_workers)
    for done, record in enumerate(records, 1):
        _write_record(conn, writer, record, ids, changed_ids, report, vanished, bulk=bulk)
        if not (record.unchanged or record.error):
            fresh.add(ids[record.path])
        if progress is not None:
            progress(done, len(jobs))
    writer.flush()
    if bulk:
        recreate_indexes(conn, saved_indexes)
        set_fts_buffer(conn, FTS_BUFFER_DEFAULT)
    return vanished


def _vault_size(conn: sqlite3.Connection, plan: SyncPlan) -> int:
    """How many files the vault has after the plan (asked only when many notes are parsed)."""
    if not plan.scoped:
        return len(plan.on_disk)
    indexed = int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
    return indexed + sum(1 for p in plan.added if _is_note(p))


def _write_record(
    conn: sqlite3.Connection,
    writer: RowWriter,
    record: NoteRecord,
    ids: dict[str, int],
    changed_ids: dict[str, int],
    report: SyncReport,
    vanished: set[str],
    *,
    bulk: bool,
) -> None:
    fid = ids[record.path]
    changed = record.path in changed_ids
    if changed and not bulk and not record.unchanged and not record.vanished:
        clear_derived(conn, [fid])
    if record.vanished:
        vanished.add(record.path)
        report.skipped.append((record.path, record.error or "vanished"))
        if changed:
            delete_files(conn, [fid])
        del ids[record.path]
        return
    if record.error:
        report.skipped.append((record.path, record.error))
    writer.add(fid, record)
    report.unchanged_content += record.unchanged
    report.parsed += not record.unchanged and not record.error


def fill_counts(conn: sqlite3.Connection, report: SyncReport) -> None:
    report.notes, report.attachments = conn.execute(
        "SELECT COALESCE(SUM(is_note), 0), COALESCE(SUM(1 - is_note), 0) FROM files"
    ).fetchone()
    report.links, report.unresolved_links = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(target_id IS NULL), 0) FROM links"
    ).fetchone()
    report.tags = conn.execute("SELECT COUNT(DISTINCT tag_lower) FROM tags").fetchone()[0]
