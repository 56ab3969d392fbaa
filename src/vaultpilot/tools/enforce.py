"""The vault's rules applied to one tool call: before it runs, and to what it returns.

``before(ctx, tool, arguments)`` refuses a call the rules forbid, before anything runs: a read
naming a denied note, a change to a denied, read-only or private note (or to a folder holding
one), any change in ``mode = "read-only"`` (a ``dryRun`` preview is still allowed: it writes
nothing). Names are checked as given and as the notes they resolve to, so a title cannot step
around a folder rule. ``after(ctx, result)`` drops denied notes from a result, withholds the text
of private ones, and refuses a read whose main note turned out to be denied (a daily note in a
denied folder, say). Both are no-ops when the vault has no rules the tools enforce.
``resolved_paths(ctx, names)`` is that resolution (the names and the notes they lead to), which
the rules that ask (``agent.guard``) use too.

The link rewrites of a move are checked where they are planned (``tools.moves``): a move that
would rewrite a protected note's links is refused before anything moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vaultpilot.errors import PathRefusedError, VaultpilotError
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.notes import resolve_note
from vaultpilot.tools.operations import is_dry_run

if TYPE_CHECKING:
    from vaultpilot.tools.registry import Tool

__all__ = ["after", "before", "resolved_paths"]


def _resolved(ctx: ToolContext, names: list[str]) -> tuple[list[str], list[str]]:
    found, unknown = [], []
    for name in names:
        try:
            found.append(resolve_note(ctx, name))
        except VaultpilotError:  # a new note, a folder, or a name the tool will refuse itself
            unknown.append(name)
    return found, unknown


def resolved_paths(ctx: ToolContext, names: list[str]) -> list[str]:
    """The names as given and the notes they resolve to; the index is synced (once) only when
    a name does not resolve, in case the note is newer than the index."""
    found, unknown = _resolved(ctx, names)
    if unknown:
        ctx.fresh()  # a no-op while a watcher keeps the index live
        found += _resolved(ctx, unknown)[0]
    return [*names, *found]


def _check_reads(ctx: ToolContext, names: list[str]) -> None:
    """Refuse a read naming a denied note, by the name as given (a title that led to a denied
    note is refused without saying where it led)."""
    for name in names:
        ctx.rules.check_read(resolved_paths(ctx, [name]), named=name)


def before(ctx: ToolContext, tool: Tool, arguments: Mapping[str, Any]) -> None:
    rules = ctx.rules
    op = tool.operation(arguments)
    if op is None or not rules.active:  # "ask" mode and ask folders are approvals (agent.guard)
        return
    names = tool.files(arguments)
    if not op.writes:
        _check_reads(ctx, names)
        return
    # A change is checked against the notes its names resolve to now, as the operation will
    # resolve them after its own sync: a title resolving to a note since moved into a denied or
    # read-only folder must not pass on an old index (a no-op while a watcher keeps it live).
    ctx.fresh(force=True, paths=())
    _check_reads(ctx, names)  # a denied note, by the name given (not where it led)
    rules.check_write(op.name, resolved_paths(ctx, names), preview=is_dry_run(arguments))
    # The operation's first file field is what a folder operation changes as a whole.
    target = arguments.get(op.files[0]) if op.files else None
    if isinstance(target, str) and target.strip("/") and (ctx.root / target).is_dir():
        inside = rules.covers_inside(target)  # a change to a whole folder
        if inside is not None:
            # A denied entry is not named: the agent may not learn it exists.
            what = (
                "something the vault's rules keep from the agent"
                if rules.hidden(inside)
                else f"'{inside}', which the vault's rules protect"
            )
            raise PathRefusedError(
                f"{op.name} was not run: the folder '{target}' holds {what}. Nothing was "
                "changed; work on single notes instead."
            )


def after(ctx: ToolContext, result: dict[str, Any]) -> dict[str, Any]:
    rules = ctx.rules
    if not rules.active:
        return result
    primary = result.get("primaryNote")
    if isinstance(primary, Mapping):
        rules.check_read([str(primary.get("path", ""))])
    return rules.redact(result)
