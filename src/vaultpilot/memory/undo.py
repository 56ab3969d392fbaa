"""Undoing a change set: every file back to its state before the set, or nothing written.

Contract (the caller holds the vault's write lock and opens a journal ``recording``, so the
undo is itself a change set that can be undone):

* ``undo(root, journal, change_set, skip_changed=...)`` refuses a set that is already undone
  (``ChangeSet.undone_by``: an undo that is not itself undone covers all its changes) with
  InvalidArgumentError naming the undo and when it was made (``already_undone``); undoing that
  undo is how to bring the changes back. Every entry point (CLI, chat, server, MCP) goes
  through here, so they all say the same.
* A set that grew after it was undone (a run still writing) is undone again only for the
  changes after its standing undo (``ChangeSet.remaining``); the earlier ones are that undo's.
  Below, "the change set" means those remaining changes.
* It first checks the whole vault against the state the change set left (each changed note's
  bytes by hash, moved and deleted items where they went, created folders still folders) and
  loads every stored "before" blob. A path that differs is *changed since*: the undo raises
  StaleVersionError naming those files and writes nothing, unless ``skip_changed``, which leaves
  every file change touching such a path alone and undoes the rest. When no change is left to
  undo, it raises StaleVersionError saying so (with or without ``skip_changed``), never a
  success that restored nothing. A missing blob raises StorageError before anything is written.
* Then it walks the changes backwards: rewritten notes get their old bytes back through
  ``files.replace_note`` (compare-before-rename: a note saved meanwhile is refused, not
  overwritten), created notes go to ``.trash/``, moved items move back, deleted ones come back
  out of ``.trash/`` or out of the system trash (``vault.trash``: the journal then holds the
  item's absolute path there). A deleted folder's files are journaled one by one before the
  folder itself, so the folder moves back whole first and its files are found back with it.
  A deleted item whose copy in the trash is gone is not "changed since": a note comes back from
  the journal's stored bytes (``files.create_note``: never over anything), a folder as a new
  folder when a note of it can; a file the journal holds no bytes of is *lost*, refused as
  "emptied from the trash" (``report.lost``) and, with ``skip_changed``, left out like a
  changed file. A note edited in the trash after the delete comes back as it is, named in
  ``report.differ``.
  Folders the set created (``mkdir``: by create_folder, or as the
  parents of a created or moved item) are removed last, deepest first, and only when empty: a
  folder that holds anything stays, and a folder that existed before was never recorded. Each
  step is reported to the journal (``journal.note``): a removed folder as a ``delete`` with no
  place in the trash, which an undo of the undo creates again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vaultpilot.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    PathRefusedError,
    StaleVersionError,
)
from vaultpilot.memory.journal import (
    ChangeSet,
    FileChange,
    Journal,
    StoredChange,
    blob_hash,
    note,
)
from vaultpilot.vault import files, trash
from vaultpilot.wording import plural, were

__all__ = ["UndoReport", "already_undone", "revert", "undo"]

_ABSENT = "absent"
_EXISTS = "exists"
_DIR = "dir"


@dataclass(slots=True)
class UndoReport:
    restored: list[str] = field(default_factory=list)  # every path put back, folders included
    skipped: list[str] = field(default_factory=list)  # changed since: left as they are
    removed: list[str] = field(default_factory=list)  # the empty folders the set had created
    trashed: list[str] = field(default_factory=list)  # notes the set created, now in .trash/
    folders: list[str] = field(default_factory=list)  # the folders among those put back
    binned: list[str] = field(default_factory=list)  # items a restore had taken out of the trash
    binned_folders: list[str] = field(default_factory=list)  # those of them that are folders
    lost: list[str] = field(default_factory=list)  # gone from the trash, with no stored bytes
    rebuilt: list[str] = field(default_factory=list)  # notes written again from the journal
    differ: list[str] = field(default_factory=list)  # restored, but not as they were deleted

    def put_back(self) -> list[str]:
        """The paths restored as they were, folders included (not the created notes trashed,
        nor what went back to the trash)."""
        gone = {*self.removed, *self.trashed, *self.binned}
        # A note changed twice in the set (edited, then appended to) comes back once.
        return [p for p in dict.fromkeys(self.restored) if p not in gone]

    def summary(self) -> str:
        """What the undo did, in words: "restored 2 notes and 1 other file, moved 1 note it had
        created to .trash/ and removed 1 empty folder it had created". A folder put back is
        counted apart from the files in it; what could not come back, or came back other than
        it was deleted, is named."""
        back = [p for p in self.put_back() if p not in self.folders]
        parts = [f"restored {_counted(back, self.folders)}"] if back or self.folders else []
        if self.binned:
            items = [p for p in self.binned if p not in self.binned_folders]
            parts.append(f"moved {_counted(items, self.binned_folders)} back to the trash")
        if self.trashed:
            parts.append(f"moved {plural(len(self.trashed), 'note')} it had created to .trash/")
        if self.removed:
            parts.append(f"removed {plural(len(self.removed), 'empty folder')} it had created")
        said = _joined(parts) if parts else "changed nothing"
        if self.rebuilt:
            again = "written again from the journal: gone from the trash"
            said += f" ({_listed(self.rebuilt)} {again})"
        if self.differ:
            said += f"; {_listed(self.differ)} came back as edited in the trash, not as deleted"
        if self.lost:
            said += f"; {_emptied(self.lost)}"
        return said


def _joined(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def _counted(paths: list[str], folders: list[str]) -> str:
    """'2 notes, 1 other file and 1 folder': notes are Markdown files; folders apart."""
    notes = sum(1 for p in paths if p.lower().endswith(".md"))
    kinds = [(notes, "note"), (len(paths) - notes, "other file" if notes else "file")]
    kinds.append((len(folders), "folder"))
    return _joined([plural(n, word) for n, word in kinds if n]) or "nothing"


def _emptied(paths: list[str]) -> str:
    """What cannot come back: gone from the trash, and the journal holds no bytes of it."""
    if len(paths) == 1:
        return f"{paths[0]} was emptied from the trash; it cannot be restored"
    return f"{_listed(paths)} were emptied from the trash; they cannot be restored"


def _expected(changes: tuple[StoredChange, ...]) -> dict[str, str]:
    """Each touched path's state after the set: a sha256, or absent / exists / dir."""
    state: dict[str, str] = {}
    for c in changes:
        if c.kind in ("create", "update") and c.path_after:
            state[c.path_after] = c.hash_after or _EXISTS
        elif c.kind == "mkdir" and c.path_after:
            state[c.path_after] = _DIR
        elif c.kind == "delete" and c.path_before and not c.path_after:
            state[c.path_before] = _ABSENT  # a folder removed outright (by an undo)
        elif c.kind in ("move", "delete") and c.path_before and c.path_after:
            carried = state.pop(c.path_before, _EXISTS)
            state[c.path_before] = _ABSENT
            state[c.path_after] = _EXISTS if carried in (_ABSENT, _DIR) else carried
            if c.kind == "move" and carried == _DIR:
                state[c.path_after] = _DIR
    return state


def _differs(root: Path, path: str, want: str) -> bool:
    where = root / path
    if want == _ABSENT:
        return os.path.lexists(where)
    if want == _DIR:
        return where.is_symlink() or not where.is_dir()
    if want == _EXISTS:
        return not os.path.lexists(where)
    try:
        return blob_hash(where.read_bytes()) != want
    except OSError:  # unreadable now: not the content recorded, so it counts as changed
        return True


def _restore_from_trash(root: Path, trashed: str, dest: str) -> None:
    """Move ``trashed`` (inside ``.trash/``, or the system trash) back to ``dest``, never
    overwriting."""
    if trash.is_system_trash_path(trashed):
        trash.restore(root, trashed, dest)
        return
    parts = files.normalize_rel_path(trashed).split("/")
    if parts[0] != ".trash" or len(parts) < 2:
        raise PathRefusedError(f"'{trashed}' is not inside .trash/; it cannot be restored.")
    src = root / trashed
    dst = files.confine(root, dest, write=True)
    if os.path.lexists(dst):
        raise AlreadyExistsError(f"Cannot restore '{dest}': something already exists there.")
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        src.rename(dst)
    else:
        os.link(src, dst)  # fails instead of overwriting
        src.unlink()
    # The folders of .trash/ it leaves empty (.trash/ itself included) go too: a run that
    # deleted a note and was undone leaves the vault as it was, not with an empty .trash/.
    folder = src.parent
    while folder != root and folder.is_relative_to(root / ".trash"):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            break
        folder = folder.parent


def already_undone(
    journal: Journal, change_set: ChangeSet, *, redo: str = "undo {id}"
) -> InvalidArgumentError | None:
    """The refusal ``undo`` gives a set already undone (see the module contract), or None.
    ``redo`` is how the caller's user undoes that undo (chat: ``/undo {id}``)."""
    undoer = change_set.undone_by and journal.get(change_set.vault, change_set.undone_by)
    if not undoer:
        return None
    return InvalidArgumentError(
        f"Change set {change_set.id} was already undone by {undoer.id} at {undoer.when}; "
        f"nothing to do. To bring its changes back, {redo.format(id=undoer.id)}."
    )


def _earlier(change_set: ChangeSet) -> str:
    """Says which changes of a partly undone set an undo leaves to its standing undo."""
    if not change_set.last_undo:
        return ""
    return (
        f" (only its changes after undo {change_set.last_undo}: that undo already undid the "
        "earlier ones)"
    )


def _nothing_left(change_set: ChangeSet, changed: list[str], lost: list[str]) -> StaleVersionError:
    if lost and not changed:
        return StaleVersionError(
            f"Nothing of change set {change_set.id}{_earlier(change_set)} can be undone: "
            f"{_emptied(lost)}. Nothing was written."
        )
    if not changed:  # only folders it created, each holding other files now
        return StaleVersionError(
            f"Nothing of change set {change_set.id}{_earlier(change_set)} is left to undo: the "
            "folders it created now hold other files, and are kept; nothing was written."
        )
    return StaleVersionError(
        f"Every change of change set {change_set.id}{_earlier(change_set)} touches a file "
        f"changed since ({_listed(changed)})"
        + (f", and {_emptied(lost)}" if lost else "")
        + ", so there is nothing left to undo; nothing was written."
    )


def _listed(paths: list[str]) -> str:
    return ", ".join(paths[:10]) + (" …" if len(paths) > 10 else "")


def _moved_away(
    change_set: ChangeSet, changed: list[str], lost: list[str], moved: dict[str, str]
) -> StaleVersionError | None:
    """When every file changed since was moved or deleted by later change sets (``moved``:
    path -> that set's id), the refusal names them: they are to be undone first."""
    if not changed or lost or not set(changed) <= set(moved):
        return None
    sets = " and ".join(sorted(set(moved.values())))
    return StaleVersionError(
        f"{plural(len(changed), 'file')} of change set {change_set.id}{_earlier(change_set)} "
        f"{were(len(changed))} moved or deleted since by change set {sets} "
        f"({_listed(changed)}), so nothing was undone. Undo {sets} first, then this one."
    )


def _refused(change_set: ChangeSet, changed: list[str], lost: list[str]) -> StaleVersionError:
    """Why an undo without skip_changed wrote nothing: files changed since, or items gone from
    the trash with no stored bytes (never called "changed")."""
    if not lost:
        return StaleVersionError(
            f"{plural(len(changed), 'file')} changed since change set {change_set.id}"
            f"{_earlier(change_set)}, so nothing was undone: {_listed(changed)}. Undo again "
            "with --skip-changed to restore the other files and leave these as they are."
        )
    also = f" ({plural(len(changed), 'file')} changed since: {_listed(changed)})" if changed else ""
    leave = "it" if len(lost) == 1 and not changed else "these"
    return StaleVersionError(
        f"Nothing of change set {change_set.id}{_earlier(change_set)} was undone: "
        f"{_emptied(lost)}{also}. Undo again with --skip-changed to restore the other files "
        f"and leave {leave} out."
    )


def undo(root: Path, journal: Journal, change_set: ChangeSet, *, skip_changed: bool) -> UndoReport:
    """Restore every file of ``change_set`` to its before state (see the module contract)."""
    refused = already_undone(journal, change_set)
    if refused is not None:
        raise refused
    report = UndoReport()
    changes = change_set.remaining
    todo, changed, lost = _standing(root, changes, report)
    blocked = (changed or lost) and not skip_changed
    if blocked or ((changed or lost) and not any(c.kind != "mkdir" for c in todo)):
        moved = _moved_away(change_set, changed, lost, journal.moved_since(change_set, changed))
        if moved is not None:
            raise moved
    if (changed or lost) and not any(c.kind != "mkdir" for c in todo):
        raise _nothing_left(change_set, changed, lost)
    if blocked:
        raise _refused(change_set, changed, lost)
    befores = {
        c.seq: journal.blob(c.hash_before, c.path_before or "")
        for c in todo
        if c.hash_before is not None
        and (c.kind == "update" or (c.kind == "delete" and _gone(root, c.path_after)))
    }
    _walk_back(root, journal, todo, befores, report)
    if not report.restored:  # nothing was written: say so rather than report a success
        raise _nothing_left(change_set, changed, lost)
    return report


def revert(root: Path, changes: Sequence[FileChange]) -> UndoReport:
    """Put back at once what ``changes`` did, newest first (a recording the journal could not
    store: the vault is left as if the call had not run). Their bytes come with them; a path
    changed since is left as it is and named in ``skipped``, as an undo with skip_changed. A
    note the call created is removed outright (its bytes are the call's own), not put in
    .trash/."""
    stored = tuple(
        StoredChange(
            seq, c.kind, c.operation, c.path_before, c.path_after,
            blob_hash(c.before) if c.before is not None else None,
            blob_hash(c.after) if c.after is not None else None,
            0.0,
        )
        for seq, c in enumerate(changes, 1)
    )  # fmt: skip
    report = UndoReport()
    todo, _, _ = _standing(root, stored, report)
    befores = {seq: c.before for seq, c in enumerate(changes, 1) if c.before is not None}
    _walk_back(root, None, todo, befores, report)
    return report


def _gone(root: Path, trashed: str | None) -> bool:
    """Whether a deleted item's place in the trash (``.trash/…`` or the system trash) is empty."""
    return bool(trashed) and not os.path.lexists(root / (trashed or ""))


def _rebuildable(c: StoredChange, changes: tuple[StoredChange, ...]) -> bool:
    """Whether a deleted item gone from the trash can be made again: a note from its stored
    bytes, a folder (its files recorded one by one) as a new folder when a note of it can."""
    if c.hash_before is not None:
        return True
    inside = (c.path_before or "") + "/"
    return any(
        o.kind == "delete" and o.hash_before and (o.path_before or "").startswith(inside)
        for o in changes
    )


def _standing(
    root: Path, changes: tuple[StoredChange, ...], report: UndoReport
) -> tuple[list[StoredChange], list[str], list[str]]:
    """The changes whose paths are as the set left them (or whose deleted item the journal can
    make again), the paths changed since, and the deleted items gone from the trash that cannot
    come back (each change touching one is named in ``report.skipped`` or ``report.lost``)."""
    places = {
        c.path_after: c for c in changes if c.kind == "delete" and c.path_before and c.path_after
    }
    changed: list[str] = []
    lost: list[str] = []
    for p, want in sorted(_expected(changes).items()):
        if not _differs(root, p, want):
            continue
        if want == _EXISTS and p in places and _gone(root, p):
            if not _rebuildable(places[p], changes):
                lost.append(p)
            continue
        changed.append(p)
    blocked = {*changed, *lost}
    todo: list[StoredChange] = []
    for c in changes:
        if {c.path_before, c.path_after} & blocked:
            known = c.path_before if c.kind == "delete" else c.path_after  # as a person knows it
            shown = known or c.path_before or c.path_after or ""
            (report.lost if c.path_after in lost else report.skipped).append(shown)
            continue
        todo.append(c)
    return todo, changed, [places[p].path_before or p for p in lost]


def _walk_back(
    root: Path,
    journal: Journal | None,
    todo: list[StoredChange],
    befores: Mapping[int, bytes],
    report: UndoReport,
) -> None:
    """Undo ``todo`` newest first (an update from its ``befores`` bytes, by seq), then remove
    the folders it created, deepest first, when empty."""
    created: dict[str, str] = {}  # folder -> the operation that created it, removed last
    for c in reversed(todo):
        if c.kind == "mkdir" and c.path_after:
            created.setdefault(c.path_after, c.operation)
        else:
            _undo_one(root, journal, c, befores.get(c.seq), report)
    for folder in sorted(created, key=lambda f: f.count("/"), reverse=True):
        _remove_if_empty(root, journal, folder, f"undo {created[folder]}", report)
    report.skipped = list(dict.fromkeys(report.skipped))


def _remove_if_empty(
    root: Path, journal: Journal | None, folder: str, op: str, report: UndoReport
) -> None:
    """Remove a folder the change set created, if it is (still) an empty folder."""
    if not files.remove_empty_folder(root, folder):
        return  # holds something, is no folder now, or may not be written: left as it is
    note(journal, FileChange("delete", folder, None, None, None, op))
    report.restored.append(folder)
    report.removed.append(folder)


def _note_new_folders(journal: Journal | None, folders: list[str], op: str) -> None:
    for folder in folders:
        note(journal, FileChange("mkdir", None, folder, None, None, op))


def _came_back(root: Path, c: StoredChange, report: UndoReport) -> bool:
    """Whether a file deleted with its folder is back already: the folder's record (journaled
    after its files', so undone before them) moved the whole folder back out of the trash."""
    path, trashed = c.path_before or "", c.path_after or ""
    return (
        any(path.startswith(folder + "/") for folder in report.folders)
        and os.path.lexists(root / path)
        and not os.path.lexists(trashed if trash.is_system_trash_path(trashed) else root / trashed)
    )


def _undo_one(
    root: Path, journal: Journal | None, c: StoredChange, before: bytes | None, report: UndoReport
) -> None:
    op = f"undo {c.operation}"
    if c.kind == "update" and c.path_after and before is not None:
        current = files.read_note(root, c.path_after)
        text, fmt = files.decode_note(before, c.path_after)
        files.replace_note(root, c.path_after, text, fmt, base=current)
        now = files.encode_note(current.text, current.fmt)
        note(journal, FileChange("update", c.path_after, c.path_after, now, before, op))
        report.restored.append(c.path_after)
    elif c.kind == "create" and c.path_after and journal is None:
        (root / c.path_after).unlink()  # a revert: the call made it, as checked; it goes
        report.restored.append(c.path_after)
    elif c.kind == "create" and c.path_after:
        data = (root / c.path_after).read_bytes()
        trashed = files.move_to_trash(root, c.path_after)
        note(journal, FileChange("delete", c.path_after, trashed, data, None, op))
        report.restored.append(c.path_after)
        report.trashed.append(c.path_after)
    elif (
        c.kind == "move"
        and c.path_before
        and c.path_after
        and (c.path_before.startswith(".trash/") or trash.is_system_trash_path(c.path_before))
    ):
        where = root / c.path_after
        folder = where.is_dir() and not where.is_symlink()
        inside = sorted(p for p in where.rglob("*") if p.is_file()) if folder else []
        trashed = files.move_to_trash(root, c.path_after)  # an undone restore: back to the bin
        note(journal, FileChange("delete", c.path_after, trashed, None, None, op))
        report.restored.append(c.path_after)
        report.binned.append(c.path_after)
        if folder:  # counted as the folder and the files it holds
            report.binned_folders.append(c.path_after)
            report.binned += [f"{c.path_after}/{p.relative_to(where).as_posix()}" for p in inside]
    elif c.kind == "move" and c.path_before and c.path_after:
        made = files.missing_parents(root, c.path_before)
        files.move_path(root, c.path_after, c.path_before)
        note(journal, FileChange("move", c.path_after, c.path_before, None, None, op))
        _note_new_folders(journal, made, op)
        report.restored.append(c.path_before)
    elif c.kind == "delete" and c.path_before and c.path_after and _came_back(root, c, report):
        report.restored.append(c.path_before)  # with its folder, just moved back whole
        _check_as_deleted(root, c, report)
    elif c.kind == "delete" and c.path_before and c.path_after and _gone(root, c.path_after):
        _rebuild(root, journal, c, before, report)
    elif c.kind == "delete" and c.path_before and c.path_after:
        made = files.missing_parents(root, c.path_before)
        _restore_from_trash(root, c.path_after, c.path_before)
        # Undoing this undo moves it back to the same place in .trash/ (a move out of it).
        note(journal, FileChange("move", c.path_after, c.path_before, None, None, op))
        _note_new_folders(journal, made, op)
        report.restored.append(c.path_before)
        if c.hash_before is None and (root / c.path_before).is_dir():
            report.folders.append(c.path_before)
        _check_as_deleted(root, c, report)
    elif c.kind == "delete" and c.path_before:  # a folder an undo removed: create it again
        made = files.missing_parents(root, c.path_before)
        files.create_folder(root, c.path_before)
        _note_new_folders(journal, [*made, c.path_before], op)
        report.restored.append(c.path_before)


def _check_as_deleted(root: Path, c: StoredChange, report: UndoReport) -> None:
    """Name a note that came back out of the trash other than it was deleted (edited there)."""
    if c.hash_before is None or not c.path_before:
        return
    try:
        same = blob_hash((root / c.path_before).read_bytes()) == c.hash_before
    except OSError:
        same = False
    if not same:
        report.differ.append(c.path_before)


def _rebuild(
    root: Path, journal: Journal | None, c: StoredChange, before: bytes | None, report: UndoReport
) -> None:
    """A deleted item gone from the trash made again: a note from the journal's bytes (never
    over anything: ``files.create_note`` refuses an existing path), a folder as a new folder
    (its notes follow, each from its own record). Recorded as created, so undoing this undo
    sends them to the trash again."""
    path, op = c.path_before or "", f"undo {c.operation}"
    made = files.missing_parents(root, path)
    if before is None:  # a folder (``_rebuildable``): its files come back one by one
        files.create_folder(root, path)
        _note_new_folders(journal, [*made, path], op)
        report.folders.append(path)
    else:
        text, fmt = files.decode_note(before, path)
        files.create_note(root, path, text, fmt=fmt)
        note(journal, FileChange("create", None, path, None, before, op))
        _note_new_folders(journal, made, op)
        report.rebuilt.append(path)
    report.restored.append(path)
