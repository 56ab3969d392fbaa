"""The agent view against the REAL server (uvicorn over a copy of the example vault, the scripted
model server standing in for the model): a past conversation opened from the sidebar after a
reload shows its run (message, steps, the approval with its call, the summary of what changed)
with Undo, and after Undo and another reload says it was undone; the next message continues the
same conversation. The move's approval card says from where to where and how many notes' links
change, and answers to the keys y and n (not while a text field has the focus). The search box
shows each hit's relevance and a hint for a person, and its preview opens in sight and closes
with Escape. The no-model panel names the config file. No request of the page fails (favicon).
Screenshots go to test-artefacts/web/conv-*.png."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.real_server import RealServer, real_server
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]
NOTE = "Reference/Concepts/Idempotency.md"
MOVED = "Archive/Idempotency.md"
LINKING = "Inbox/Reading list.md"
MOVE = ScriptedCall(
    id="call_move",
    name="obsidian_vault_manager",
    arguments={"operation": "move_note", "target": NOTE, "destination": "Archive"},
)
GOAL = "Archive the idempotency note"


def _failed_requests(page: Any) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
    return failed


def _get(server: RealServer, path: str) -> Any:
    auth = {"Authorization": f"Bearer {server.key}"}
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False, headers=auth) as c:
        reply = c.get(path)
    reply.raise_for_status()
    return reply.json()


def test_a_past_conversation_reopens_with_its_run_and_undo(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    (example_vault / LINKING).parent.mkdir(exist_ok=True)
    (example_vault / LINKING).write_text(
        "# Reading list\n\n- [retries](../Reference/Concepts/Idempotency.md)\n", encoding="utf-8"
    )
    turns = [
        ScriptedTurn(text="Moving it to the archive.", tool_calls=[MOVE]),
        ScriptedTurn(text="Archived the idempotency note."),
        ScriptedTurn(text="It is back where it was."),
    ]
    failed = _failed_requests(page)
    with real_server(example_vault, data_dir, turns) as server:
        page.goto(server.login_link())
        box = page.get_by_role("textbox", name="Message")
        box.fill(GOAL)
        page.get_by_role("button", name="Send").click()
        card = page.get_by_role("group", name=f"Approval: Move {NOTE} → Archive")
        expect(card).to_contain_text(
            f"Moves {NOTE} to {MOVED}; rewrites the links in 1 other note."
        )
        expect(card.locator("figcaption").first).to_contain_text(f"{NOTE} → {MOVED}")
        expect(card.locator(".question")).to_have_text(f"Move {NOTE} → Archive?")
        expect(
            card.get_by_role("checkbox", name="Allow moves for the rest of the run")
        ).to_be_visible()
        expect(card.locator("button kbd")).to_have_text(["y", "n"])  # the keys, on the buttons
        shot(page, "conv-01-move-approval")
        # Typing in a text field is typing, not answering.
        card.get_by_role("textbox", name="Reason for rejecting (optional)").press("n")
        expect(card.get_by_role("button", name="Approve")).to_be_visible()
        card.get_by_role("textbox", name="Reason for rejecting (optional)").fill("")
        card.click(position={"x": 5, "y": 5})  # the card has the focus: y approves
        page.keyboard.press("y")
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("2 notes changed")
        # Answered, the card folds into its step: the line says so, and opening the step shows
        # the call, the approval, then the result, in that order.
        tool = page.locator(".tool").filter(has=page.locator(".approval"))
        line = tool.locator(".step-line")
        expect(line.locator(".verb")).to_have_text("Move")
        expect(line.locator(".object")).to_have_text(f"{NOTE} → Archive")
        expect(line.locator(".outcome")).to_have_text("links updated in 1 note")
        expect(line.locator(".decided")).to_have_text("approved")
        line.click()
        answered = tool.get_by_role("group", name=f"Approval: Move {NOTE} → Archive")
        expect(answered).to_be_visible()
        expect(tool.locator(".approval .decision")).to_have_text("Approved")
        expect(tool.locator(".result")).to_contain_text("Moved")
        in_order = tool.evaluate(
            "t => !!(t.querySelector('.approval').compareDocumentPosition("
            "t.querySelector('.result')) & Node.DOCUMENT_POSITION_FOLLOWING)"
        )
        assert in_order
        assert (example_vault / MOVED).is_file()
        shot(page, "conv-02-finished")

        page.reload()  # a new page: the conversation is only in the sidebar
        expect(page.get_by_role("heading", name="Ask your vault")).to_be_visible()
        past = page.get_by_role("navigation", name="Vault").get_by_role("button", name=GOAL)
        past.click()
        expect(past).to_have_attribute("aria-current", "true")
        run = page.get_by_role("article", name=f"Run: {GOAL}")
        expect(run.locator(".bubble")).to_have_text(GOAL)
        expect(run.locator(".tool")).to_have_count(1)
        expect(run.locator(".tool .decided")).to_have_text("approved")
        expect(run.locator(".tool .step-line")).to_contain_text("links updated in 1 note")
        expect(run.get_by_label("Answer")).to_contain_text("Archived the idempotency note.")
        summary = run.get_by_label("Run summary")
        expect(summary.get_by_role("list", name="Notes changed")).to_contain_text(MOVED)
        expect(summary.get_by_role("list", name="Notes changed")).to_contain_text(LINKING)
        shot(page, "conv-03-reopened")
        summary.get_by_role("button", name="Undo").click()
        expect(summary.get_by_role("status")).to_have_text(
            re.compile(r"Undone: (restored \d+ (notes?|files?)|\d+ files? restored)")
        )
        assert (example_vault / NOTE).is_file() and not (example_vault / MOVED).exists()

        page.reload()
        page.get_by_role("navigation", name="Vault").get_by_role("button", name=GOAL).click()
        summary = page.get_by_role("article", name=f"Run: {GOAL}").get_by_label("Run summary")
        expect(summary).to_contain_text("Undone")
        expect(summary.get_by_role("button", name="Undo")).to_have_count(0)
        changed = summary.get_by_role("list", name="Notes changed")
        expect(changed).to_contain_text(f"{MOVED} (undone)")
        expect(changed.get_by_role("link")).to_have_count(0)
        shot(page, "conv-04-reopened-undone")

        # The next message continues the conversation that is open.
        box.fill("Where is it now?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_label("Answer").last).to_contain_text("It is back where it was.")
        expect(page.locator("article.run")).to_have_count(2)
        listed = _get(server, "/conversations?vaultId=vault")
        assert [c["title"] for c in listed] == [GOAL]
        stored = _get(server, f"/conversations/{listed[0]['id']}?vaultId=vault")
        assert [r["goal"] for r in stored["runs"]] == [GOAL, "Where is it now?"]
    assert page.page_errors == []
    assert failed == []  # favicon included: nothing the page asks for is missing


def test_search_shows_relevance_a_persons_hint_and_a_preview_in_sight(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    for i in range(14):
        (example_vault / "Inbox" / f"Quokka {i}.md").parent.mkdir(exist_ok=True)
        (example_vault / "Inbox" / f"Quokka {i}.md").write_text(
            f"# Quokka {i}\n\nA quokka sighting, number {i}.\n", encoding="utf-8"
        )
    with real_server(example_vault, data_dir, None) as server:
        page.goto(server.login_link())
        search = page.get_by_role("searchbox", name="Search the vault")
        search.fill("quokka sighting")
        sidebar = page.get_by_role("navigation", name="Vault")
        hits = sidebar.locator(".hits button")
        expect(hits).to_have_count(10)
        expect(sidebar).to_contain_text(re.compile(r"Showing 10 of 1[0-9]: refine the words"))
        expect(sidebar).not_to_contain_text("filters=")
        for hit in hits.all():
            expect(hit.locator(".relevance")).to_have_text(re.compile(r"^\s*\d{1,3}% relevance$"))
        shot(page, "conv-05-search")
        hits.nth(8).click()  # far down the list
        preview = page.get_by_role("dialog", name="Preview of Inbox/Quokka")
        expect(preview).to_contain_text("A quokka sighting")
        box = preview.bounding_box()
        assert box is not None and 0 <= box["y"] < 860 - 40  # in sight
        close = preview.get_by_role("button", name="Close")
        expect(close).to_be_focused()
        shot(page, "conv-06-preview")
        page.keyboard.press("Escape")
        expect(preview).to_have_count(0)
        expect(hits.nth(8)).to_be_focused()  # back where the person was
    assert page.page_errors == []


def test_the_no_model_panel_names_the_config_file(
    page: Any,
    shot: Shot,
    example_vault: Path,
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = tmp_path / "settings" / "vaultpilot.toml"
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(config))
    with real_server(example_vault, data_dir, None) as server:
        page.goto(server.login_link())
        panel = page.get_by_role("region", name="No model is configured")
        expect(panel.locator(".config-path")).to_have_text(str(config))
        ollama = panel.get_by_role("region", name="Ollama")
        expect(ollama.locator("p code").first).to_have_text("ollama pull qwen2.5:7b")
        assert "`" not in panel.inner_text()
        panel.get_by_role("button", name="Check again").click()
        expect(page.get_by_role("alert")).to_contain_text(f"Still no model: set one in {config}")
        expect(panel).to_be_visible()
        shot(page, "conv-07-no-model")
    assert page.page_errors == []
