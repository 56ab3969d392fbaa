"""Folder operations of ``obsidian_vault_manager``: create_folder, delete_folder, move_folder.

Deleting needs ``confirmDestructive=true``, and ``recursive=true`` too when the folder is not
empty; the folder goes to ``.trash/``. Moving carries every file inside and rewrites every link to
them across the vault (``moves``). ``destination`` is an existing folder to move into, or else
the folder's new path (its parent must exist unless ``createFolders``).
"""

from __future__ import annotations

from vaultpilot.errors import ConfirmationRequiredError, InvalidArgumentError, NotFoundError
from vaultpilot.index.lookup import paths_under
from vaultpilot.index.queries import backlinks
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.moves import move_items
from vaultpilot.tools.notes import folder_arg, log_change
from vaultpilot.tools.ops import done, need, require_confirmation
from vaultpilot.tools.results import OperationResult
from vaultpilot.vault import files

__all__ = ["create_folder", "delete_folder", "folder_exists", "missing_folder", "move_folder"]


def folder_exists(ctx: ToolContext, folder: str) -> bool:
    return files.confine(ctx.root, folder).is_dir() if folder else True


def missing_folder(folder: str, what: str) -> NotFoundError:
    return NotFoundError(
        f"Cannot {what}: folder '{folder}' doesn't exist. Set createFolders=true to "
        "automatically create missing folders, or use operation='create_folder' first."
    )


def create_folder(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    folder = files.normalize_rel_path(need(p.target, "target", p.operation, "'Projects/2025/Q1'"))
    if folder.lower().endswith(".md"):
        raise InvalidArgumentError(
            f"'{folder}' looks like a note; use operation='create_note' to create notes."
        )
    if not files.create_folder(ctx.root, folder, create_parents=p.create_folders):
        return done(p, [], f"Folder '{folder}' already exists; nothing changed.")
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
    entries = [e for e in files.confine(ctx.root, folder).rglob("*")]
    notes = sum(1 for e in entries if e.is_file() and e.name.lower().endswith(".md"))
    others = sum(1 for e in entries if e.is_file()) - notes
    if entries and not p.recursive:
        raise ConfirmationRequiredError(
            f"Folder '{folder}' is not empty: it holds {notes} note(s) and {others} other "
            "file(s). Set recursive=true (with confirmDestructive=true) to move the folder and "
            "everything in it to .trash/, or move its notes elsewhere first."
        )
    inside = set(paths_under(ctx.conn, folder))
    linking = sorted({b.source for path in inside for b in backlinks(ctx.conn, path)} - inside)
    trashed = files.move_to_trash(ctx.root, folder)
    log_change(ctx, "delete", folder, trashed)
    ctx.fresh(force=True)
    warnings = []
    if linking:
        warnings.append(
            f"{len(linking)} note(s) outside it link to notes that were in it: "
            + ", ".join(linking[:5])
            + (" …" if len(linking) > 5 else "")
        )
    return done(
        p,
        [folder],
        f"Moved folder '{folder}' ({notes} note(s), {others} other file(s)) to '{trashed}'.",
        warnings,
    )


def move_folder(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    folder = _existing_folder(ctx, need(p.target, "target", p.operation, "'Projects/Old'"))
    dest = folder_arg(need(p.destination, "destination", p.operation, "'Archive'"))
    name = folder.rsplit("/", 1)[-1]
    new = f"{dest}/{name}" if folder_exists(ctx, dest) else dest
    new = new.strip("/")
    if new == folder or new.startswith(folder + "/"):
        raise InvalidArgumentError(f"Cannot move folder '{folder}' into itself.")
    parent = new.rsplit("/", 1)[0] if "/" in new else ""
    if not p.create_folders and not folder_exists(ctx, parent):
        raise missing_folder(parent, f"move folder '{folder}' to '{new}'")
    file_moves = {q: new + q[len(folder) :] for q in paths_under(ctx.conn, folder)}
    report = move_items(ctx, [(folder, new)], file_moves)
    if report.errors:
        raise report.errors[0]
    others = [r for r in report.rewritten if not r.startswith(new + "/")]
    message = f"Moved folder '{folder}' to '{new}' ({len(file_moves)} file(s))" + (
        f"; updated {report.links_changed} link(s) in {len(report.rewritten)} note(s)."
        if report.rewritten
        else "."
    )
    return done(p, [new, *others], message, report.warnings)
