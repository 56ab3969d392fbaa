"""The agent view at phone width (390x844) against the REAL server (uvicorn over a copy of the
example vault, the scripted model server standing in for the model).

The sidebar starts folded behind "☰ Conversations" in a slim top bar; the button opens it as a
drawer (focus moves in, aria-expanded says so) that Escape, the button, a click outside and picking
a conversation close (focus goes back to the button). "This run" opens the same way. The move's
approval card, its diff of a note with a long path, the step lines and the message box fit the
width: nothing scrolls sideways and Approve and Reject are in sight. At 1280 px the three columns
are back, with no top bar. Screenshots go to test-artefacts/web/narrow-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.real_server import real_server
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]
PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 860}
# One long unbroken path segment: it must wrap, not push the page sideways.
FOLDER = "Projects/Platform-team-quarterly-planning-and-retrospective-notes-2026"
NOTE = f"{FOLDER}/Idempotency-keys-for-retried-webhook-deliveries.md"
MOVED = "Archive/Idempotency-keys-for-retried-webhook-deliveries.md"
LINKING = "Inbox/Reading list.md"
GOAL = "Archive the webhook idempotency note"
MOVE = ScriptedCall(
    id="call_move",
    name="obsidian_vault_manager",
    arguments={"operation": "move_note", "target": NOTE, "destination": "Archive"},
)

# What sticks out sideways: the page itself, or a box that scrolls (the conversation, the
# drawers) or holds the message box; those clip what overflows them, so the page would not tell.
OVERFLOW = """() => {
  const out = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > innerWidth) out.push(`page ${doc.scrollWidth} > ${innerWidth}`);
  const boxes = '.scroller, .composer, .topbar, .approval, .diff, .sidebar, .this-run';
  for (const el of document.querySelectorAll(boxes)) {
    const r = el.getBoundingClientRect();
    const name = el.className;
    if (el.scrollWidth > el.clientWidth + 1) out.push(`${name} ${el.scrollWidth} wide`);
    if (r.width > 0 && (r.left < 0 || r.right > innerWidth + 0.5)) out.push(`${name} ${r.right}`);
  }
  return out;
}"""


def _overflow(page: Any) -> list[str]:
    return list(page.evaluate(OVERFLOW))


def _focus_in(page: Any, selector: str) -> bool:
    return bool(page.evaluate(f"() => !!document.activeElement?.closest({selector!r})"))


def test_at_phone_width_the_sidebar_folds_and_nothing_overflows(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    (example_vault / FOLDER).mkdir(parents=True)
    (example_vault / NOTE).write_text(
        "# Idempotency keys\n\nA retried webhook delivery carries the same key.\n",
        encoding="utf-8",
    )
    (example_vault / LINKING).parent.mkdir(exist_ok=True)
    (example_vault / LINKING).write_text(
        f"# Reading list\n\n- [[{NOTE.removesuffix('.md')}]]\n", encoding="utf-8"
    )
    turns = [
        ScriptedTurn(text="Moving it to the archive.", tool_calls=[MOVE]),
        ScriptedTurn(text=f"Archived it: it is now {MOVED}."),
    ]
    page.set_viewport_size(PHONE)
    with real_server(example_vault, data_dir, turns) as server:
        page.goto(server.login_link())
        box = page.get_by_role("textbox", name="Message")
        expect(box).to_be_visible()
        toggle = page.get_by_role("button", name="Conversations")
        sidebar = page.get_by_role("navigation", name="Vault")
        # Folded: the conversation has the screen; the bar names the vault.
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(sidebar).to_be_hidden()
        expect(page.locator(".topbar .vault-name")).to_have_text("vault")
        expect(page.get_by_role("heading", name="Ask your vault")).to_be_in_viewport()
        assert _overflow(page) == []
        shot(page, "narrow-01-folded")

        # The button opens it over the conversation, and the focus goes in; Escape closes it
        # and gives the focus back to the button.
        toggle.click()
        expect(sidebar).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        assert toggle.get_attribute("aria-controls") == sidebar.get_attribute("id")
        assert _focus_in(page, "nav.sidebar")
        expect(sidebar.get_by_role("button", name="New conversation")).to_be_in_viewport()
        expect(sidebar.get_by_role("searchbox", name="Search the vault")).to_be_in_viewport()
        assert _overflow(page) == []
        shot(page, "narrow-02-drawer-open")
        # A note's preview opened from the drawer's search closes first, on its own Escape.
        sidebar.get_by_role("searchbox", name="Search the vault").fill("retried webhook delivery")
        hit = sidebar.locator(".hits button").first
        # The first search of a fresh server starts its read workers: slow on a loaded machine.
        expect(hit).to_contain_text(
            "Idempotency-keys-for-retried-webhook-deliveries", timeout=15_000
        )
        hit.click()
        preview = page.get_by_role("dialog", name=f"Preview of {NOTE}")
        expect(preview).to_contain_text("A retried webhook delivery carries the same key.")
        expect(preview.get_by_role("button", name="Close")).to_be_in_viewport()
        assert _overflow(page) == []
        shot(page, "narrow-02b-preview-from-the-drawer")
        page.keyboard.press("Escape")
        expect(preview).to_have_count(0)
        expect(sidebar).to_be_visible()
        expect(hit).to_be_focused()
        page.keyboard.press("Escape")
        expect(sidebar).to_be_hidden()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(toggle).to_be_focused()
        # The button closes it too, and so does a click beside the drawer.
        toggle.click()
        expect(sidebar).to_be_visible()
        toggle.click()
        expect(sidebar).to_be_hidden()
        toggle.click()
        expect(sidebar).to_be_visible()
        page.mouse.click(PHONE["width"] - 15, PHONE["height"] // 2)
        expect(sidebar).to_be_hidden()
        expect(toggle).to_be_focused()

        box.fill(GOAL)
        page.get_by_role("button", name="Send").click()
        # (The step's label shortens the long path; the card's sentence and diffs say it whole.)
        named = re.compile(r"^Approval: Move Projects\/.+ → Archive$")
        card = page.get_by_role("group", name=named)
        expect(card.locator(".what")).to_contain_text(f"Moves {NOTE} to {MOVED}")
        expect(card.locator("figcaption").first).to_contain_text(MOVED)
        approve = card.get_by_role("button", name="Approve")
        reject = card.get_by_role("button", name="Reject")
        for button in (approve, reject):
            expect(button).to_be_visible()
            expect(button).to_be_in_viewport()
            edge = button.bounding_box()
            assert edge is not None and edge["x"] >= 0 and edge["x"] + edge["width"] <= 390
        # The long path wraps inside the card instead of widening it.
        caption = card.locator("figcaption").first.bounding_box()
        assert caption is not None and caption["height"] > 30, caption
        assert _overflow(page) == []
        shot(page, "narrow-03-approval")
        # With a drawer over it, the card does not take the keys: y there approves nothing.
        toggle.click()
        expect(page.locator("main.conversation")).to_have_attribute("inert", "")
        page.keyboard.press("y")
        page.keyboard.press("Escape")
        expect(page.locator("main.conversation")).not_to_have_attribute("inert", "")
        expect(card.locator(".decision")).to_have_count(0)
        approve.click()
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("2 notes changed")
        expect(page.get_by_label("Answer")).to_contain_text(MOVED)
        assert (example_vault / MOVED).is_file()
        page.locator(".tool .step-line").first.click()  # the step opened: call, approval, result
        expect(page.locator(".tool .result")).to_contain_text("Moved")
        assert _overflow(page) == []
        shot(page, "narrow-04-finished")

        # "This run" is reachable too: what the run changed, in a drawer of its own.
        run_toggle = page.get_by_role("button", name="This run")
        panel = page.get_by_role("complementary", name="This run")
        expect(panel).to_be_hidden()
        run_toggle.click()
        expect(run_toggle).to_have_attribute("aria-expanded", "true")
        expect(panel).to_be_visible()
        expect(panel.get_by_role("list", name="Notes changed")).to_contain_text(MOVED)
        expect(panel).to_contain_text("Done")
        assert _focus_in(page, "aside.this-run")
        assert _overflow(page) == []
        shot(page, "narrow-05-this-run")
        page.keyboard.press("Escape")
        expect(panel).to_be_hidden()
        expect(run_toggle).to_be_focused()

        # New conversation from the bar; then the past one picked from the drawer closes it.
        page.get_by_role("button", name="New conversation").click()
        expect(page.get_by_role("heading", name="Ask your vault")).to_be_visible()
        toggle.click()
        past = sidebar.get_by_role("button", name=GOAL)
        past.click()
        expect(sidebar).to_be_hidden()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(toggle).to_be_focused()
        run = page.get_by_role("article", name=f"Run: {GOAL}")
        expect(run.get_by_label("Answer")).to_contain_text(MOVED)
        assert _overflow(page) == []
        shot(page, "narrow-06-reopened")
        toggle.click()
        expect(past).to_have_attribute("aria-current", "true")
        expect(past).to_be_focused()  # into the drawer, at the conversation shown
        page.keyboard.press("Escape")

        # Wide: three columns as before, no top bar, nothing folded.
        page.set_viewport_size(WIDE)
        expect(page.locator(".topbar")).to_have_count(0)
        expect(sidebar).to_be_visible()
        expect(panel).to_be_visible()
        expect(panel.get_by_role("list", name="Notes changed")).to_contain_text(MOVED)
        assert _overflow(page) == []
        shot(page, "narrow-07-wide")
    assert page.page_errors == []
