"""Approval cards and steps that did not run, against the REAL server (uvicorn over a copy of the
example vault, the scripted model server standing in for the model). A delete waits with the
step's own words ("Delete <note>?", "Allow deletes for the rest of the run") and the server's
reason as it comes; `n` puts the cursor in the reason box, Enter there rejects; the step then
says "Rejected by you" and the reason, and a step the approval policy refuses says so, while
the words the model got ("Don't retry it …") stay in the step's details, also after the
conversation is reopened. Screenshots go to test-artefacts/web/refuse-*.png."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.real_server import real_server
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn
from vaultpilot.tools import get_tool

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]
REVIEW = "Archive/2024/Performance Review 2024.md"
GOAL = "Clear out my 2024 performance review"
DELETE = {"operation": "delete_note", "target": REVIEW, "confirmDestructive": True}
MOVE = {"operation": "move_note", "target": REVIEW, "destination": "Archive/Old"}
TURNS = [
    ScriptedTurn(
        text="Deleting the old review.",
        tool_calls=[ScriptedCall(id="c_del", name="obsidian_vault_manager", arguments=DELETE)],
    ),
    ScriptedTurn(
        text="Archiving it instead.",
        tool_calls=[ScriptedCall(id="c_move", name="obsidian_vault_manager", arguments=MOVE)],
    ),
    ScriptedTurn(text="I left the review where it is."),
]


def test_a_rejected_delete_and_a_refused_move_read_as_choices(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    before = (example_vault / REVIEW).read_bytes()
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(str(f))))
    effect = get_tool("obsidian_vault_manager").operation(DELETE)
    assert effect is not None
    with real_server(
        example_vault, data_dir, TURNS, deny=("obsidian_vault_manager.move_note",)
    ) as server:
        page.goto(server.login_link())
        box = page.get_by_role("textbox", name="Message")
        box.fill(GOAL)
        page.get_by_role("button", name="Send").click()

        card = page.get_by_role("group", name=f"Approval: Delete {REVIEW}")
        expect(card.locator(".question")).to_have_text(f"Delete {REVIEW}?")
        # The server's reason, without the words that repeat the question above it.
        expect(card.locator(".reason")).to_have_text(re.compile(re.escape(effect.effect), re.I))
        expect(card.locator(".reason")).not_to_contain_text(REVIEW)
        expect(card.locator(".diff figcaption")).to_contain_text(REVIEW)  # its dry run's diff
        allow = card.get_by_role("checkbox", name="Allow deletes for the rest of the run")
        expect(allow).not_to_be_checked()
        expect(card.locator(".keys")).to_have_text(
            "y approves · n rejects: type a reason if you like, then Enter"
        )
        expect(card).to_be_focused()
        shot(page, "refuse-01-delete-waiting")

        page.keyboard.press("n")
        reason = card.get_by_role("textbox", name="Reason for rejecting (optional)")
        expect(reason).to_be_focused()
        expect(card.get_by_role("button", name="Reject")).to_be_visible()  # still waiting
        assert not any("ApproveToolCall" in f for f in sent), sent
        page.keyboard.type("I still need it for my promotion case")
        page.keyboard.press("Enter")

        expect(page.get_by_label("Answer")).to_contain_text("I left the review where it is.")
        rejected = page.locator(".tool-declined.kind-delete")
        expect(rejected.locator(".not-run")).to_have_text("Rejected by you")
        expect(rejected.locator(".not-run-reason")).to_have_text(
            "“I still need it for my promotion case”"
        )
        refused = page.locator(".tool-declined.kind-move")
        expect(refused.locator(".not-run")).to_have_text("Refused by the approval policy")
        expect(refused.locator(".not-run-reason")).to_have_count(0)
        expect(page.locator(".tool-failed")).to_have_count(0)
        expect(page.locator(".step-failure")).to_have_count(0)
        for step in (rejected, refused):
            expect(step.locator(".step-line")).not_to_contain_text("retry")
        expect(page.get_by_label("Run summary")).to_contain_text("0 notes changed")
        shot(page, "refuse-02-rejected-and-refused")

        # The model's words are there for whoever opens the step.
        rejected.locator(".step-line").click()
        expect(rejected.locator(".approval .decision")).to_have_text(
            "Rejected by you: “I still need it for my promotion case”"
        )
        expect(rejected.get_by_role("heading", name="What the model was told")).to_be_visible()
        expect(rejected.locator(".result")).to_contain_text("Don't retry it")
        refused.locator(".step-line").click()
        expect(refused.locator(".result")).to_contain_text("the approval policy does not allow")
        shot(page, "refuse-03-details")

        # Read back from the server's record, the steps still say who decided.
        page.reload()
        past = page.get_by_role("navigation", name="Vault").get_by_role("button", name=GOAL)
        past.click()
        run = page.get_by_role("article", name=f"Run: {GOAL}")
        expect(run.locator(".tool-declined.kind-delete .not-run")).to_have_text("Rejected by you")
        expect(run.locator(".tool-declined.kind-move .not-run")).to_have_text(
            "Refused by the approval policy"
        )
    assert (example_vault / REVIEW).read_bytes() == before
    assert page.page_errors == []
