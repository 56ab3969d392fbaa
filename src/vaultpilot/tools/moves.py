"""Moving notes and folders without breaking a link (the "links survive moves" promise).

``move_items(ctx, items, file_moves, only=...)`` moves files or folders on disk (never
overwriting, never next to a name differing only in case), then rewrites, across the vault, every
link whose meaning the move changed (``vault.rewrite`` decides which and how), then syncs the
index for the paths it changed (both sides of each move, every rewritten note).
``preview_moves`` answers what the same call would write, as diffs, writing nothing: each moved
file (its links rewritten, if any) and each other note whose links would change.
``links_after_removal`` says what a delete does to the links into what it removes: each one
re-resolves to another note of the same name (which) or becomes unresolved.
``protect_links(ctx, added)`` does the rewriting for a newly created note whose name could capture
existing links (Obsidian rewrites those to full paths).

The vault's rules hold for the rewrites too: a move that would rewrite the links in a read-only,
private or denied note is refused before anything moves (``VaultRules.check_link_rewrites``).

``only`` (a per-file approval) names the files a person approved: a rewrite of a note not in it is
left out and reported in ``refused`` (its links then lead where the index says: see the
warnings); the moves themselves are chosen by the caller.

Only notes that can be affected are read: those holding a link whose target names a moved file
(by file name, old or new, from the index) and the moved notes themselves. Each rewritten note
is written with the version it was read at, so an edit made meanwhile is never overwritten (it is
reported instead).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from vaultpilot.errors import VaultpilotError
from vaultpilot.index.lookup import all_paths, sources_linking_to
from vaultpilot.index.queries import backlinks
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.diffs import FileDiff, binary, moved, unified
from vaultpilot.tools.notes import log_change, log_folders, new_folders, replace_logged
from vaultpilot.tools.results import Failure
from vaultpilot.vault import files
from vaultpilot.vault.files import NoteText, move_path, read_note
from vaultpilot.vault.resolve import LinkResolver, file_key
from vaultpilot.vault.rewrite import VaultPaths, rewrite_links

__all__ = [
    "MoveReport",
    "links_after_removal",
    "move_items",
    "preview_moves",
    "protect_links",
]


@dataclass(slots=True)
class MoveReport:
    moved: dict[str, str] = field(default_factory=dict)  # every moved file: old -> new path
    rewritten: list[str] = field(default_factory=list)  # notes whose links changed (new paths)
    links_changed: int = 0
    refused: list[str] = field(default_factory=list)  # rewrites left out: not approved
    warnings: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    errors: list[VaultpilotError] = field(default_factory=list)  # one per failure


@dataclass(frozen=True, slots=True)
class _Planned:
    path: str  # where the note is after the moves
    source: str  # where it was before them
    note: NoteText
    text: str
    changes: int


def _is_note(path: str) -> bool:
    return path.lower().endswith(".md")


def _plan(
    ctx: ToolContext,
    before_paths: list[str],
    moves: dict[str, str],
    added: list[str],
    warnings: list[str],
    *,
    moved_yet: bool,
) -> list[_Planned]:
    """Every note whose links the moves change, with its new text (read where it is now)."""
    keys = {file_key(p) for p in [*moves, *moves.values(), *added]}
    candidates = sorted(set(sources_linking_to(ctx.conn, keys)) | {p for p in moves if _is_note(p)})
    before = VaultPaths.of(before_paths)
    after = VaultPaths.of([*(moves.get(p, p) for p in before_paths), *added])
    link_format = ctx.config.app.new_link_format
    planned: list[_Planned] = []
    for old in candidates:
        current = moves.get(old, old)
        if not _is_note(current) or current in added:
            continue
        try:
            note = read_note(ctx.root, current if moved_yet else old)
        except VaultpilotError as err:
            warnings.append(f"Links in '{current}' were not checked: {err.message}")
            continue
        result = rewrite_links(
            note.text, source=old, moves=moves, before=before, after=after, link_format=link_format
        )
        warnings.extend(f"'{current}' {reason}" for reason in result.skipped)
        if result.changes:
            planned.append(_Planned(current, old, note, result.text, len(result.changes)))
    return planned


def _rewrite_pass(
    ctx: ToolContext,
    before_paths: list[str],
    moves: dict[str, str],
    added: list[str],
    report: MoveReport,
    only: Collection[str] | None,
) -> None:
    for plan in _plan(ctx, before_paths, moves, added, report.warnings, moved_yet=True):
        if only is not None and plan.path not in only and plan.source not in moves:
            report.refused.append(plan.path)
            continue
        try:
            replace_logged(ctx, plan.path, plan.text, plan.note)
        except VaultpilotError as err:
            report.warnings.append(
                f"Links in '{plan.path}' were not updated ({err.message}); update them by hand."
            )
            continue
        report.rewritten.append(plan.path)
        report.links_changed += plan.changes


def _check_rules(
    ctx: ToolContext, operation: str, items: list[tuple[str, str]], file_moves: dict[str, str]
) -> None:
    """Refuse the moves if their link rewrites would change a note the rules protect (the
    affected notes are read only when a protected note links to a moved one at all)."""
    if not ctx.rules.active or not items:
        return
    keys = {file_key(p) for p in [*file_moves, *file_moves.values()]}
    linking = sources_linking_to(ctx.conn, keys)
    if not any(p not in file_moves and ctx.rules.protected(p) for p in linking):
        return
    plans = _plan(ctx, all_paths(ctx.conn), file_moves, [], [], moved_yet=False)
    touched = [p.source for p in plans if p.source not in file_moves]
    moved = f"'{items[0][0]}'" if len(items) == 1 else f"{len(items)} items"
    ctx.rules.check_link_rewrites(operation, moved, touched)


def _carried(src: str, file_moves: dict[str, str]) -> dict[str, str]:
    prefix = src + "/"
    return {old: new for old, new in file_moves.items() if old == src or old.startswith(prefix)}


def move_items(
    ctx: ToolContext,
    items: list[tuple[str, str]],
    file_moves: dict[str, str],
    *,
    only: Collection[str] | None = None,
    operation: str,
) -> MoveReport:
    """Move each (source, destination) item, then rewrite the links the moves affect.

    ``file_moves`` maps every indexed file the items carry (a folder carries everything in it)
    to its new path. An item that cannot be moved is reported in ``failures`` and its files are
    left out of the link rewriting. With ``only``, notes not moved get their links rewritten
    only if named there (the others are listed in ``refused``). Moves whose rewrites the vault's
    rules forbid raise ``PathRefusedError`` before anything moves.
    """
    _check_rules(ctx, operation, items, file_moves)
    report = MoveReport()
    before_paths = all_paths(ctx.conn)
    done: dict[str, str] = {}
    for src, dst in items:
        try:
            made = new_folders(ctx, dst)
            move_path(ctx.root, src, dst)  # refuses a twin in case or accents, as the preview
            log_change(ctx, "move", src, dst)
            log_folders(ctx, made)
        except VaultpilotError as err:
            report.failures.append({"path": src, "reason": err.message})
            report.errors.append(err)
            continue
        done.update(_carried(src, file_moves))
    report.moved = done
    if done:
        try:
            _rewrite_pass(ctx, before_paths, done, [], report, only)
        except BaseException:
            ctx.fresh(force=True)  # which notes were rewritten is not known: the whole vault
            raise
        # Both sides of each item (a folder is walked; a failed one costs a stat) and every
        # rewritten note.
        sides = [p for item in items for p in item]
        ctx.fresh(force=True, paths=[*sides, *report.rewritten])
    return report


def preview_moves(
    ctx: ToolContext,
    items: list[tuple[str, str]],
    file_moves: dict[str, str],
    *,
    operation: str,
) -> tuple[list[FileDiff], MoveReport]:
    """What ``move_items`` would write, as one diff per file; writes nothing (and refuses what
    it would refuse).

    The report's ``failures``/``errors`` are the items that would be refused, ``moved`` the files
    that would move, ``rewritten`` the other notes whose links would change.
    """
    _check_rules(ctx, operation, items, file_moves)
    report = MoveReport()
    before_paths = all_paths(ctx.conn)
    done: dict[str, str] = {}
    for src, dst in items:
        try:
            files.check_move(ctx.root, src, dst)  # what ``move_path`` refuses, as it would
        except VaultpilotError as err:
            report.failures.append({"path": src, "reason": err.message})
            report.errors.append(err)
            continue
        done.update(_carried(src, file_moves))
    report.moved = done
    plans = {
        p.source: p for p in _plan(ctx, before_paths, done, [], report.warnings, moved_yet=False)
    }
    diffs: list[FileDiff] = []
    for old, new in done.items():
        plan = plans.pop(old, None)
        if plan is not None:
            diffs.append(moved(old, new, plan.note.text, plan.text))
            report.links_changed += plan.changes
        elif _is_note(old):
            try:
                text = read_note(ctx.root, old).text
            except VaultpilotError:
                diffs.append(binary(old, new))
                continue
            diffs.append(moved(old, new, text, text))
        else:
            diffs.append(binary(old, new))
    for plan in plans.values():
        diffs.append(unified(plan.path, plan.path, plan.note.text, plan.text))
        report.rewritten.append(plan.path)
        report.links_changed += plan.changes
    return diffs, report


def protect_links(ctx: ToolContext, added: str, before_paths: list[str]) -> MoveReport:
    """After creating ``added``, keep links that resolved elsewhere leading there."""
    report = MoveReport()
    _rewrite_pass(ctx, before_paths, {}, [added], report, None)
    return report


def _shown(paths: Collection[str]) -> str:
    listed = sorted(paths)
    return ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")


def _notes(paths: Collection[str], one: str, many: str) -> str:
    """'1 note links' / '3 notes link': the count with its noun and verb agreeing."""
    n = len(paths)
    return f"1 note {one}" if n == 1 else f"{n} notes {many}"


def links_after_removal(
    ctx: ToolContext, removed: Collection[str], what: str, *, dry: bool = False
) -> list[str]:
    """Warnings saying where the links into ``removed`` (vault paths) lead once it is gone:
    another note of the same name (Obsidian resolves them there) or nowhere (``dry``: a preview,
    so they say what would happen)."""
    gone = set(removed)
    rows = [b for p in sorted(gone) for b in backlinks(ctx.conn, p) if b.source not in gone]
    if not rows:
        return []
    resolver = LinkResolver(p for p in all_paths(ctx.conn) if p not in gone)
    now_to: dict[str, set[str]] = {}
    unresolved: set[str] = set()
    for b in rows:
        found = resolver.resolve(b.source, b.target_text, b.syntax, subpath=b.subpath)
        if found is None:
            unresolved.add(b.source)
        else:
            now_to.setdefault(found, set()).add(b.source)
    leads = "would then lead" if dry else "now leads"
    warnings = [
        f"{_notes(sources, 'links', 'link')} to {what} by a name that {leads} to '{target}' "
        f"instead: {_shown(sources)}"
        for target, sources in sorted(now_to.items())
    ]
    if unresolved:
        one = len(unresolved) == 1
        has = (
            ("would then have an unresolved link" if one else "would then have unresolved links")
            if dry
            else ("now has an unresolved link" if one else "now have unresolved links")
        )
        warnings.append(
            f"{_notes(unresolved, 'still links', 'still link')} to {what} and {has}: "
            f"{_shown(unresolved)}"
        )
    return warnings
