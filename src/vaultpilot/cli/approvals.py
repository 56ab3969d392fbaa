"""The person's answer to an approval: Yes / Yes, and don't ask again in this run / No, and why.

``Approver`` is made once per run. ``answer(event, ask)`` returns a ``Choice``: "yes", "always"
(this tool and operation are approved for the rest of the run, ``allowed`` remembers them), "no"
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

__all__ = ["Approver", "Choice", "choices_line", "parse_choice"]

Ask = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Choice:
    kind: Literal["yes", "always", "no"]
    reason: str | None = None
    automatic: bool = False  # given without asking (don't-ask-again, or auto mode)


def _verb(event: ApprovalRequired) -> str:
    return label(event.name, event.arguments).split("(", 1)[0]


def choices_line(event: ApprovalRequired) -> str:
    return (
        f"  1 Yes   2 Yes, and don't ask again for {_verb(event)} in this run   "
        "3 No, and tell it why"
    )


def parse_choice(text: str) -> Literal["yes", "always", "no"] | None:
    """``1``/``y``, ``2``/``a``, ``3``/``n``/empty; None for anything else."""
    word = text.strip().lower()
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
            return Choice("yes", automatic=True)
        if (event.name, event.operation) in self.allowed:
            return Choice("yes", automatic=True)
        return None

    async def answer(self, event: ApprovalRequired, ask: Ask) -> Choice | None:
        given = self.preapproved(event)
        if given is not None:
            return given
        prompt = choices_line(event) + "\n  › "
        while True:
            text = await ask(prompt)
            if text is None:
                return None
            kind = parse_choice(text)
            if kind is not None:
                break
            prompt = "  Type 1, 2 or 3 (y, a or n) › "
        if kind == "always":
            self.allowed.add((event.name, event.operation))
        if kind != "no":
            return Choice(kind)
        reason = await ask("  Tell the agent why, or what to do instead (Enter to skip) › ")
        if reason is None:
            return None
        return Choice("no", reason.strip() or None)
