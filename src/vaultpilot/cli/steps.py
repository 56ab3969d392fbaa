"""How one tool call reads in the terminal: ``Read(Meetings/Retro.md) 312 words``,
``Edit(Inbox.md) +1 −1``, ``Search("q") 7 found``.

What a step says is described once, in ``agent.steps`` (the events carry it to the agent view);
this module only renders it as terminal text, so the terminal view, the transcript replay of
``chat --continue`` and the tests all say a step the same way:

* ``label(name, arguments)``: ``Verb(object)``, e.g. ``Edit(Inbox.md)``,
  ``Move(A.md → Archive/A.md)``, ``Search("weekly review")``; an unknown tool shows its name
  and its first arguments.
* ``outcome(result, files)``: what came back, in a few words (``7 found``, ``312 words``, the
  message of a failure).
* ``counts(files)``: a write's line counts, ``+3 −1`` (summed over its files).
* ``line_counts``, ``diff_counts``, ``plural``: from ``agent.steps``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vaultpilot.agent.events import FileCount, StepLabel
from vaultpilot.agent.steps import describe, diff_counts, line_counts, outcome
from vaultpilot.wording import plural

__all__ = ["counts", "diff_counts", "label", "line_counts", "outcome", "plural", "render"]


def render(step: StepLabel) -> str:
    """``Verb(object)``."""
    return f"{step['verb']}({step['object']})"


def label(name: str, arguments: Mapping[str, Any] | None) -> str:
    """``Verb(object)`` for a vault tool's operation; ``name(args)`` for anything else."""
    return render(describe(name, arguments))


def counts(files: Sequence[FileCount] | None) -> str:
    """``+added −removed`` over the files a write changed; empty when it changed none."""
    if not files:
        return ""
    added = sum(f["added"] for f in files)
    removed = sum(f["removed"] for f in files)
    return f"+{added} −{removed}"
