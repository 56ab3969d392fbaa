"""Folder operations of ``obsidian_vault_manager``: create_folder, delete_folder, move_folder.

Deleting needs ``confirmDestructive=true``, and ``recursive=true`` too when the folder is not
empty; the folder goes to the trash the vault's settings name (``vault.trash``). Moving carries
every file inside and rewrites every link to them across the vault (``moves``); ``destination``
is an existing folder to move into, or else the folder's new path (its parent must exist unless
``createFolders``). A folder moves whole: a per-file approval (``approvedFiles``) may leave out
only the other notes whose links would be rewritten. ``dryRun`` returns the diffs: each file
removed or moved, and each note whose links would change.
"""

from __future__ import annotations

from pathlib import Path

from vaultpilot.errors import (
    ConfirmationRequiredError,
    InvalidArgumentError,
    NotFoundError,
    VaultpilotError,
)
from vaultpilot.index.lookup import paths_under
from vaultpilot.memory import journal
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.diffs import FileDiff, binary, unified
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.moves import links_after_removal, move_items, preview_moves
from vaultpilot.tools.notes import folder_arg, log_change, log_folders, new_folders
from vaultpilot.tools.ops import done, dry, need, require_confirmation
from vaultpilot.tools.results import OperationResult
from vaultpilot.vault import files, trash
from vaultpilot.wording import plural

__all__ = [
    "create_folder",
    "delete_folder",
    "folder_exists",
    "move_folder",
    "refused_links",
    "removal_diff",
]


def folder_exists(ctx: ToolContext, folder: str) -> bool:
    return files.confine(ctx.root, folder).is_dir() if folder else True


def create_folder(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    folder = files.normalize_rel_path(need(p.target, "target", p.operation, "'Projects/2025/Q1'"))
    if folder.lower().endswith(".md"):
        raise InvalidArgumentError(
            f"'{folder}' looks like a note; use operation='create_note' to create notes."
        )
    if p.dry_run:  # refused as ``files.create_folder`` would refuse the write, by its own check
        if files.check_create_folder(ctx.root, folder, create_parents=p.create_folders):
            return dry(done(p, [], f"folder '{folder}' already exists."), [])
        return dry(done(p, [folder], f"would create folder '{folder}'."), [])
    made = new_folders(ctx, folder)
    if not files.create_folder(ctx.root, folder, create_parents=p.create_folders):
        return done(p, [], f"Folder '{folder}' already exists; nothing changed.")
    log_folders(ctx, made)
    log_change(ctx, "mkdir", None, folder)
    return done(p, [folder], f"Created folder '{folder}'.")


def _existing_folder(ctx: ToolContext, target: str) -> str:
    folder = files.normalize_rel_path(target)
    if not folder:
        raise InvalidArgumentError(
            "The vault root itself can't be deleted or moved; name a folder."
        )
    where = files.confine(ctx.root, folder)
    if not where.is_dir():
        what = (
            "is a note; use the *_note operations for notes" if where.is_file() else "doesn't exist"
        )
        raise NotFoundError(
            f"Folder '{folder}' {what}. See the folders with obsidian_query_vault "
            "queryType='list_structure'."
        )
    return folder


def delete_folder(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    require_confirmation(p)
    folder = _existing_folder(ctx, need(p.target, "target", p.operation, "'Archive/Old'"))
    # What ``trash.move_to_trash`` refuses first (a link into .obsidian/, .trash/ itself, ...),
    # before anything in the folder is looked at.
    files.check_trash(ctx.root, folder)
    entries = [e for e in files.confine(ctx.root, folder).rglob("*")]
    notes = sum(1 for e in entries if e.is_file() and e.name.lower().endswith(".md"))
    others = sum(1 for e in entries if e.is_file()) - notes
    held = [plural(notes, "note")] if notes else []
    held += [plural(others, "other file" if notes else "file")] if others else []
    if entries and not p.recursive:
        raise ConfirmationRequiredError(
            f"Folder '{folder}' is not empty: it holds {' and '.join(held) or 'empty folders'}"
            ". Set recursive=true (with "
            "confirmDestructive=true) to move the folder and everything in it to .trash/, or "
            "move its notes elsewhere first."
        )
    inside = set(paths_under(ctx.conn, folder))
    warnings = links_after_removal(ctx, inside, "notes that were in it", dry=p.dry_run)
    counts = ", ".join(held) or "empty"
    if p.dry_run:
        diffs = [removal_diff(ctx, q) for q in sorted(inside)]
        message = f"would delete folder '{folder}' ({counts})."
        return dry(done(p, [folder], message, warnings), diffs)
    trashed = trash.move_to_trash(ctx.root, folder)
    _log_contents(ctx, folder, trashed.path)
    log_change(ctx, "delete", folder, trashed.path)
    ctx.fresh(force=True, paths=[folder])  # everything indexed under it is gone
    if trashed.note:
        warnings.append(trashed.note)
    return done(p, [folder], f"Moved folder '{folder}' ({counts}) to '{trashed.path}'.", warnings)


def _log_contents(ctx: ToolContext, folder: str, trashed: str) -> None:
    """Journal each file of a folder just moved to ``trashed`` as deleted on its own, a note
    with its text (read from the trash, where nothing else writes): the run's changes list each
    note, and an undo puts each back (the folder's record, written first, is undone last)."""
    if not journal.active(ctx.journal):
        return
    where = Path(trashed) if Path(trashed).is_absolute() else ctx.root / trashed
    for item in sorted(where.rglob("*")):
        if item.is_symlink() or not item.is_file():
            continue
        rel = item.relative_to(where).as_posix()
        try:
            data = item.read_bytes() if rel.lower().endswith(".md") else None
        except OSError:
            data = None
        log_change(ctx, "delete", f"{folder}/{rel}", f"{trashed}/{rel}", before=data)


def removal_diff(ctx: ToolContext, path: str) -> FileDiff:
    """The diff of removing ``path``: its text, or a binary diff for a file that is not a text
    note (a delete takes those too, so its dry run must not stop at reading them)."""
    if not path.lower().endswith(".md"):
        return binary(path, None)
    try:
        return unified(path, None, files.read_note(ctx.root, path).text, "")
    except VaultpilotError:
        return binary(path, None)


def move_folder(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    folder = _existing_folder(ctx, need(p.target, "target", p.operation, "'Projects/Old'"))
    dest = folder_arg(need(p.destination, "destination", p.operation, "'Archive'"))
    name = folder.rsplit("/", 1)[-1]
    new = f"{dest}/{name}" if folder_exists(ctx, dest) else dest
    new = new.strip("/")
    if new == folder:
        where = f"in '{dest}'" if dest else "at the vault's top"
        raise InvalidArgumentError(
            f"Folder '{folder}' is already {where}; give another destination."
        )
    if new.startswith(folder + "/"):
        raise InvalidArgumentError(f"Cannot move folder '{folder}' into itself.")
    parent = new.rsplit("/", 1)[0] if "/" in new else ""
    if not p.create_folders and not folder_exists(ctx, parent):
        raise files.missing_folder(parent, f"move folder '{folder}' to '{new}'")
    file_moves = {q: new + q[len(folder) :] for q in paths_under(ctx.conn, folder)}
    if p.dry_run or p.approved_files is not None:
        diffs, plan = preview_moves(ctx, [(folder, new)], file_moves, operation=p.operation)
        if plan.errors:
            raise plan.errors[0]
        if p.dry_run:
            moves = plural(len(file_moves), "file")
            message = f"would move folder '{folder}' to '{new}' ({moves})" + (
                f" and update {plural(plan.links_changed, 'link')}." if plan.links_changed else "."
            )
            return dry(done(p, [new, *plan.rewritten], message, plan.warnings), diffs)
        ticked = set(p.approved_files or [])
        left = [q for q in file_moves.values() if q not in ticked]
        if left:
            raise InvalidArgumentError(
                f"A folder moves whole, but {len(left)} of its files were not approved "
                f"({', '.join(left[:5])}). Approve every file inside '{new}' and leave out only "
                "other notes whose links you do not want rewritten, or reject the move."
            )
    report = move_items(
        ctx, [(folder, new)], file_moves, only=p.approved_files, operation=p.operation
    )
    if report.errors:
        raise report.errors[0]
    others = [r for r in report.rewritten if not r.startswith(new + "/")]
    message = f"Moved folder '{folder}' to '{new}' ({plural(len(file_moves), 'file')})" + (
        f"; updated {plural(report.links_changed, 'link')} in "
        f"{plural(len(report.rewritten), 'note')}."
        if report.rewritten
        else "."
    )
    return done(p, [new, *others], message, [*report.warnings, *refused_links(report.refused)])


def refused_links(refused: list[str]) -> list[str]:
    """The warning for link rewrites a person did not approve."""
    if not refused:
        return []
    return [
        f"Links in {plural(len(refused), 'note')} were not updated because their change was not "
        f"approved, so they may no longer lead to the moved notes: {', '.join(refused[:5])}"
        + (" …" if len(refused) > 5 else "")
    ]
