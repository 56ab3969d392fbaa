"""The agent view in a real browser (Debian's chromium), against a real local frame server.

Each test replays a recorded run over a real WebSocket and checks what a person sees and what
the page sent back; each state is saved as a PNG under test-artefacts/web/.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import ARTEFACTS
from tests.web.frame_server import FrameServer, serving
from tests.web.scripts import (
    NOTES,
    external_run,
    hostile_answer,
    long_run,
    recorded_run,
    slow_run,
)

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]


def _connected(page: Any) -> None:
    """Wait until the page is greeted by the test server. Now and then a page's WebSocket to
    the frame server stalls in its handshake and stays stalled, even across the page's own
    retries, while the server answers HTTP (seen only with this test server, not with the real
    one in test_real_server.py): one reload then connects. The stuck text is in the failure."""
    banner = page.locator(".banner")
    for attempt in (1, 2):
        try:
            expect(banner).to_have_count(0, timeout=10_000)
            return
        except AssertionError:
            if attempt == 2:
                raise AssertionError(f"still showing: {banner.all_inner_texts()}") from None
            page.reload()


def _open(page: Any, server: FrameServer) -> Any:
    page.goto(server.url)
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_be_visible()
    _connected(page)
    return box


def test_a_recorded_run_streams_steps_waits_for_approval_and_answers(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=recorded_run, notes=NOTES)) as server:
        box = _open(page, server)
        expect(page.get_by_label("Embedding coverage")).to_contain_text("75%")
        expect(page.get_by_role("button", name="Tag last week's meetings")).to_be_visible()
        shot(page, "01-empty")
        box.press_sequentially("Tag the meeting notes as reviewed @Retr")
        expect(page.get_by_role("listbox", name="Notes").get_by_role("option")).to_contain_text(
            "Meetings/Retro.md"
        )
        shot(page, "02-mention-completion")
        box.press("Enter")
        expect(page.locator(".composer .chip")).to_contain_text("Meetings/Retro.md")
        page.get_by_role("button", name="Send").click()

        approve = page.get_by_role("button", name="Approve")
        expect(approve).to_be_visible()
        expect(page.locator(".thought")).to_contain_text("I should find the meeting notes first.")
        expect(page.locator(".tool")).to_have_count(2)
        search = page.locator(".tool .step-line").first
        expect(search.locator(".verb")).to_have_text("Filter")
        expect(search.locator(".object")).to_have_text('{"tags": ["meeting"]}')  # as the terminal
        expect(search.locator(".outcome")).to_have_text("1 found")
        expect(page.locator(".approval .diff .dl-add")).to_have_count(2)
        expect(page.locator(".approval .diff .dl-del")).to_have_count(1)
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        expect(page.locator(".working")).to_contain_text("Waiting for your approval")
        expect(page.locator(".step-divider").first).to_contain_text("940 tokens")
        shot(page, "03-approval-with-diff")
        approve.click()

        answer = page.get_by_label("Answer")
        expect(answer).to_contain_text("linked it from Weekly Review")
        expect(answer.locator("strong")).to_have_text("Meetings/Retro.md")
        link = answer.locator("a.wikilink")
        expect(link).to_have_attribute("href", "obsidian://open?vault=Example&file=Weekly%20Review")
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("Done in 3 steps.")
        expect(summary).to_contain_text("3,450 tokens")
        expect(summary).to_contain_text("1 note changed")
        expect(summary.get_by_role("link", name="Meetings/Retro.md")).to_have_attribute(
            "href", "obsidian://open?vault=Example&file=Meetings%2FRetro.md"
        )
        edit = page.locator(".tool .step-line").nth(1)
        expect(edit.locator(".verb")).to_have_text("Write")
        expect(edit.locator(".object")).to_have_text("Meetings/Retro.md")
        expect(edit.locator(".counts")).to_have_text("+2 −1")  # the files the result carried
        edit.click()  # the full result, as the tool gave it
        expect(page.locator(".tool .result").nth(1)).to_have_text(
            "updated Meetings/Retro.md (+2 −1)"
        )
        expect(page.get_by_role("button", name="Send")).to_be_visible()
        shot(page, "04-answer-and-summary")

    assert server.sent("ApproveToolCall") == [{"callId": "call_2", "approved": True}]
    (start,) = server.sent("StartAgent")
    assert start == {
        "goal": 'Tag the meeting notes as reviewed\n\n@"Meetings/Retro.md"',
        "vaultId": "vault",
    }
    assert page.page_errors == []


def test_reject_sends_the_reason_and_shows_the_refusal(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=recorded_run, notes=NOTES)) as server:
        box = _open(page, server)
        box.fill("Tag the meeting notes as reviewed")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("button", name="Reject")).to_be_visible()
        card = page.get_by_role("group", name="Approval: Write Meetings/Retro.md")
        expect(card.locator(".question")).to_have_text("Write Meetings/Retro.md?")
        expect(card.locator(".reason")).to_have_text("Replaces a note's text.")
        expect(
            card.get_by_role("checkbox", name="Allow rewrites for the rest of the run")
        ).to_be_visible()
        page.get_by_label("Reason for rejecting (optional)").fill("Not this one")
        page.get_by_role("button", name="Reject").click()
        # The person reads their own decision and reason; the model's instruction is only in
        # the step's details, as what the model was told.
        expect(page.get_by_label("Answer")).to_contain_text("unchanged, as you asked")
        step = page.locator(".tool-declined")
        expect(step.locator(".mark")).to_have_text("⊘")
        expect(step.locator(".not-run")).to_have_text("Rejected by you")
        expect(step.locator(".not-run-reason")).to_have_text("“Not this one”")
        expect(step.locator(".step-failure")).to_have_count(0)
        expect(step.locator(".step-line")).not_to_contain_text("retry")
        expect(page.locator(".tool-failed")).to_have_count(0)
        expect(page.get_by_label("Run summary")).to_contain_text("0 notes changed")
        shot(page, "05-rejected")
        step.locator(".step-line").click()
        expect(step.locator(".approval .decision")).to_have_text("Rejected by you: “Not this one”")
        expect(step.get_by_role("heading", name="What the model was told")).to_be_visible()
        expect(step.locator(".result")).to_contain_text(
            "The user refused obsidian_vault_manager update_note (Not this one). Don't retry it"
        )
    assert server.sent("ApproveToolCall") == [
        {"callId": "call_2", "approved": False, "reason": "Not this one"}
    ]


def test_the_n_key_asks_for_a_reason_before_it_rejects(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=recorded_run, notes=NOTES)) as server:
        box = _open(page, server)
        box.fill("Tag the meeting notes as reviewed")
        page.get_by_role("button", name="Send").click()
        card = page.locator(".approval.pending")
        expect(card).to_be_focused()  # nothing typed: the card takes the keys
        expect(card.locator(".keys")).to_have_text(
            "y approves · n rejects: type a reason if you like, then Enter"
        )
        reason = card.get_by_role("textbox", name="Reason for rejecting (optional)")
        page.keyboard.press("n")
        expect(reason).to_be_focused()  # n opens the reason box: nothing is answered yet
        expect(reason).to_have_attribute(
            "placeholder", "Why not? (optional) Enter rejects, Esc goes back"
        )
        time.sleep(0.3)
        assert server.sent("ApproveToolCall") == []
        page.keyboard.press("Escape")  # back to the card, still waiting
        expect(card).to_be_focused()
        page.keyboard.press("n")
        expect(reason).to_be_focused()
        page.keyboard.type("no, keep it")  # an n typed in the box is a letter, not an answer
        shot(page, "05b-reason-by-keyboard")
        page.keyboard.press("Enter")
        expect(page.locator(".tool-declined .not-run-reason")).to_have_text("“no, keep it”")
    assert server.sent("ApproveToolCall") == [
        {"callId": "call_2", "approved": False, "reason": "no, keep it"}
    ]


def test_the_n_key_rejects_at_once_with_a_reason_already_typed(page: Any) -> None:
    with serving(FrameServer(script=recorded_run, notes=NOTES)) as server:
        box = _open(page, server)
        box.fill("Tag the meeting notes as reviewed")
        page.get_by_role("button", name="Send").click()
        card = page.locator(".approval.pending")
        card.get_by_role("textbox", name="Reason for rejecting (optional)").fill("Later")
        card.click(position={"x": 5, "y": 5})
        page.keyboard.press("n")
        expect(page.locator(".tool-declined .not-run")).to_have_text("Rejected by you")
    assert server.sent("ApproveToolCall") == [
        {"callId": "call_2", "approved": False, "reason": "Later"}
    ]


def test_an_external_agents_step_shows_the_tools_name_and_arguments(page: Any, shot: Shot) -> None:
    """Events that say no label or outcome (an external agent's) show the call as it is."""
    with serving(FrameServer(script=external_run, notes=NOTES)) as server:
        box = _open(page, server)
        box.fill("Anything about the dentist?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_label("Run summary")).to_contain_text("Done in 1 steps.")
        line = page.locator(".tool .step-line")
        expect(line.locator(".verb")).to_have_text("obsidian_query_vault")
        expect(line.locator(".object")).to_have_text('queryType="semantic_search", query="dentist"')
        expect(line.locator(".outcome")).to_have_text("no notes found")  # the result's preview
        expect(page.locator(".tool .kind-icon")).to_have_class("kind-icon kind-other")
        panel = page.get_by_role("complementary", name="This run")
        expect(panel.locator(".run-mode")).to_have_count(0)  # the run did not say when it asks
        shot(page, "06-external-agent-step")
    assert page.page_errors == []


def test_stop_interrupts_the_run_and_the_elapsed_time_counts(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=slow_run)) as server:
        box = _open(page, server)
        box.fill("Summarise the whole vault")
        box.press("Enter")  # Enter sends
        working = page.locator(".working")
        expect(working).to_contain_text("Thinking (step 1)")
        expect(working).to_contain_text("· 1 s", timeout=4000)
        expect(page.locator(".thought")).to_contain_text("this will take a while")
        shot(page, "06-working")
        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_label("Run summary")).to_contain_text("Stopped.")
        expect(page.get_by_role("button", name="Stop")).to_have_count(0)
        expect(page.get_by_role("button", name="Send")).to_be_visible()
        shot(page, "07-stopped")
    (interrupt,) = server.sent("InterruptAgent")
    assert interrupt["force"] is True and interrupt["runId"].startswith("run")


def test_no_model_shows_the_settings_and_search_still_works(page: Any, shot: Shot) -> None:
    message = "No model is configured. Choose one: ... `vaultpilot config` shows every setting."
    server = FrameServer(notes=NOTES, start_error=("setup_required", message))
    with serving(server):
        box = _open(page, server)
        box.fill("What is in my inbox?")
        page.get_by_role("button", name="Send").click()
        panel = page.get_by_role("region", name="No model is configured")
        expect(panel).to_contain_text("vaultpilot config")
        for provider in ("Ollama", "LM Studio", "OpenAI", "Anthropic"):
            expect(panel.get_by_role("heading", name=provider)).to_be_visible()
        expect(panel).to_contain_text("export VAULTPILOT_BASE_URL=http://localhost:11434/v1")
        expect(panel).to_contain_text('base_url = "http://localhost:1234/v1"')
        expect(panel).to_contain_text("export OPENAI_API_KEY=sk-...")
        expect(panel).to_contain_text("export VAULTPILOT_PROVIDER=anthropic")
        expect(panel).to_contain_text(message)

        page.get_by_role("searchbox", name="Search the vault").fill("retro")
        page.get_by_role("button", name="Retro Meetings/Retro.md").click()
        preview = page.get_by_role("dialog", name="Preview of Meetings/Retro.md")
        expect(preview).to_contain_text("What went well.")
        shot(page, "08-no-model-and-search")

        server.model = None  # a server that says so in hello shows the panel at once
        page.reload()
        _connected(page)
        expect(page.get_by_role("region", name="No model is configured")).to_be_visible()
    assert server.sent("obsidian_query_vault")[-1]["queryType"] == "semantic_search"


def test_html_and_scripts_in_notes_and_answers_stay_inert(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=hostile_answer, notes=NOTES)) as server:
        box = _open(page, server)
        page.get_by_role("searchbox", name="Search the vault").fill("hostile")
        page.get_by_role("button", name="Hostile Inbox/Hostile.md").click()
        preview = page.get_by_role("dialog", name="Preview of Inbox/Hostile.md")
        expect(preview).to_contain_text('<script>window.__pwned = "script"</script>')
        for inert in preview.locator(".inert-link").all():
            inert.click()
        expect(preview.locator(".inert-link")).to_have_count(3)
        page.keyboard.press("Escape")  # the preview is a dialog over the page: Escape closes it
        expect(preview).to_have_count(0)
        box.fill("Show me the hostile note")
        page.get_by_role("button", name="Send").click()
        answer = page.get_by_label("Answer")
        expect(answer).to_contain_text("<img src=")
        expect(page.get_by_label("Run summary")).to_be_visible()
        for inert in page.locator(".inert-link").all():
            inert.click()
        shot(page, "09-hostile-note-inert")

        assert page.evaluate("window.__pwned") is None
        assert page.locator(".md script, .md img, .md iframe, [onerror]").count() == 0
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        assert hrefs and not [h for h in hrefs if "script" in h.lower()]
        expect(page.locator(".inert-link")).to_have_count(3)  # the answer's (the preview closed)
        expect(answer.locator("a.wikilink")).to_have_attribute(
            "href", "obsidian://open?vault=Example&file=Weekly%20Review"
        )
    assert page.page_errors == []


def test_a_thousand_step_run_stays_responsive(page: Any, shot: Shot) -> None:
    page.add_init_script(
        "window.__longest = 0; new PerformanceObserver(l => { for (const e of l.getEntries())"
        " window.__longest = Math.max(window.__longest, e.duration); })"
        ".observe({type: 'longtask', buffered: true});"
    )
    with serving(FrameServer(script=long_run(1000))) as server:
        box = _open(page, server)
        box.fill("Search everything")
        started = time.monotonic()
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        # Typing while the run streams: each key must show in the box promptly.
        typed = time.monotonic()
        box.press_sequentially("still typing")
        expect(box).to_have_value("still typing")
        typing_s = time.monotonic() - typed
        during = page.get_by_label("Run summary").count() == 0
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("Done in 1000 steps.", timeout=60_000)
        streamed_s = time.monotonic() - started
        rendered = page.locator(".steps > li").count()
        longest_ms = page.evaluate("window.__longest")
        shot(page, "10-thousand-steps")
        opened = time.monotonic()
        page.get_by_role("button", name="Show").click()
        expect(page.locator(".step-divider", has_text="Step 880")).to_be_attached()
        expand_s = time.monotonic() - opened
    figures = {
        "steps": 1000,
        "frames": 5 * 1000 + 2,
        "stream_to_summary_s": round(streamed_s, 2),
        "typing_12_keys_s": round(typing_s, 2),
        "typed_while_streaming": during,
        "longest_main_thread_task_ms": longest_ms,
        "items_in_dom": rendered,
        "show_earlier_s": round(expand_s, 2),
    }
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    (ARTEFACTS / "thousand-steps.json").write_text(json.dumps(figures, indent=2))
    print(figures)
    assert rendered <= 130  # a window of the latest items, not 5,000 of them
    assert typing_s < 3.0
    assert longest_ms < 1000  # no freeze a person would notice as a hang, on a shared CPU
    assert streamed_s < 45
