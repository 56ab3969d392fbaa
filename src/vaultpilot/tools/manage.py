"""``obsidian_vault_manager``: every change to the vault, each one safe to retry and explain.

Single-note and folder operations live here; the bulk ones in ``bulk``. The rules every
operation keeps:

* nothing is overwritten silently (create and move refuse an existing target, and a move one
  whose name differs only in case; update and append refuse a missing note), and deletes go to
  the trash the vault's settings name (``vault.trash``: ``.trash/`` unless app.json asks for the
  system trash) only with ``confirmDestructive=true`` (a non-empty folder also needs
  ``recursive=true``), with a warning saying where the links to what went now lead;
* ``dryRun: true`` (every operation whose facts say ``dry_run``: all of them) returns the unified
  diff of each file the call would change, moves' link rewrites included, and writes nothing;
* ``approvedFiles`` (passed by the agent loop after a per-file approval, never by the model)
  must name only files of the change (its dry run's diff paths), checked under the write lock
  before anything is written; operations whose facts say ``per_file`` then change only those
  files (a move whose link rewrites were refused still moves, and says so), the others need
  every file of the change;
* ``create_note`` with a bare name follows app.json's ``newFileLocation``/``newFileFolderPath``
  (a leading './' keeps it at the vault's root);
* ``expectedVersion`` (from obsidian_get_context) makes update, append, move and delete refuse a
  note that changed since it was read;
* frontmatter edits change only the keys they name (``vault.frontmatter_edit``);
* moves rewrite every link to the moved notes (``moves``);
* the index is synced before the call returns, so the next search sees the change;
* the whole operation, from the first check to the last rename, holds the vault's write lock
  (``ctx.writing()``), shared with every other vaultpilot process, and every rewrite is checked
  against the text it was based on right before its rename (``files.replace_note``). A change
  relative to the text (append, edit_note, metadata only) without ``expectedVersion`` is done
  again on the new text when the note changed in between (up to six times, waiting a little
  longer each time); a whole new text is refused instead, so nothing saved in between is lost.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import assert_never

from vaultpilot.errors import (
    ConflictKeptError,
    InvalidArgumentError,
    NotFoundError,
    SetupError,
    StaleVersionError,
    UnreadableNoteError,
)
from vaultpilot.index.lookup import all_paths
from vaultpilot.memory import journal
from vaultpilot.memory.undo import UndoReport, revert, undo
from vaultpilot.tools import bulk, folders
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.daily import date_of_daily_path
from vaultpilot.tools.diffs import FileDiff, unified, unknown_files
from vaultpilot.tools.edits import Edit, apply_edits, edit_section
from vaultpilot.tools.folders import folder_exists, refused_links, removal_diff
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.moves import (
    links_after_removal,
    move_items,
    preview_moves,
    protect_links,
)
from vaultpilot.tools.notes import (
    folder_arg,
    log_change,
    log_folders,
    new_folders,
    replace_logged,
    resolve_note,
)
from vaultpilot.tools.operations import MANAGER_OPERATIONS
from vaultpilot.tools.ops import done, dry, metadata_edit, need, require_confirmation
from vaultpilot.tools.read import daily_template
from vaultpilot.tools.results import OperationResult
from vaultpilot.vault import files, trash
from vaultpilot.vault.frontmatter import split_frontmatter
from vaultpilot.vault.frontmatter_edit import edit_frontmatter, normalize_tag
from vaultpilot.vault.parse import is_valid_tag
from vaultpilot.vault.resolve import file_key
from vaultpilot.wording import plural, were

__all__ = [
    "DRY_RUN_OPERATIONS",
    "UNDO_HINT",
    "check_undo_target",
    "obsidian_vault_manager",
    "preview",
    "undo_change_set",
]

# The operations that take dryRun, from their facts; any other refuses it rather than write.
DRY_RUN_OPERATIONS = frozenset(name for name, op in MANAGER_OPERATIONS.items() if op.dry_run)

_USES: dict[str, set[str]] = {
    "create_note": {"target", "content", "metadata", "create_folders"},
    "update_note": {"target", "content", "metadata", "expected_version"},
    "edit_note": {
        "target",
        "edits",
        "heading",
        "block_id",
        "content",
        "position",
        "expected_version",
    },
    "append_note": {"target", "content", "metadata", "expected_version"},
    "delete_note": {"target", "confirm_destructive", "expected_version"},
    "move_note": {"target", "destination", "create_folders", "expected_version"},
    "create_folder": {"target", "create_folders"},
    "delete_folder": {"target", "confirm_destructive", "recursive"},
    "move_folder": {"target", "destination", "create_folders"},
    "bulk_tag": {"targets", "target", "metadata"},
    "bulk_move": {"targets", "target", "destination", "create_folders"},
    "bulk_update_metadata": {"targets", "target", "metadata_changes", "metadata"},
}


# A version is ``files.content_version``: a fixed number of lower-case hex digits.
_VERSION_DIGITS = len(files.content_version(b""))
_TRIES = 6  # attempts of a relative change (append, edit, metadata) on a note that keeps changing
_VERSION_FORM = re.compile(f"[0-9a-f]{{{_VERSION_DIGITS}}}")


def _check_version_form(expected: str | None) -> None:
    """A made-up ``expectedVersion`` is refused as such, not reported as a note changed since
    (a well-formed one that does not match is that, and keeps its message)."""
    if expected is None or _VERSION_FORM.fullmatch(expected):
        return
    raise InvalidArgumentError(
        f"expectedVersion '{expected}' is not a note version: a version is the "
        f"{_VERSION_DIGITS}-character hex 'version' that obsidian_get_context returns with the "
        "note. Read the note and pass its 'version' exactly, or leave expectedVersion out."
    )


def _check_version(ctx: ToolContext, path: str, expected: str | None) -> None:
    if expected is None:
        return
    current = files.read_note(ctx.root, path).version
    if current != expected:
        raise StaleVersionError(
            f"'{path}' changed since you read it (expected version {expected}, found {current}). "
            "Read the note again with obsidian_get_context and redo the change."
        )


def _dry(p: VaultManagerParams, diff: FileDiff, message: str) -> OperationResult:
    return dry(done(p, [diff.path], message), [diff])


def _note_path(target: str) -> str:
    path = files.normalize_rel_path(target)
    if not path:
        raise InvalidArgumentError("Give the new note's path in 'target', e.g. 'Projects/Plan.md'.")
    return path if path.lower().endswith(".md") else f"{path}.md"


def _new_note_path(ctx: ToolContext, target: str) -> str:
    """Where a new note goes. A bare name follows app.json's newFileLocation ('folder': into
    newFileFolderPath; 'root', and 'current' with no open note: the root), unless it names a
    note already at the root (the create then refuses it); './Name' keeps it at the root."""
    path = _note_path(target)
    app = ctx.config.app
    folder = files.normalize_rel_path(app.new_file_folder_path.strip("/"))
    if "/" in path or target.strip().startswith("./") or app.new_file_location != "folder":
        return path
    if not folder or any(q.lower() == path.lower() for q in all_paths(ctx.conn)):
        return path
    return f"{folder}/{path}"


def _create(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    path = _new_note_path(ctx, need(p.target, "target", p.operation, "'Projects/New Project.md'"))
    text = p.content or ""
    if p.metadata:
        meta = {k: v for k, v in p.metadata.items() if v is not None}
        raw = meta.pop("tags", None)
        tags = [
            normalize_tag(str(t)) for t in (raw if isinstance(raw, list) else [raw] if raw else [])
        ]
        if split_frontmatter(text).end == 0:  # a new block: keys in the order given
            ordered = {
                k: (tags if k == "tags" else v) for k, v in p.metadata.items() if v is not None
            }
            text = edit_frontmatter(text, set_values=ordered).text
        else:  # merge into the frontmatter the content already has
            text = edit_frontmatter(text, set_values=meta, add_tags=tags).text
    if p.dry_run:  # refused as ``files.create_note`` would refuse the write, by its own check
        files.check_create_note(ctx.root, path, create_folders=p.create_folders)
        return _dry(p, unified(None, path, "", text), f"would create '{path}'.")
    before = all_paths(ctx.conn)
    made = new_folders(ctx, path)
    note = files.create_note(ctx.root, path, text, create_folders=p.create_folders)
    log_change(ctx, "create", None, path, after=(text, note.fmt))
    log_folders(ctx, made)
    warnings = _tag_warnings(p.metadata)
    twins = [q for q in before if file_key(q) == file_key(path)]
    report = protect_links(ctx, path, before) if twins else None
    if twins:
        warnings.append(
            f"Another note has the same name ({', '.join(twins)}); link to this one with its "
            f"full path, e.g. [[{path[:-3]}]]."
        )
    if report:
        warnings.extend(report.warnings)
        if report.rewritten:
            warnings.append(
                f"{plural(report.links_changed, 'existing link')} "
                f"{were(report.links_changed)} written as full paths so they keep leading to "
                "the note they meant."
            )
    rewritten = report.rewritten if report else []
    ctx.fresh(force=True, paths=[path, *rewritten])
    out = done(p, [path, *rewritten], f"Created '{path}'.", warnings)
    out["version"] = note.version
    return out


def _tag_warnings(metadata: dict[str, object] | None) -> list[str]:
    raw = (metadata or {}).get("tags")
    tags = [normalize_tag(str(t)) for t in (raw if isinstance(raw, list) else [raw] if raw else [])]
    bad = [t for t in tags if not is_valid_tag(t)]
    if not bad:
        return []
    return [
        f"Not valid Obsidian tags, written but ignored by Obsidian: {', '.join(bad)}. A tag needs "
        "a letter or symbol besides digits and no spaces, e.g. 'y2025' or 'year/2025'."
    ]


def _update(ctx: ToolContext, p: VaultManagerParams, *, append: bool) -> OperationResult:
    op = p.operation
    if p.content is None and not p.metadata:
        raise InvalidArgumentError(
            f"operation='{op}' needs 'content'"
            + (
                " (the text to add at the end)."
                if append
                else " (the whole new note) or 'metadata'."
            )
        )
    target = need(p.target, "target", op, "'Projects/Plan.md'")
    warnings: list[str] = []
    try:
        path = resolve_note(ctx, target)
    except NotFoundError:
        if not append:
            raise NotFoundError(
                f"Note '{target}' doesn't exist. Use operation='create_note' to create it, or "
                "find the right path with obsidian_query_vault."
            ) from None
        return _append_new_daily(ctx, p, target)
    # An append or a metadata change is relative to the text: when the note changes between
    # our read and our write (a person typing, a script appending), it is done again on the
    # new text. A whole new text replaces what was read, so it is refused instead.
    relative = append or p.content is None
    return _again_if_changed(lambda: _update_once(ctx, p, path, append, warnings), relative, p)


def _again_if_changed(
    write: Callable[[], OperationResult], relative: bool, p: VaultManagerParams
) -> OperationResult:
    """``write()``, run again (up to ``_TRIES`` times) when the note changed under it, if the
    change is ``relative`` to the text and the caller gave no version of its own."""
    tries = _TRIES if relative and p.expected_version is None and not p.dry_run else 1
    for attempt in range(1, tries + 1):
        try:
            return write()
        except ConflictKeptError:
            raise  # the change is in: never done twice
        except StaleVersionError:
            if attempt == tries:
                raise
            time.sleep(0.005 * 2**attempt)  # 10, 20, 40, 80, 160 ms: let a burst pass
    raise AssertionError("unreachable")


def _update_once(
    ctx: ToolContext, p: VaultManagerParams, path: str, append: bool, warnings: list[str]
) -> OperationResult:
    warnings = list(warnings)  # this attempt's own
    note = files.read_note(ctx.root, path)
    text = note.text
    if append:
        addition = p.content or ""
        if text and addition and not text.endswith("\n") and not addition.startswith("\n"):
            addition = "\n" + addition
        text += addition
    elif p.content is not None:
        old_fm = split_frontmatter(note.text)
        if old_fm.end > 0 and split_frontmatter(p.content).end == 0:
            text = note.text[: old_fm.end] + p.content
            warnings.append("The new content has no frontmatter, so the note kept its own.")
        else:
            text = p.content
    if p.metadata:
        text = metadata_edit(text, p.metadata)
    if text == note.text:
        _check_version(ctx, path, p.expected_version)
        out = done(p, [], f"'{path}' already had this content; nothing changed.", warnings)
        out["version"] = note.version
        return out
    # Without a caller's version, the text we just read is the base: a change landing in between
    # is refused rather than lost.
    base = p.expected_version or note.version
    if p.dry_run:
        files.check_replace(ctx.root, path)  # what ``files.replace_note`` refuses first
        _check_version(ctx, path, p.expected_version)
        verb = "append to" if append else "update"
        return _dry(p, unified(path, path, note.text, text), f"would {verb} '{path}'.")
    new = replace_logged(ctx, path, text, note, expected_version=base)
    ctx.fresh(force=True, paths=[path])
    verb = "Appended to" if append else "Updated"
    out = done(p, [path], f"{verb} '{path}'.", warnings)
    out["version"] = new.version
    return out


def _edit(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    op = p.operation
    target = need(p.target, "target", op, "'Projects/Plan.md'")
    section = p.heading is not None or p.block_id is not None
    if section == (p.edits is not None):
        raise InvalidArgumentError(
            "edit_note needs either 'edits' ([{oldText, newText}]) or 'heading'/'blockId' with "
            "'content', e.g. edits=[{oldText: 'status: draft', newText: 'status: done'}]."
        )
    if section and p.content is None:
        raise InvalidArgumentError(
            "edit_note with 'heading' or 'blockId' needs 'content': the text to add at the end "
            "of the section (position='end') or to put in its place (position='replace')."
        )
    path = resolve_note(ctx, target)
    return _again_if_changed(lambda: _edit_once(ctx, p, path), True, p)


def _edit_once(ctx: ToolContext, p: VaultManagerParams, path: str) -> OperationResult:
    note = files.read_note(ctx.root, path)
    try:
        if p.edits is not None:
            wanted = [Edit(e.old_text, e.new_text, e.replace_all) for e in p.edits]
            text = apply_edits(note.text, wanted)
        else:
            text = edit_section(
                note.text,
                heading=p.heading,
                block_id=p.block_id,
                content=p.content or "",
                position=p.position,
            )
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"'{path}' was not changed. {exc}") from None
    if text == note.text:
        _check_version(ctx, path, p.expected_version)
        out = done(p, [], f"'{path}' already had this text; nothing changed.")
        out["version"] = note.version
        return out
    base = p.expected_version or note.version
    if p.dry_run:
        files.check_replace(ctx.root, path)  # what ``files.replace_note`` refuses first
        _check_version(ctx, path, p.expected_version)
        return _dry(p, unified(path, path, note.text, text), f"would edit '{path}'.")
    new = replace_logged(ctx, path, text, note, expected_version=base)
    ctx.fresh(force=True, paths=[path])
    count = plural(len(p.edits), "edit") if p.edits is not None else "a section edit"
    out = done(p, [path], f"Edited '{path}' ({count}).")
    out["version"] = new.version
    return out


def _append_new_daily(ctx: ToolContext, p: VaultManagerParams, target: str) -> OperationResult:
    path = _note_path(target)
    day = date_of_daily_path(ctx.config.daily_notes, path)
    if day is None:
        raise NotFoundError(
            f"Note '{target}' doesn't exist, so nothing was appended. Use operation='create_note' "
            "to create it, or find the right path with obsidian_query_vault."
        )
    warnings: list[str] = []
    text = daily_template(ctx, path, day, warnings)
    addition = p.content or ""
    if text and addition and not text.endswith("\n") and not addition.startswith("\n"):
        addition = "\n" + addition
    text = metadata_edit(text + addition, p.metadata) if p.metadata else text + addition
    if p.dry_run:
        files.check_create_note(ctx.root, path, create_folders=True)  # as ``create_note`` below
        return _dry(p, unified(None, path, "", text), f"would create the daily note '{path}'.")
    made = new_folders(ctx, path)
    note = files.create_note(ctx.root, path, text, create_folders=True)
    log_change(ctx, "create", None, path, after=(text, note.fmt))
    log_folders(ctx, made)
    ctx.fresh(force=True, paths=[path])
    source = " from its template" if ctx.config.daily_notes.template else ""
    out = done(p, [path], f"Created the daily note '{path}'{source} and appended to it.", warnings)
    out["version"] = note.version
    return out


# How a deleted note comes back when the change is journaled; a transport without an undo of
# its own (MCP) puts its own way in its place.
UNDO_HINT = "Restore it: undo the change."


def _delete(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    require_confirmation(p)
    path = resolve_note(ctx, need(p.target, "target", p.operation, "'Drafts/Old.md'"))
    _check_version(ctx, path, p.expected_version)
    files.check_trash(ctx.root, path)  # what ``trash.move_to_trash`` refuses first
    warnings = links_after_removal(ctx, [path], "it", dry=p.dry_run)
    if p.dry_run:
        diff = removal_diff(ctx, path)
        return dry(done(p, [path], f"would delete '{path}'.", warnings), [diff])
    old = files.confine(ctx.root, path).read_bytes() if journal.active(ctx.journal) else None
    trashed = trash.move_to_trash(ctx.root, path)
    log_change(ctx, "delete", path, trashed.path, before=old)
    ctx.fresh(force=True, paths=[path])  # the trash is outside the index (.trash/ or the system's)
    if trashed.note:
        warnings.append(trashed.note)
    restore = UNDO_HINT if ctx.journal is not None else "Restore it: move it back."
    return done(p, [path], f"Moved '{path}' to '{trashed.path}'. {restore}", warnings)


def _move_note(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    path = resolve_note(ctx, need(p.target, "target", p.operation, "'Old Project.md'"))
    dest = folder_arg(need(p.destination, "destination", p.operation, "'Archive/2024'"))
    name = path.rsplit("/", 1)[-1]
    new = dest if dest.lower().endswith(".md") else (f"{dest}/{name}" if dest else name)
    parent = new.rsplit("/", 1)[0] if "/" in new else ""
    if new == path:
        raise InvalidArgumentError(f"'{path}' is already there; give another destination.")
    if not p.create_folders and not folder_exists(ctx, parent):
        raise files.missing_folder(parent, f"move '{path}' to '{new}'")
    _check_version(ctx, path, p.expected_version)
    if p.dry_run:
        diffs, plan = preview_moves(ctx, [(path, new)], {path: new}, operation=p.operation)
        if plan.errors:
            raise plan.errors[0]
        message = f"would move '{path}' to '{new}'" + (
            f" and update {plural(plan.links_changed, 'link')} in "
            f"{plural(len(plan.rewritten), 'other note')}."
            if plan.rewritten
            else "."
        )
        return dry(done(p, [new, *plan.rewritten], message, plan.warnings), diffs)
    if p.approved_files is not None and new not in p.approved_files:
        raise InvalidArgumentError(
            f"The move of '{path}' to '{new}' itself was not approved; approve '{new}' and leave "
            "out only the notes whose links you do not want rewritten, or reject the move."
        )
    report = move_items(
        ctx, [(path, new)], {path: new}, only=p.approved_files, operation=p.operation
    )
    if report.errors:
        raise report.errors[0]
    others = [r for r in report.rewritten if r != new]
    message = f"Moved '{path}' to '{new}'" + (
        f"; updated {plural(report.links_changed, 'link')} in {plural(len(others), 'other note')}."
        if others
        else "."
    )
    if report.refused:
        message = message[:-1] + (
            f"; links in {plural(len(report.refused), 'note')} were left unchanged."
        )
    warnings = [*report.warnings, *refused_links(report.refused)]
    out = done(p, [new, *others], message, warnings)
    # Moved as it was; a note that is not text has no version to edit it by.
    with contextlib.suppress(UnreadableNoteError):
        out["version"] = files.read_note(ctx.root, new).version
    return out


def _ignored(p: VaultManagerParams) -> list[str]:
    used = _USES[p.operation]
    given = p.model_dump(exclude_defaults=True, exclude={"operation", "dry_run", "approved_files"})
    unused = [VaultManagerParams.model_fields[k].alias or k for k in given if k not in used]
    return [f"Ignored for {p.operation}: {', '.join(unused)}."] if unused else []


def obsidian_vault_manager(ctx: ToolContext, params: VaultManagerParams) -> OperationResult:
    """Manage notes, folders, and perform bulk operations on the Obsidian vault.

    This tool handles all vault modifications. Use obsidian_query_vault first to find the notes
    you want to modify, and obsidian_get_context to read them (pass the note's 'version' as
    expectedVersion so a change made meanwhile is never overwritten).

    Notes: create_note (target, content, metadata -> YAML frontmatter), edit_note (target,
    edits=[{oldText, newText, replaceAll?}], each oldText exact and matching once, all applied
    or none; or heading/blockId with content): prefer it for any partial change, update_note
    (target, content = the whole new note, and/or metadata = properties to set), append_note
    (target, content added at the end), delete_note (target, confirmDestructive=true; goes to
    .trash/), move_note (target, destination folder or new '.md' path).
    Folders: create_folder (target), delete_folder (target, confirmDestructive=true, and
    recursive=true if it is not empty), move_folder (target, destination).
    Bulk: bulk_tag (targets, metadata={tags: [...]} to add, {removeTags: [...]} to remove),
    bulk_move (targets, destination folder), bulk_update_metadata (targets,
    metadataChanges={key: value}; null removes the key). Bulk results list per-note failures.

    Moving or renaming notes and folders updates every link to them across the vault, keeping
    each link's form. Example: {operation: 'move_note', target: 'Old Project.md',
    destination: 'Archive/2024'}
    """
    _check_version_form(params.expected_version)
    if params.dry_run:
        _dry_supported(params)
        result = _run(ctx, params)  # reads only: no lock, so a preview never waits on a writer
    else:
        with (
            ctx.writing(),
            journal.recording(
                ctx.journal,
                str(ctx.root),
                params.operation,
                change_set=ctx.change_set,
                source=ctx.source,
                revert=lambda changes: _put_back(ctx, changes),
            ),
        ):
            if params.approved_files is not None:
                _check_approved(ctx, params)  # under the lock, before anything is written
            result = _run(ctx, params)
    ignored = _ignored(params)
    if ignored:
        result["warnings"] = [*result.get("warnings", []), *ignored]
    return result


def _dry_supported(params: VaultManagerParams) -> None:
    if params.operation not in DRY_RUN_OPERATIONS:
        raise InvalidArgumentError(
            f"dryRun is not available for {params.operation} (only for "
            f"{', '.join(sorted(DRY_RUN_OPERATIONS))}); nothing was written. Call it without "
            "dryRun to make the change."
        )


def _check_approved(ctx: ToolContext, params: VaultManagerParams) -> None:
    """Refuse an approved subset naming files the change does not touch, or leaving out files
    of an operation approved whole; nothing is written either way."""
    wanted = params.approved_files or []
    change = preview(ctx, params.model_copy(update={"approved_files": None}))
    paths = [d.path for d in change]
    unknown = unknown_files(wanted, change)
    if unknown:
        raise InvalidArgumentError(
            f"The approved files include {', '.join(unknown[:10])}, which this "
            f"{params.operation} does not change; it changes {', '.join(paths[:20]) or 'nothing'}"
            f"{' …' if len(paths) > 20 else ''}. Nothing was changed: approve only files of the "
            "change."
        )
    if not wanted:
        raise InvalidArgumentError(
            f"No file of this {params.operation} was approved, so nothing was changed."
        )
    left = [q for q in paths if q not in wanted]
    if left and not MANAGER_OPERATIONS[params.operation].per_file:
        raise InvalidArgumentError(
            f"{params.operation} is applied whole, but {', '.join(left[:10])} was not approved; "
            "nothing was changed. Approve every file of it, or reject it."
        )


def preview(ctx: ToolContext, params: VaultManagerParams) -> list[FileDiff]:
    """The diffs ``params`` would write, without writing (for approval prompts).

    Raises the operation's own errors (a missing note, an oldText that does not match, ...) and
    InvalidArgumentError for an operation without a dry run (``DRY_RUN_OPERATIONS``).
    """
    dry_params = params.model_copy(update={"dry_run": True})
    _dry_supported(dry_params)
    result = _run(ctx, dry_params)
    return [
        FileDiff(str(d["path"]), d["from"], d["to"], str(d["diff"]))
        for d in result.get("diffs", [])
    ]


# One case per operation, ending in assert_never so a new operation cannot go unhandled: the
# match is all of the complexity.
def _run(ctx: ToolContext, params: VaultManagerParams) -> OperationResult:  # noqa: C901
    # Plans (which notes link where) need the index exactly as the vault is: nothing is written
    # yet (paths=()), so while a watcher keeps the index fresh this syncs nothing, else all.
    ctx.fresh(force=True, paths=())
    result: OperationResult
    match params.operation:
        case "create_note":
            result = _create(ctx, params)
        case "update_note":
            result = _update(ctx, params, append=False)
        case "append_note":
            result = _update(ctx, params, append=True)
        case "edit_note":
            result = _edit(ctx, params)
        case "delete_note":
            result = _delete(ctx, params)
        case "move_note":
            result = _move_note(ctx, params)
        case "create_folder":
            result = folders.create_folder(ctx, params)
        case "delete_folder":
            result = folders.delete_folder(ctx, params)
        case "move_folder":
            result = folders.move_folder(ctx, params)
        case "bulk_tag":
            result = bulk.bulk_tag(ctx, params)
        case "bulk_move":
            result = bulk.bulk_move(ctx, params)
        case "bulk_update_metadata":
            result = bulk.bulk_update_metadata(ctx, params)
        case _:
            assert_never(params.operation)
    return result


def check_undo_target(set_id: str | None, *, last: bool, last_word: str = "last: true") -> None:
    """What an undo is asked for: a change-set id or ``last``, exactly one (the CLI's
    ``undo ID | --last`` and the server's ``id`` / ``last``); InvalidArgumentError otherwise,
    in the caller's words for "last" (``last_word``: the server's field by default, the CLI
    passes ``--last``)."""
    if set_id is None and not last:
        raise InvalidArgumentError(
            "Say which change set to undo: its id (as the history lists it), or "
            f"{last_word} for the latest one."
        )
    if set_id is not None and not set_id.strip():
        raise InvalidArgumentError(
            f"The change-set id is empty: give one as the history lists it, or {last_word} for "
            "the latest change set."
        )
    if set_id is not None and last:
        raise InvalidArgumentError(
            f"Give either a change-set id ({set_id}) or {last_word}, not both."
        )


def undo_change_set(
    ctx: ToolContext, set_id: str | None, *, skip_changed: bool = False
) -> tuple[str, str | None, UndoReport]:
    """Undo change set ``set_id`` (None: the newest that still stands and is not an undo,
    ``Journal.last_to_undo``) as a new change set.

    Returns (the undone id, the new change set's id or None if nothing changed, the report).
    Holds the write lock from the check to the last write (``memory.undo``); NotFoundError for
    an unknown id, StaleVersionError for files changed since, SetupError without a journal.
    """
    if ctx.journal is None:
        raise SetupError(
            "This vault has no change journal (its index is not in a vaultpilot data folder); "
            "use --data-dir or the default data folder."
        )
    vault = str(ctx.root)
    with ctx.writing():
        wanted = ctx.journal.get(vault, set_id) if set_id else None
        target = wanted or ctx.journal.get(vault, ctx.journal.last_to_undo(vault))
        with journal.recording(
            ctx.journal,
            vault,
            f"undo {target.id}",
            undo_of=target.id,
            source=ctx.source,
            revert=lambda changes: _put_back(ctx, changes),
        ) as new:
            try:
                report = undo(ctx.root, ctx.journal, target, skip_changed=skip_changed)
            finally:
                ctx.fresh(force=True, paths=_undo_paths(target))
    return target.id, new if report.restored else None, report


def _put_back(ctx: ToolContext, changes: Sequence[journal.FileChange]) -> list[str]:
    """Revert changes the journal could not record, and bring the index along; the paths left
    as they are (changed meanwhile)."""
    try:
        return revert(ctx.root, changes).skipped
    finally:
        sides = (p for c in changes for p in (c.path_before, c.path_after))
        ctx.fresh(paths=sorted({p for p in sides if p and not Path(p).is_absolute()}))


def _undo_paths(target: journal.ChangeSet) -> list[str]:
    """Every vault path an undo of ``target`` may write: each change's both sides (the system
    trash's absolute paths left out; .trash/ is not indexed)."""
    sides = (p for c in target.changes for p in (c.path_before, c.path_after))
    return sorted({p for p in sides if p and not (Path(p).is_absolute() or p.startswith("/"))})
