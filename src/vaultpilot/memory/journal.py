"""The change journal: every change to a vault, grouped in change sets, kept in memory.db.

Contract:

* A *change set* is one ``obsidian_vault_manager`` call outside an agent run, or a whole run
  when the caller gives its id (``ToolContext.change_set``): the file changes of later calls
  with that id are appended to it. Each set records the vault, its source (``cli``, ``server``,
  ``mcp``, ``agent``), the run id, a summary (the tool operations) and, for an undo, the set it
  undid.
* A *file change* has a kind (``create``, ``update``, ``delete``, ``move``, ``mkdir``), the
  tool operation that made it, the path before and after (a delete's "after" is its place in
  ``.trash/``) and the bytes before and after, stored once per SHA-256 in ``journal_blobs``.
* ``recording(journal, ...)`` collects the changes ``note()`` reports while it is open (per
  thread and task: a ``ContextVar``) and writes them in one transaction when it closes, also
  when the call failed half-way (a bulk operation's changed notes are changes all the same).
  With no journal, or outside ``recording``, ``note()`` does nothing and ``active()`` is false,
  so callers skip reading the bytes.
* The *standing undo* of a change set is the newest change set whose ``undo_of`` names it and
  that is not itself undone (undoing an undo brings the changes back, so the set stands again).
  "Newest" and "older" are insertion order (SQLite rowids), never the wall clock, which can
  step back. An undo counts only for the file changes older than its own: a run's set that
  kept growing after it was undone (the run still writing) is *partly undone*
  (``ChangeSet.undone_through``: the last ``seq`` the standing undo covered), and undoing it
  again undoes the changes after that (``ChangeSet.remaining``). A set is *undone*
  (``ChangeSet.undone_by``, ``Journal.undone_by``) when its standing undo covers every change;
  ``undo`` refuses such a set. (A simplification: the standing undo counts for every older
  change, also those an earlier undo covered and an undo of that earlier undo brought back.)
* The tools record each folder a write created (``files.missing_parents`` names them before
  it) as a ``mkdir`` change after the write, so undo can remove them again.
* Agent runs are named ``run-`` and 12 hex digits (``new_run_id``), the other change sets
  12 hex digits.
* ``Journal`` opens its connection on first use (a context that never writes never touches
  memory.db); the owner calls ``close()``. Database failures raise ``StorageError``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from vaultpilot.errors import (
    InvalidArgumentError,
    NotFoundError,
    StorageError,
    VaultpilotError,
    database_advice,
)
from vaultpilot.memory.db import connect

__all__ = [
    "ChangeKind",
    "ChangeSet",
    "FileChange",
    "Journal",
    "active",
    "blob_hash",
    "new_run_id",
    "note",
    "recording",
    "without_parent_folders",
]

ChangeKind = Literal["create", "update", "delete", "move", "mkdir"]


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_run_id() -> str:
    """The id of a new agent run, which is also its change set's id."""
    return f"run-{uuid.uuid4().hex[:12]}"


def _parents(paths: Iterable[str | None]) -> set[str]:
    return {
        "/".join(parts[:i])
        for path in paths
        if path
        for parts in [path.split("/")]
        for i in range(1, len(parts))
    }


def without_parent_folders(changes: Sequence[StoredChange]) -> tuple[StoredChange, ...]:
    """The changes of a set without the folders made only to hold another change's path (a
    move into a new folder is one change a person sees, not two), nor a deleted folder whose
    files are recorded one by one (a person sees the notes deleted, each with its text)."""
    made = _parents(c.path_after for c in changes)
    deleted = _parents(c.path_before for c in changes if c.kind == "delete")
    return tuple(
        c
        for c in changes
        if not (c.kind == "mkdir" and c.path_after in made)
        and not (c.kind == "delete" and c.path_before in deleted)
    )


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file change as the tools report it (bytes, not yet stored)."""

    kind: ChangeKind
    path_before: str | None
    path_after: str | None
    before: bytes | None = None
    after: bytes | None = None
    operation: str = ""


@dataclass(frozen=True, slots=True)
class StoredChange:
    """One file change as the journal holds it (contents by hash)."""

    seq: int
    kind: ChangeKind
    operation: str
    path_before: str | None
    path_after: str | None
    hash_before: str | None
    hash_after: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class ChangeSet:
    id: str
    vault: str
    source: str
    run_id: str | None
    summary: str
    undo_of: str | None
    created_at: float
    changes: tuple[StoredChange, ...] = field(default=())
    last_undo: str | None = None  # the standing undo (module contract), covering some or all
    undone_through: int = 0  # the last seq ``last_undo`` covered (0: none)

    @property
    def undone_by(self) -> str | None:
        """The standing undo when it covers every change of the set, else None."""
        return self.last_undo if self.last_undo and not self.remaining else None

    @property
    def remaining(self) -> tuple[StoredChange, ...]:
        """The changes no standing undo covers (all of them when the set was never undone)."""
        return tuple(c for c in self.changes if c.seq > self.undone_through)

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.created_at).astimezone().isoformat(timespec="seconds")

    def paths(self) -> list[str]:
        """The notes and folders the set changed, each once, under the path a person knows: a
        delete's note where it was (not its place in the trash), anything else where it is;
        folders made to hold them, or deleted with them, go unsaid (``without_parent_folders``)."""
        out = [
            (c.path_before if c.kind == "delete" else c.path_after) or c.path_before or ""
            for c in without_parent_folders(self.changes)
        ]
        return list(dict.fromkeys(p for p in out if p))

    def as_json(self) -> dict[str, Any]:
        """The change set as ``vaultpilot history --json`` and the server's history show it."""
        return {
            "id": self.id,
            "when": self.when,
            "source": self.source,
            "runId": self.run_id,
            "summary": self.summary,
            "undoOf": self.undo_of,
            "undoneBy": self.undone_by,
            "files": [
                {"kind": c.kind, "operation": c.operation, "from": c.path_before,
                 "to": c.path_after}
                for c in self.changes
            ],
        }  # fmt: skip


@dataclass(slots=True)
class _Pending:
    journal: Journal
    vault: str
    set_id: str
    run_id: str | None
    operation: str
    undo_of: str | None
    changes: list[FileChange] = field(default_factory=list)


_pending: ContextVar[_Pending | None] = ContextVar("vaultpilot_journal_pending", default=None)


_HEAD = "SELECT id, vault, source, run_id, summary, undo_of, created_at FROM change_sets"


class Journal:
    """The change journal in the memory database at ``path`` (opened on first use)."""

    def __init__(self, path: Path, *, source: str = "cli") -> None:
        self.path = path
        self.source = source
        self._conn: sqlite3.Connection | None = None
        self._guard = threading.Lock()  # one connection, several server threads

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = connect(self.path, check_same_thread=False)  # guarded by self._guard
            conn.execute("PRAGMA foreign_keys = ON")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _fail(self, what: str, exc: sqlite3.Error) -> StorageError:
        advice = database_advice(exc, self.path)
        return StorageError(
            f"Could not {what} the change journal in '{self.path}': {exc}. {advice}"
        )

    def store(
        self,
        vault: str,
        set_id: str,
        changes: list[FileChange],
        *,
        run_id: str | None = None,
        operation: str = "",
        undo_of: str | None = None,
        source: str | None = None,
    ) -> None:
        """Append ``changes`` to change set ``set_id`` (created if new), in one transaction;
        ``source`` names who made it when not this journal's own source."""
        now = time.time()
        with self._guard:
            conn = self._db()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    blobs = {
                        blob_hash(b): b
                        for c in changes
                        for b in (c.before, c.after)
                        if b is not None
                    }
                    conn.executemany(
                        "INSERT OR IGNORE INTO journal_blobs (hash, data) VALUES (?, ?)",
                        list(blobs.items()),
                    )
                    row = conn.execute(
                        "SELECT summary FROM change_sets WHERE id = ?", (set_id,)
                    ).fetchone()
                    if row is None:
                        who = source or self.source
                        conn.execute(
                            "INSERT INTO change_sets (id, vault, source, run_id, summary, undo_of,"
                            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (set_id, vault, who, run_id, operation, undo_of, now, now),
                        )
                    else:
                        ops = str(row[0]).split(", ") if row[0] else []
                        summary = ", ".join(dict.fromkeys([*ops, operation]))
                        conn.execute(
                            "UPDATE change_sets SET summary = ?, updated_at = ? WHERE id = ?",
                            (summary, now, set_id),
                        )
                    start = conn.execute(
                        "SELECT COALESCE(MAX(seq), 0) FROM file_changes WHERE set_id = ?",
                        (set_id,),
                    ).fetchone()[0]
                    conn.executemany(
                        "INSERT INTO file_changes (set_id, seq, operation, kind, path_before,"
                        " path_after, hash_before, hash_after, created_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                set_id,
                                start + i,
                                c.operation or operation,
                                c.kind,
                                c.path_before,
                                c.path_after,
                                None if c.before is None else blob_hash(c.before),
                                None if c.after is None else blob_hash(c.after),
                                now,
                            )
                            for i, c in enumerate(changes, 1)
                        ],
                    )
                except BaseException:
                    if conn.in_transaction:  # SQLite ends it itself on a full disk
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:  # a COMMIT that failed leaves it open
                    conn.execute("ROLLBACK")
                raise self._fail("write to", exc) from None

    def change_sets(self, vault: str, *, limit: int = 50) -> list[ChangeSet]:
        """The vault's change sets, newest first, with their file changes."""
        with self._guard:
            try:
                conn = self._db()
                rows = conn.execute(
                    f"{_HEAD} WHERE vault = ? ORDER BY updated_at DESC, rowid DESC LIMIT ?",
                    (vault, limit),
                ).fetchall()
                undos = self._undos(conn, vault)  # once for the whole list
                return [self._load(conn, row, undos) for row in rows]
            except sqlite3.Error as exc:
                raise self._fail("read", exc) from None

    def last_id(self, vault: str) -> str:
        sets = self.change_sets(vault, limit=1)
        if not sets:
            raise NotFoundError(
                "The change journal of this vault is empty: there is nothing to undo."
            )
        return sets[0].id

    def last_to_undo(self, vault: str) -> str:
        """The newest change set that still stands and is not itself an undo: what "undo the
        last change" means, so a second undo goes further back instead of redoing the first
        (redo is undoing an undo, by its id)."""
        sets = self.change_sets(vault, limit=500)
        for cs in sets:
            if cs.undo_of is None and cs.undone_by is None:
                return cs.id
        if not sets:
            raise NotFoundError(
                "The change journal of this vault is empty: there is nothing to undo."
            )
        raise NotFoundError(
            "Every change of this vault is undone already: there is nothing left to undo "
            "(`vaultpilot history` lists them; to redo one, undo its undo by id)."
        )

    def _undos(self, conn: sqlite3.Connection, vault: str) -> dict[str, tuple[str, int | None]]:
        """Each undone change set of ``vault`` -> its standing undo (module contract) and the
        rowid of that undo's first file change (None: it has none, so it covers everything).

        An undo is always inserted after the set it undoes, so walking the undos newest first
        (by rowid) settles whether each one is itself undone before it is looked at as an undo.
        An undo never grows (it is a set of its own), so any standing undo of it covers it all.
        """
        rows = conn.execute(
            "SELECT s.id, s.undo_of, (SELECT MIN(f.rowid) FROM file_changes f"
            " WHERE f.set_id = s.id) FROM change_sets s"
            " WHERE s.vault = ? AND s.undo_of IS NOT NULL ORDER BY s.rowid DESC",
            (vault,),
        ).fetchall()
        standing: dict[str, tuple[str, int | None]] = {}
        for set_id, target, first in rows:  # newest first
            if str(set_id) not in standing and str(target) not in standing:
                standing[str(target)] = (str(set_id), first)
        return standing

    def moved_since(self, change_set: ChangeSet, paths: Sequence[str]) -> dict[str, str]:
        """Which of ``paths`` a later change set of the vault moved or deleted (the path, or a
        folder above it): path -> the id of the first such set. Empty when none did."""
        wanted = {p: {p, *_parents([p])} for p in paths}
        names = sorted(set().union(*wanted.values())) if wanted else []
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        with self._guard:
            try:
                rows = (
                    self._db()
                    .execute(
                        "SELECT f.set_id, f.path_before FROM file_changes f"  # noqa: S608
                        " JOIN change_sets s ON s.id = f.set_id WHERE s.vault = ? AND s.rowid >"
                        " (SELECT rowid FROM change_sets WHERE id = ?) AND s.undo_of IS NULL"
                        " AND f.path_before IN ("
                        + marks
                        + ") AND f.path_after IS NOT f.path_before"
                        " ORDER BY f.rowid",
                        (change_set.vault, change_set.id, *names),
                    )
                    .fetchall()
                )
            except sqlite3.Error as exc:
                raise self._fail("read", exc) from None
        first: dict[str, str] = {}
        for set_id, before in rows:
            first.setdefault(str(before), str(set_id))
        out: dict[str, str] = {}
        for path, names_of in wanted.items():
            found = [first[n] for n in names_of if n in first]
            if found:
                out[path] = found[0]
        return out

    def undone_by(self, vault: str, set_id: str) -> ChangeSet | None:
        """The change set that undid ``set_id`` and still stands, or None."""
        undoer = self.get(vault, set_id).undone_by
        return self.get(vault, undoer) if undoer else None

    def get(self, vault: str, set_id: str) -> ChangeSet:
        """One change set of ``vault`` (a unique prefix of its id works): NotFoundError for an
        unknown id; InvalidArgumentError for an empty one or a prefix matching several sets,
        naming them."""
        if not set_id.strip():
            raise InvalidArgumentError(
                "The change-set id is empty: give one as `vaultpilot history` lists it."
            )
        with self._guard:
            try:
                conn = self._db()
                rows = conn.execute(
                    f"{_HEAD} WHERE vault = ? AND id = ?", (vault, set_id)
                ).fetchall()
                if not rows:
                    escaped = set_id.replace("\\", "\\\\").replace("%", "\\%")
                    rows = conn.execute(
                        f"{_HEAD} WHERE vault = ? AND id LIKE ? ESCAPE '\\' LIMIT 9",
                        (vault, escaped.replace("_", "\\_") + "%"),
                    ).fetchall()
                if len(rows) > 1:
                    shown = ", ".join(str(r[0]) for r in rows[:8]) + (" …" if len(rows) > 8 else "")
                    raise InvalidArgumentError(
                        f"'{set_id}' matches several change sets: {shown}; give more of the id."
                    )
                if not rows:
                    raise NotFoundError(
                        f"No change set '{set_id}' in this vault's journal. See the ids with "
                        "`vaultpilot history`."
                    )
                return self._load(conn, rows[0], self._undos(conn, vault))
            except sqlite3.Error as exc:
                raise self._fail("read", exc) from None

    @staticmethod
    def _load(
        conn: sqlite3.Connection, row: Any, undos: dict[str, tuple[str, int | None]]
    ) -> ChangeSet:
        set_id, vault, source, run_id, summary, undo_of, created = row
        changes = conn.execute(
            "SELECT rowid, seq, kind, operation, path_before, path_after, hash_before,"
            " hash_after, created_at FROM file_changes WHERE set_id = ? ORDER BY seq",
            (set_id,),
        ).fetchall()
        undoer, first = undos.get(str(set_id), (None, None))
        # The changes stored before the standing undo's own are the ones it covered.
        covered = [c[1] for c in changes if undoer and (first is None or c[0] < first)]
        return ChangeSet(
            str(set_id),
            str(vault),
            str(source),
            run_id,
            str(summary),
            undo_of,
            float(created),
            changes=tuple(StoredChange(*c[1:]) for c in changes),
            last_undo=undoer,
            undone_through=max(covered, default=0),
        )

    def blob(self, digest: str, path: str) -> bytes:
        """The stored bytes with this hash; StorageError naming ``path`` if they are missing."""
        with self._guard:
            try:
                row = (
                    self._db()
                    .execute("SELECT data FROM journal_blobs WHERE hash = ?", (digest,))
                    .fetchone()
                )
            except sqlite3.Error as exc:
                raise self._fail("read", exc) from None
        if row is None:
            raise StorageError(
                f"The journal has lost the stored content of '{path}' (blob {digest[:12]}), so "
                "this change set cannot be undone or shown; nothing was changed."
            )
        return bytes(row[0])


@contextmanager
def recording(
    journal: Journal | None,
    vault: str,
    operation: str,
    *,
    change_set: str | None = None,
    undo_of: str | None = None,
    source: str | None = None,
    revert: Callable[[Sequence[FileChange]], list[str]] | None = None,
) -> Iterator[str | None]:
    """Collect the file changes ``note()`` reports inside, and store them as one change set.

    Yields the change-set id (None without a journal). Without ``change_set`` a new id is made.
    ``source`` names the entry point when it is not the journal's own (an MCP client served by
    ``vaultpilot serve``). When the changes cannot be stored (a full disk, a database that may
    not be written), ``revert(changes)`` puts them back at once, returning the paths it had to
    leave (changed meanwhile), so a change that could not be recorded is not made either.
    """
    if journal is None:
        yield None
        return
    set_id = change_set or uuid.uuid4().hex[:12]
    pending = _Pending(journal, vault, set_id, change_set, operation, undo_of)
    token = _pending.set(pending)
    try:
        yield set_id
    finally:
        _pending.reset(token)
        if pending.changes:
            try:
                journal.store(
                    vault,
                    set_id,
                    pending.changes,
                    run_id=change_set,
                    operation=operation,
                    undo_of=undo_of,
                    source=source,
                )
            except StorageError as err:
                raise _not_recorded(err, pending.changes, revert) from None


def _not_recorded(
    err: StorageError,
    changes: list[FileChange],
    revert: Callable[[Sequence[FileChange]], list[str]] | None,
) -> StorageError:
    """The error for changes the journal could not store, after putting them back if it can."""
    if revert is not None:
        try:
            left = revert(changes)
        except (VaultpilotError, OSError) as exc:
            why = exc.message if isinstance(exc, VaultpilotError) else exc.strerror or str(exc)
            return StorageError(
                f"The change was made, but it could not be recorded ({err.message}), and putting "
                f"it back failed: {why} It cannot be undone with `vaultpilot undo`."
            )
        if not left:
            return StorageError(
                f"Nothing was changed: the change could not be recorded in the change journal, "
                f"so it was put back at once. {err.message}"
            )
        return StorageError(
            f"The change could not be recorded in the change journal, so it was put back, "
            f"except {', '.join(left[:5])} (changed meanwhile, left as it is). {err.message}"
        )
    # The files are already written: say so, rather than suggest nothing happened.
    return StorageError(
        "The change was made, but it could not be recorded, so it cannot be undone with "
        f"`vaultpilot undo`. {err.message}"
    )


def active(journal: Journal | None) -> bool:
    """Whether a change reported now would be recorded (callers skip reading bytes if not)."""
    pending = _pending.get()
    return journal is not None and pending is not None and pending.journal is journal


def note(journal: Journal | None, change: FileChange) -> None:
    """Report one file change to the open ``recording`` of ``journal`` (else nothing)."""
    pending = _pending.get()
    if journal is not None and pending is not None and pending.journal is journal:
        pending.changes.append(change)
