"""The vault's rules that are approvals, kept for one agent run (``tools.rules`` has the rules).

``RunGuard(rules)`` is made at the start of each run. The loop asks ``needs_approval(name,
arguments)`` before a call the approval policy would let run; a reason (not None) turns the call
into an approval question:

* ``mode = "ask"``: every change to the vault asks;
* a change to a note in an ``ask`` folder asks (by the names it gives and, with ``resolve``, the
  notes they lead to: a title, a name without its folder), as does a change to a whole folder
  holding one, and, with ``rewrites``, a move whose link rewrites change a note in one;
* a change that would take the run past ``max_notes_per_run`` distinct notes asks (once
  approved, the run may go on changing notes);
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

__all__ = ["RunGuard", "changed_paths", "guard_on"]


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
    # The notes a move's dry run would change (the moved ones and those whose links it rewrites),
    # so a rewrite into an ask folder asks too; None: only the names the call gives.
    rewrites: Callable[[str, Mapping[str, Any]], list[str]] | None = None
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
        why = self._asked_by_folder(name, arguments, names) if self.rules.has_asks else None
        if why:
            return why
        if self.tainted_by is not None:
            return (
                f"this run read '{self.tainted_by}' from an untrusted folder, so every change "
                "asks first (text in such a note may try to steer the agent)"
            )
        limit = self.rules.max_notes_per_run
        new = {t for t in names if t not in self.changed}
        if not self.limit_approved and len(self.changed) + len(new) > limit:
            return (
                f"this would take the run past {limit} changed notes (max_notes_per_run); "
                f"{len(self.changed)} changed so far"
            )
        return None

    def _asked_by_folder(
        self, name: str, arguments: Mapping[str, Any], names: list[str]
    ) -> str | None:
        """Why an ``ask`` entry asks: a note the call names or leads to is in one, a folder it
        changes as a whole holds one, or a move would rewrite links in a note in one."""
        for target in self.resolve(names) if self.resolve is not None else names:
            why = self.rules.asks(target) or self.rules.asks_inside(target)
            if why:
                return why
        op = get_tool(name).operation(arguments)
        if op is not None and op.kind == "move" and self.rewrites is not None:
            for path in self.rewrites(name, arguments):
                why = self.rules.asks(path)
                if why:
                    return f"the move changes '{path}': {why}"
        return None

    def approved(self, name: str, arguments: Mapping[str, Any]) -> None:
        """The person approved a call this guard asked about."""
        names = self._writes(name, arguments) or []
        new = {t for t in names if t not in self.changed}
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


def changed_paths(result: Mapping[str, Any]) -> list[str]:
    """The notes a dry run's diffs change, on both sides of a move."""
    found: list[str] = []
    for d in result.get("diffs") or []:
        if isinstance(d, Mapping):
            found += [p for p in (d.get("from"), d.get("to")) if isinstance(p, str)]
    return found
