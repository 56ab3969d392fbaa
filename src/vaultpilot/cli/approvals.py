"""The person's answer to an approval: Yes / Yes, and don't ask again in this run / No, and why,
and for a change to several files whose operation allows it, Choose files (one question a file).

``Approver`` is made once per run. ``answer(event, ask)`` returns a ``Choice``: "yes", "always"
(this tool and operation are approved for the rest of the run, ``allowed`` remembers them), "some"
with the ``files`` the person kept (a file refused keeps its old state; none kept is a "no"), "no"
with an optional reason that goes to the model, or None when the person pressed Ctrl-C (the run
is interrupted). ``ask(prompt)`` reads one line (the prompt_toolkit session in a terminal,
stdin otherwise) and returns None on Ctrl-C or end of input. ``mode`` "auto" (``/mode`` in
chat, ``--yes``) approves without asking.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from vaultpilot.agent.events import ApprovalRequired
from vaultpilot.cli.steps import label
from vaultpilot.tools import TOOLS

__all__ = ["Approver", "Choice", "NoAnswer", "choices_line", "parse_choice"]

Ask = Callable[[str], Awaitable[str | None]]


_VAULT_TOOLS = {tool.name: tool for tool in TOOLS}


@dataclass(frozen=True, slots=True)
class Choice:
    kind: Literal["yes", "always", "some", "no"]
    reason: str | None = None
    files: tuple[str, ...] = ()  # "some": the files to change


def per_file(event: ApprovalRequired) -> list[str]:
    """The files a person may pick from (the diffs' paths), or [] when the change is all or
    nothing (one file, or an operation whose facts say it applies whole)."""
    tool = _VAULT_TOOLS.get(event.name)
    op = tool.operation(event.arguments) if tool is not None else None
    paths = [str(d["path"]) for d in event.diffs if isinstance(d.get("path"), str)]
    return paths if op is not None and op.per_file and len(paths) > 1 else []


def _verb(event: ApprovalRequired) -> str:
    return label(event.name, event.arguments).split("(", 1)[0]


def _the_move_itself(event: ApprovalRequired, path: str) -> bool:
    """Whether ``path`` is the one note or folder a move moves (by the operation's facts: a
    move of its ``target``, not of several ``targets``), not a note whose links it rewrites:
    leaving it out refuses the whole move."""
    tool = _VAULT_TOOLS.get(event.name)
    op = tool.operation(event.arguments) if tool is not None else None
    if op is None or op.kind != "move" or "target" not in op.files:
        return False
    diff = next((d for d in event.diffs if d.get("path") == path), {})
    before, after = diff.get("from"), diff.get("to")
    return bool(before and after and before != after)


def _file_question(event: ApprovalRequired, path: str) -> str:
    """What happens to one file, named as the person knows it: ``Move Travel/Trip.md?`` (where
    it is now, not where it would go), ``Delete A.md?``, ``Create B.md?``, ``Change C.md?``."""
    diff = next((d for d in event.diffs if d.get("path") == path), {})
    before, after = diff.get("from"), diff.get("to")
    if before and after and before != after:
        return f"Move {before}?"
    if before and after is None:
        return f"Delete {before}?"
    if after and before is None:
        return f"Create {after}?"
    return f"Change {path}?"


class NoAnswer(Exception):
    """Raised by an ``Ask`` when nobody is there to answer (stdin ended): the first question
    of an approval then goes unanswered; a later one (the reason, a file) takes its default."""


def choices_line(event: ApprovalRequired) -> str:
    """The choices, one per line (a narrow terminal cuts a long line above the input off)."""
    options = ["1 Yes", f"2 Yes, and don't ask again for {_verb(event)} in this run"]
    options += ["3 No, and tell it why", *(["4 Choose files"] if per_file(event) else [])]
    return "\n".join(f"  {option}" for option in options)


def parse_choice(
    text: str, *, files: bool = False
) -> Literal["yes", "always", "some", "no"] | None:
    """``1``/``y``, ``2``/``a``, ``3``/``n``/empty, and with ``files`` ``4``/``c``; None for
    anything else."""
    word = text.strip().lower()
    if files and word in ("4", "c", "choose"):
        return "some"
    if word in ("1", "y", "yes"):
        return "yes"
    if word in ("2", "a", "always"):
        return "always"
    if word in ("", "3", "n", "no"):
        return "no"
    return None


class Approver:
    def __init__(self, *, mode: Literal["ask", "auto"] = "ask") -> None:
        self.mode = mode
        self.allowed: set[tuple[str, str | None]] = set()

    def preapproved(self, event: ApprovalRequired) -> Choice | None:
        if self.mode == "auto":
            return Choice("yes")
        if (event.name, event.operation) in self.allowed:
            return Choice("yes")
        return None

    async def answer(self, event: ApprovalRequired, ask: Ask) -> Choice | None:
        given = self.preapproved(event)
        if given is not None:
            return given
        prompt = choices_line(event) + "\n  Type a number and Enter (Enter alone: No) › "
        paths = per_file(event)
        while True:
            text = await ask(prompt)
            if text is None:
                return None
            kind = parse_choice(text, files=bool(paths))
            if kind is not None:
                break
            prompt = (
                "  Type 1, 2, 3 or 4 (y, a, n or c) › "
                if paths
                else "  Type 1, 2 or 3 (y, a or n) › "
            )
        if kind == "some":
            return await self._choose(event, paths, ask)
        if kind == "always":
            self.allowed.add((event.name, event.operation))
        if kind != "no":
            return Choice(kind)
        try:
            reason = await ask("  Tell the agent why, or what to do instead (Enter to skip) › ")
        except NoAnswer:
            reason = ""
        if reason is None:
            return None
        return Choice("no", reason.strip() or None)

    async def _choose(self, event: ApprovalRequired, paths: list[str], ask: Ask) -> Choice | None:
        kept = []
        for path in paths:
            try:
                answer = await ask(f"  {_file_question(event, path)} [Y/n] › ")
            except NoAnswer:
                answer = ""
            if answer is None:
                return None
            if answer.strip().lower() in ("", "y", "yes"):
                kept.append(path)
            elif _the_move_itself(event, path):  # without it there is nothing to rewrite for
                return Choice("no", "the person did not want it moved")
        if not kept:
            return Choice("no", "the person kept none of the files")
        return Choice("some", files=tuple(kept))
