"""The terminal's approval questions (``cli.approvals.Approver``) with scripted answers."""

from __future__ import annotations

import asyncio

from vaultpilot.agent.events import ApprovalRequired
from vaultpilot.cli.approvals import Approver, Choice

MOVE = ApprovalRequired(
    call_id="c1",
    name="obsidian_vault_manager",
    operation="move_note",
    arguments={"operation": "move_note", "target": "Plan.md", "destination": "Archive"},
    reason="moves a note",
    diffs=(
        {"path": "Archive/Plan.md", "from": "Plan.md", "to": "Archive/Plan.md", "diff": ""},
        {"path": "Home.md", "from": "Home.md", "to": "Home.md", "diff": "-[[Plan]]\n+[[Plan]]"},
    ),
    per_file=True,
)


def _answer(event: ApprovalRequired, answers: list[str]) -> tuple[Choice | None, list[str]]:
    asked: list[str] = []

    async def ask(question: str) -> str | None:
        asked.append(question)
        return answers.pop(0)

    return asyncio.run(Approver().answer(event, ask)), asked


def test_leaving_out_the_moved_note_refuses_the_move_at_once() -> None:
    choice, asked = _answer(MOVE, ["4", "n"])
    assert choice == Choice("no", "the person did not want it moved")
    assert len(asked) == 2 and "Move Plan.md?" in asked[1]  # no question about Home.md after


def test_the_notes_whose_links_change_may_be_left_out() -> None:
    choice, asked = _answer(MOVE, ["4", "y", "n"])
    assert choice == Choice("some", files=("Archive/Plan.md",))
    assert len(asked) == 3
