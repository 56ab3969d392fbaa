"""Moving notes and folders without breaking a link (the "links survive moves" promise).

``move_items(ctx, items, file_moves)`` moves files or folders on disk (never overwriting), then
rewrites, across the vault, every link whose meaning the move changed (``vault.rewrite`` decides
which and how), then syncs the index. ``protect_links(ctx, added)`` does the same for a newly
created note whose name could capture existing links (Obsidian rewrites those to full paths).

Only notes that can be affected are read: those holding a link whose target names a moved file
(by file name, old or new, from the index) and the moved notes themselves. Each rewritten note
is written with the version it was read at, so an edit made meanwhile is never overwritten (it is
reported instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vaultpilot.errors import VaultpilotError
from vaultpilot.index.lookup import all_paths, sources_linking_to
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.notes import log_change
from vaultpilot.tools.results import Failure
from vaultpilot.vault.files import move_path, read_note, replace_note
from vaultpilot.vault.resolve import file_key
from vaultpilot.vault.rewrite import VaultPaths, rewrite_links

__all__ = ["MoveReport", "move_items", "protect_links"]


@dataclass(slots=True)
class MoveReport:
    moved: dict[str, str] = field(default_factory=dict)  # every moved file: old -> new path
    rewritten: list[str] = field(default_factory=list)  # notes whose links changed (new paths)
    links_changed: int = 0
    warnings: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    errors: list[VaultpilotError] = field(default_factory=list)  # one per failure


def _is_note(path: str) -> bool:
    return path.lower().endswith(".md")


def _rewrite_pass(
    ctx: ToolContext,
    before_paths: list[str],
    moves: dict[str, str],
    added: list[str],
    report: MoveReport,
) -> None:
    keys = {file_key(p) for p in [*moves, *moves.values(), *added]}
    candidates = sorted(set(sources_linking_to(ctx.conn, keys)) | {p for p in moves if _is_note(p)})
    before = VaultPaths.of(before_paths)
    after = VaultPaths.of([*(moves.get(p, p) for p in before_paths), *added])
    link_format = ctx.config.app.new_link_format
    for old in candidates:
        current = moves.get(old, old)
        if not _is_note(current) or current in added:
            continue
        try:
            note = read_note(ctx.root, current)
        except VaultpilotError as err:
            report.warnings.append(f"Links in '{current}' were not checked: {err.message}")
            continue
        result = rewrite_links(
            note.text, source=old, moves=moves, before=before, after=after, link_format=link_format
        )
        report.warnings.extend(f"'{current}' {reason}" for reason in result.skipped)
        if not result.changes:
            continue
        try:
            replace_note(ctx.root, current, result.text, note.fmt, base=note)
            log_change(ctx, "update", current, current, before=note, after=(result.text, note.fmt))
        except VaultpilotError as err:
            report.warnings.append(
                f"Links in '{current}' were not updated ({err.message}); update them by hand."
            )
            continue
        report.rewritten.append(current)
        report.links_changed += len(result.changes)


def move_items(
    ctx: ToolContext, items: list[tuple[str, str]], file_moves: dict[str, str]
) -> MoveReport:
    """Move each (source, destination) item, then rewrite the links the moves affect.

    ``file_moves`` maps every indexed file the items carry (a folder carries everything in it)
    to its new path. An item that cannot be moved is reported in ``failures`` and its files are
    left out of the link rewriting.
    """
    report = MoveReport()
    before_paths = all_paths(ctx.conn)
    done: dict[str, str] = {}
    for src, dst in items:
        try:
            move_path(ctx.root, src, dst)
            log_change(ctx, "move", src, dst)
        except VaultpilotError as err:
            report.failures.append({"path": src, "reason": err.message})
            report.errors.append(err)
            continue
        prefix = src + "/"
        for old, new in file_moves.items():
            if old == src or old.startswith(prefix):
                done[old] = new
    report.moved = done
    if done:
        try:
            _rewrite_pass(ctx, before_paths, done, [], report)
        finally:
            ctx.fresh(force=True)
    return report


def protect_links(ctx: ToolContext, added: str, before_paths: list[str]) -> MoveReport:
    """After creating ``added``, keep links that resolved elsewhere leading there."""
    report = MoveReport()
    _rewrite_pass(ctx, before_paths, {}, [added], report)
    return report
