"""The vault's rules that are approvals, kept for one agent run (``tools.rules`` has the rules).

``RunGuard(rules)`` is made at the start of each run. The loop asks ``needs_approval(name,
arguments)`` before a call the approval policy would let run; a reason (not None) turns the call
into an approval question:

* ``mode = "ask"``: every change to the vault asks;
* a change to a note in an ``ask`` folder asks (by the names it gives and, with ``resolve``, the
  notes they lead to: a title, a name without its folder), as does a change to a whole folder
  holding one, and, with ``rewrites``, a move whose link rewrites change a note in one;
* a change that would take the run past ``max_notes_per_run`` distinct notes asks (a move
  counts each note it moves or whose links it rewrites, with ``rewrites``; once approved, the
  run may go on changing notes);
* after the run has read a note from an ``untrusted`` folder (web clippings, by default
  ``Clippings``), every change asks: text in such a note may be written to steer the agent.

``observe(name, arguments, result)`` is called after every call that ran: it notes the paths a
read returned and the paths a change affected. The guard never refuses anything itself; the tools
enforce the rules that refuse (``deny``, ``read_only``, ``private``, ``mode = "read-only"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.tools import ToolContext, get_tool
from vaultpilot.tools.enforce import resolved_paths
from vaultpilot.tools.registry import call_tool, is_dry_run
from vaultpilot.tools.rules import PATH_KEYS, VaultRules

__all__ = ["Change", "RunGuard", "changed_paths", "guard_on"]

Change = tuple[str | None, str | None]  # a note's path before and after a change


def _result_paths(value: Any) -> set[str]:
    """Every note path a tool result names."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= _result_paths(item)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key in PATH_KEYS and isinstance(item, str):
                found.add(item)
            elif key == "affectedPaths" and isinstance(item, list):
                found |= {p for p in item if isinstance(p, str)}
            else:
                found |= _result_paths(item)
    return found


@dataclass(slots=True)
class RunGuard:
    rules: VaultRules
    # The names a call gives and the notes they lead to (``tools.enforce.resolved_paths``), so a
    # title or './x' cannot step around an ask folder; None: the names as given.
    resolve: Callable[[list[str]], list[str]] | None = None
    # The notes a move's dry run would change, as (from, to) paths: the moved ones and those
    # whose links it rewrites, so a rewrite in an ask folder asks and a folder moved counts its
    # notes toward max_notes_per_run; None: only the names the call gives.
    rewrites: Callable[[str, Mapping[str, Any]], list[Change]] | None = None
    changed: set[str] = field(default_factory=set)
    tainted_by: str | None = None  # the first untrusted note the run read
    limit_approved: bool = False

    def _writes(self, name: str, arguments: Mapping[str, Any]) -> list[str] | None:
        """The names a vault-changing call targets, or None for a call that changes nothing."""
        try:
            tool = get_tool(name)
        except InvalidArgumentError:  # a process tool: the approval policy decides it alone
            return None
        op = tool.operation(arguments)
        if op is None or not op.writes or is_dry_run(arguments):
            return None
        return tool.files(arguments)

    def needs_approval(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        names = self._writes(name, arguments)
        if names is None:
            return None
        if self.rules.mode == "ask":
            return 'the vault\'s rules ask before every change (mode = "ask")'
        moves = self._moves(name, arguments)
        why = self._asked_by_folder(names, moves) if self.rules.has_asks else None
        if why:
            return why
        if self.tainted_by is not None:
            return (
                f"this run read '{self.tainted_by}' from an untrusted folder, so every change "
                "asks first (text in such a note may try to steer the agent)"
            )
        limit = self.rules.max_notes_per_run
        new = self._new(names, moves)
        if not self.limit_approved and len(self.changed) + len(new) > limit:
            return (
                f"this would take the run past {limit} changed notes (max_notes_per_run); "
                f"{len(self.changed)} changed so far"
            )
        return None

    def _moves(self, name: str, arguments: Mapping[str, Any]) -> list[Change] | None:
        """What a move would change (its dry run), or None for another call or no ``rewrites``."""
        op = get_tool(name).operation(arguments)
        if op is None or op.kind != "move" or self.rewrites is None:
            return None
        return self.rewrites(name, arguments)

    def _new(self, names: list[str], moves: list[Change] | None) -> set[str]:
        """The notes the call would change that the run has not changed yet: for a move, each
        note it moves or rewrites (a folder counts its notes), else the names it gives."""
        if moves is None:
            return {t for t in names if t not in self.changed}
        touched = (to or old for old, to in moves)
        return {t for t in touched if t is not None and t not in self.changed}

    def _asked_by_folder(self, names: list[str], moves: list[Change] | None) -> str | None:
        """Why an ``ask`` entry asks: a note the call names or leads to is in one, a folder it
        changes as a whole holds one, or a move would change a note in one."""
        for target in self.resolve(names) if self.resolve is not None else names:
            why = self.rules.asks(target) or self.rules.asks_inside(target)
            if why:
                return why
        for change in moves or []:
            for path in change:
                why = self.rules.asks(path) if path else None
                if why:
                    return f"the move changes '{path}': {why}"
        return None

    def approved(self, name: str, arguments: Mapping[str, Any]) -> None:
        """The person approved a call this guard asked about."""
        names = self._writes(name, arguments) or []
        new = self._new(names, self._moves(name, arguments) if names else None)
        if len(self.changed) + len(new) > self.rules.max_notes_per_run:
            self.limit_approved = True

    def observe(self, name: str, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        if self._writes(name, arguments) is not None:
            self.changed |= {p for p in result.get("affectedPaths") or [] if isinstance(p, str)}
            return
        self.saw(_result_paths(result))

    def saw(self, paths: Iterable[str]) -> None:
        """Note the notes the run read (a read's result, or notes attached with ``@``)."""
        if self.tainted_by is None:
            for path in sorted(paths):
                if self.rules.untrusted_source(path):
                    self.tainted_by = path
                    break


def guard_on(ctx: ToolContext, rules: VaultRules | None = None) -> RunGuard:
    """A guard that looks a call's names and a move's rewrites up in ``ctx`` (its dry run),
    for one call from a client with no run (MCP, the server's /rpc)."""
    return RunGuard(
        ctx.rules if rules is None else rules,
        partial(resolved_paths, ctx),
        lambda name, arguments: changed_paths(call_tool(ctx, name, {**arguments, "dryRun": True})),
    )


def changed_paths(result: Mapping[str, Any]) -> list[Change]:
    """The notes a dry run's diffs change, as (from, to) paths (None: created or removed)."""
    return [
        (d.get("from") if isinstance(d.get("from"), str) else None,
         d.get("to") if isinstance(d.get("to"), str) else None)
        for d in result.get("diffs") or []
        if isinstance(d, Mapping)
    ]  # fmt: skip
