"""Bulk operations: ``bulk_tag``, ``bulk_move`` and ``bulk_update_metadata``.

Each target is handled on its own: one that cannot be changed (missing, ambiguous, a conflict,
invalid frontmatter) is reported in ``failures`` with the reason, and the others are still
changed. ``partialSuccess`` is true when some targets succeeded and some failed; ``success`` is
false only when none succeeded. Every note is rewritten only if it is still exactly as it was read
right before its rename (a note edited meanwhile is a failure, not a lost edit), and only
its frontmatter changes (``vault.frontmatter_edit``); ``bulk_move`` rewrites links like a move.

``dryRun`` returns one diff per note that would change (and, for ``bulk_move``, per note whose
links would be rewritten) and writes nothing. A per-file approval (``approvedFiles``, the diffs'
paths) changes only the notes named: the others are left as they are and listed in a warning.

``bulk_tag`` takes ``metadata={tags: [...]}`` to add tags and ``metadata={removeTags: [...]}``
to remove them (both at once is fine). It edits frontmatter tags only; a removed tag still
written inline in a note's body is reported as a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vaultpilot.errors import InvalidArgumentError, NotFoundError, VaultpilotError
from vaultpilot.index.lookup import note_facts
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.diffs import FileDiff, unified
from vaultpilot.tools.folders import refused_links
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.moves import move_items, preview_moves
from vaultpilot.tools.notes import folder_arg, replace_logged, resolve_note
from vaultpilot.tools.ops import approved, done, dry, metadata_edit, need
from vaultpilot.tools.results import Failure, OperationResult
from vaultpilot.vault import files
from vaultpilot.vault.frontmatter_edit import edit_frontmatter, normalize_tag
from vaultpilot.vault.parse import is_valid_tag
from vaultpilot.wording import plural, were

__all__ = ["bulk_move", "bulk_tag", "bulk_update_metadata"]

Edit = Callable[[str], str]


def _targets(p: VaultManagerParams) -> list[str]:
    names = list(p.targets or [])
    if not names and p.target:
        names = [p.target]
    if not names:
        raise InvalidArgumentError(
            f"operation='{p.operation}' needs 'targets', e.g. targets=['note1.md', 'note2.md']."
        )
    return list(dict.fromkeys(names))


def _finish(
    p: VaultManagerParams,
    changed: list[str],
    ok: int,
    failures: list[Failure],
    verb: str,
    warnings: list[str],
    extra: list[str] | None = None,
    diffs: list[FileDiff] | None = None,
    left_out: int = 0,
) -> OperationResult:
    total = ok + len(failures) + left_out
    would = "would be " if p.dry_run else ""
    if failures and ok:
        message = (
            f"Bulk operation partially completed: {ok} of {total} notes {would}{verb} successfully."
        )
    elif failures:
        message = f"Bulk operation failed: none of the {total} notes could be {verb}."
    else:
        message = f"{ok} of {total} notes {would}{verb}."
    if left_out:
        kept = "it was" if left_out == 1 else "they were"
        message = message.rstrip(".") + f"; {left_out} left as {kept} (not approved)."
    paths = [*changed, *(extra or [])]
    out = done(p, paths, message, warnings)
    out["success"] = ok > 0 or total == 0
    out["partialSuccess"] = bool(failures) and ok > 0
    if failures:
        out["failures"] = failures
    return dry(out, diffs or []) if p.dry_run else out


def _left_out(paths: list[str], warnings: list[str]) -> None:
    if paths:
        shown = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
        kept = "it was" if len(paths) == 1 else "they were"
        left = f"{plural(len(paths), 'note')} {were(len(paths))} left as {kept}"
        warnings.append(f"{left} (not approved): {shown}")


def _each_note(
    ctx: ToolContext, p: VaultManagerParams, edit: Edit, warnings: list[str]
) -> tuple[list[str], int, list[Failure], list[FileDiff], int]:
    changed: list[str] = []
    unchanged: list[str] = []
    refused: list[str] = []
    failures: list[Failure] = []
    diffs: list[FileDiff] = []
    seen: set[str] = set()
    for name in _targets(p):
        try:
            path = resolve_note(ctx, name, param="targets")
            if path in seen:
                continue  # named twice (e.g. by path and by title): changed once
            seen.add(path)
            note = files.read_note(ctx.root, path)
            text = edit(note.text)
            if text == note.text:
                unchanged.append(path)
                continue
            if not approved(p, path):
                refused.append(path)
                continue
            if p.dry_run:
                files.check_replace(ctx.root, path)  # what ``files.replace_note`` refuses first
                diffs.append(unified(path, path, note.text, text))
            else:
                replace_logged(ctx, path, text, note)
            changed.append(path)
        except VaultpilotError as err:
            failures.append({"path": name, "reason": err.message})
    if unchanged:
        shown = ", ".join(unchanged[:5]) + (" …" if len(unchanged) > 5 else "")
        n = len(unchanged)
        warnings.append(f"{plural(n, 'note')} already matched and {were(n)} not changed: {shown}")
    _left_out(refused, warnings)
    if changed and not p.dry_run:
        ctx.fresh(force=True, paths=changed)
    return changed, len(changed) + len(unchanged), failures, diffs, len(refused)


def _tag_list(value: Any, key: str) -> list[str]:
    raw = value if isinstance(value, list) else [] if value is None else [value]
    tags = [normalize_tag(str(t)) for t in raw]
    bad = [t for t in tags if not is_valid_tag(t)]
    if bad:
        raise InvalidArgumentError(
            f"Not valid tags in metadata.{key}: {', '.join(repr(t) for t in bad)}. Tags use "
            "letters, digits, '_', '-' and '/' (for nesting), no spaces, and not only digits."
        )
    return tags


def bulk_tag(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    meta = p.metadata or {}
    add = _tag_list(meta.get("tags", meta.get("addTags")), "tags")
    remove = _tag_list(meta.get("removeTags", meta.get("remove_tags")), "removeTags")
    other = sorted(set(meta) - {"tags", "addTags", "removeTags", "remove_tags"})
    if not add and not remove:
        raise InvalidArgumentError(
            "operation='bulk_tag' needs metadata={tags: ['reviewed']} to add tags or "
            "metadata={removeTags: ['draft']} to remove them."
        )
    warnings = (
        [f"Ignored in metadata for bulk_tag: {', '.join(other)} (use bulk_update_metadata)."]
        if other
        else []
    )

    def edit(text: str) -> str:
        return edit_frontmatter(text, add_tags=add, remove_tags=remove).text

    changed, ok, failures, diffs, left = _each_note(ctx, p, edit, warnings)
    if remove and not p.dry_run:
        facts = note_facts(ctx.conn, changed)
        inline = [
            path
            for path, fact in facts.items()
            if any(t.lower() in {r.lower() for r in remove} for t in fact.tags)
        ]
        if inline:
            warnings.append(
                f"The removed {'tag is' if len(remove) == 1 else 'tags are'} still written in "
                f"the text of {plural(len(inline), 'note')} "
                f"({', '.join(inline[:5])}); bulk_tag changes frontmatter only."
            )
    return _finish(p, changed, ok, failures, "updated", warnings, diffs=diffs, left_out=left)


def bulk_update_metadata(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    changes = p.metadata_changes if p.metadata_changes is not None else p.metadata
    if not changes:
        raise InvalidArgumentError(
            "operation='bulk_update_metadata' needs metadataChanges, e.g. "
            "metadataChanges={status: 'done'} (a null value removes a property)."
        )
    bad = [k for k in changes if not isinstance(k, str) or not k.strip() or re.search(r"[\n:]", k)]
    if bad:
        raise InvalidArgumentError(f"Not valid property names: {', '.join(map(repr, bad))}.")
    warnings: list[str] = []

    def edit(text: str) -> str:
        return metadata_edit(text, changes)

    changed, ok, failures, diffs, left = _each_note(ctx, p, edit, warnings)
    return _finish(p, changed, ok, failures, "updated", warnings, diffs=diffs, left_out=left)


def bulk_move(ctx: ToolContext, p: VaultManagerParams) -> OperationResult:
    dest = folder_arg(need(p.destination, "destination", p.operation, "'Archive'"))
    if dest.lower().endswith(".md"):
        raise InvalidArgumentError(
            "bulk_move moves notes into a folder: 'destination' must be a folder, e.g. 'Archive'."
        )
    if dest and not files.confine(ctx.root, dest).is_dir() and not p.create_folders:
        raise NotFoundError(
            f"Cannot move notes to '{dest}': folder '{dest}' doesn't exist. Set "
            "createFolders=true to automatically create missing folders, or use "
            "operation='create_folder' first."
        )
    failures: list[Failure] = []
    items: list[tuple[str, str]] = []
    taken: set[str] = set()
    for name in _targets(p):
        try:
            path = resolve_note(ctx, name, param="targets")
        except VaultpilotError as err:
            failures.append({"path": name, "reason": err.message})
            continue
        if any(path == src for src, _ in items):
            continue  # named twice: moved once
        new = f"{dest}/{path.rsplit('/', 1)[-1]}" if dest else path.rsplit("/", 1)[-1]
        if new == path:
            failures.append({"path": name, "reason": f"'{path}' is already in '{dest or '/'}'."})
        elif new.lower() in taken:
            failures.append({"path": name, "reason": f"Another target is also moving to '{new}'."})
        else:
            taken.add(new.lower())
            items.append((path, new))
    verb = f"moved to '{dest or '/'}'"
    if p.dry_run:
        diffs, plan = preview_moves(ctx, items, dict(items), operation=p.operation)
        failures.extend(plan.failures)
        moved = [new for _, new in items if new in plan.moved.values()]
        return _finish(p, moved, len(moved), failures, verb, plan.warnings, plan.rewritten, diffs)
    warnings: list[str] = []
    left = 0
    if p.approved_files is not None:
        refused = [src for src, new in items if new not in p.approved_files]
        _left_out(refused, warnings)
        left = len(refused)
        items = [(src, new) for src, new in items if new in p.approved_files]
    report = (
        move_items(ctx, items, dict(items), only=p.approved_files, operation=p.operation)
        if items
        else None
    )
    moved = list(report.moved.values()) if report else []
    if report:
        failures.extend(report.failures)
        warnings.extend(report.warnings)
        warnings.extend(refused_links(report.refused))
    others = [r for r in (report.rewritten if report else []) if r not in moved]
    if others and report:
        warnings.insert(
            0,
            f"Updated {plural(report.links_changed, 'link')} in "
            f"{plural(len(others), 'other note')}.",
        )
    return _finish(p, moved, len(moved), failures, verb, warnings, others, left_out=left)
