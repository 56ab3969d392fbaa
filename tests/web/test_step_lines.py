"""Each tool call as one compact line, and the "This run" panel, against the REAL server (uvicorn
over a copy of the example vault, the scripted model server standing in for the model): a run
that searches, reads (a note twice, and one that does not exist), edits and moves shows
`Search "…" · N found`, `Read Inbox.md · N words`, a red failed read with the tool's message,
`Edit Inbox.md +1 −1` and `Move … → Archive · links updated in 1 note`, each with the icon of its
kind; Enter on a line opens its arguments and result. The panel shows the run's approval mode,
lists the notes read once each, the notes changed with their +/- counts and links, and an elapsed
time that counts while the run waits. Every word of a line and every count comes with the events
(src/vaultpilot/agent/steps.py says them): the page asks the server for nothing after a write (no
ShowChangeSet). Screenshots go to test-artefacts/web/lines-*.png."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.real_server import real_server
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

Shot = Callable[[Any, str], Path]
DAL = "Recipes/Weeknight Dal.md"
MOVED = "Archive/Weeknight Dal.md"
PLAN = "Meal plan.md"
OLD = "- Dentist wants the old X-rays from the previous clinic; email them before the appointment."
NEW = "- [x] Dentist wants the old X-rays from the previous clinic; emailed them on Monday."


def _call(call_id: str, name: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(id=call_id, name=name, arguments=arguments)


TURNS = [
    ScriptedTurn(
        text="Searching first.",
        tool_calls=[
            _call("c1", "obsidian_query_vault", queryType="semantic_search", query="dentist x-rays")
        ],
    ),
    ScriptedTurn(
        tool_calls=[
            _call("c2", "obsidian_get_context", contextType="read_note", target="Inbox.md"),
            _call("c3", "obsidian_get_context", contextType="read_note", target="Nowhere/Gone.md"),
        ]
    ),
    ScriptedTurn(
        tool_calls=[
            _call("c4", "obsidian_get_context", contextType="read_note", target="Inbox"),
            _call(
                "c5",
                "obsidian_vault_manager",
                operation="edit_note",
                target="Inbox.md",
                edits=[{"oldText": OLD, "newText": NEW}],
            ),
        ]
    ),
    ScriptedTurn(
        tool_calls=[
            _call(
                "c6",
                "obsidian_vault_manager",
                operation="move_note",
                target=DAL,
                destination="Archive",
            ),
        ]
    ),
    ScriptedTurn(text="Checked off the dentist item and archived the dal recipe."),
]


def test_a_run_reads_as_compact_lines_and_the_panel_lists_what_it_read_and_changed(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
    from playwright.sync_api import expect

    (example_vault / PLAN).write_text(
        "# Meal plan\n\n- Monday: [dal](Recipes/Weeknight%20Dal.md)\n", encoding="utf-8"
    )
    inbox_words = len((example_vault / "Inbox.md").read_text(encoding="utf-8").split())
    sent: list[str] = []  # the commands the page sends over its socket
    page.on(
        "websocket",
        lambda ws: ws.on("framesent", lambda f: sent.append(str(json.loads(f).get("commandName")))),
    )
    with real_server(example_vault, data_dir, TURNS) as server:
        page.goto(server.login_link())
        page.get_by_role("textbox", name="Message").fill("Tidy the inbox, archive the dal")
        page.get_by_role("button", name="Send").click()
        approve = page.get_by_role("button", name="Approve")
        expect(approve).to_be_visible()

        lines = page.locator(".tool .step-line")
        expect(lines).to_have_count(6)
        expect(lines.locator(".verb")).to_have_text(
            ["Search", "Read", "Read", "Read", "Edit", "Move"]
        )
        objects = ['"dentist x-rays"', "Inbox.md", "Nowhere/Gone.md", "Inbox", "Inbox.md"]
        expect(lines.locator(".object")).to_have_text([*objects, f"{DAL} → Archive"])
        kinds = [
            t.get_attribute("class").split("kind-icon ")[1]
            for t in page.locator(".tool .kind-icon").all()
        ]
        assert kinds == [
            "kind-search", "kind-read", "kind-read", "kind-read", "kind-edit", "kind-move",
        ]  # fmt: skip
        search, read, failed, _, edit, move = (page.locator(".tool").nth(i) for i in range(6))
        expect(search.locator(".outcome")).to_have_text(re.compile(r"^[1-9]\d* found$"))
        # A count of the note's words (the tool's own count; about what `split` gives).
        words = int(read.locator(".outcome").inner_text().split()[0])
        assert abs(words - inbox_words) <= inbox_words // 10, (words, inbox_words)
        expect(failed).to_have_class(re.compile(r"\btool-failed\b"))
        expect(failed.locator(".mark")).to_have_text("✗")
        expect(failed.locator(".step-failure")).to_contain_text("Nowhere/Gone.md")
        # The edit ran without asking: its +/- counts came with its result.
        expect(edit.locator(".counts")).to_have_text("+1 −1")
        expect(move.locator(".mark")).to_have_text("?")
        expect(page.locator(".tool > .approval")).to_have_count(1)  # only the waiting one
        shot(page, "lines-01-waiting-for-the-move")  # docs/agent-view.png is a copy of this one

        # Enter on a line opens the call's arguments and result; again closes them.
        line = search.locator(".step-line")
        line.focus()
        page.keyboard.press("Enter")
        body = search.locator(".step-body")
        expect(body).to_be_visible()
        expect(body.locator("pre.json").first).to_contain_text('"query": "dentist x-rays"')
        expect(body.locator("pre.json").nth(1)).to_contain_text('"totalFound"')
        page.keyboard.press("Enter")
        expect(body).to_be_hidden()

        panel = page.get_by_role("complementary", name="This run")
        expect(panel.locator(".run-mode")).to_have_text("Destructive changes ask first")
        elapsed = panel.locator(".elapsed")
        first = elapsed.inner_text()
        expect(elapsed).not_to_have_text(first, timeout=3000)  # it counts while the run waits
        expect(panel.get_by_role("list", name="Notes read").get_by_role("listitem")).to_have_text(
            ["Inbox.md"]
        )  # read twice, listed once; the missing note was not read

        approve.click()
        expect(page.get_by_label("Run summary")).to_contain_text("3 notes changed")
        expect(move.locator(".mark")).to_have_text("✓")
        expect(move.locator(".outcome")).to_have_text("links updated in 1 note")
        changed = panel.get_by_role("list", name="Notes changed")
        rows = changed.get_by_role("listitem")
        expect(rows).to_have_count(3)
        expect(rows.filter(has_text="Inbox.md").locator(".counts")).to_have_text(" +1 −1")
        expect(rows.filter(has_text=PLAN).locator(".counts")).to_have_text(" +1 −1")
        expect(rows.filter(has_text=MOVED)).to_contain_text(f"(moved from {DAL})")
        expect(changed.get_by_role("link", name=MOVED)).to_have_attribute(
            "href", re.compile(r"^obsidian://open\?vault=.+&file=Archive%2FWeeknight%20Dal\.md$")
        )
        done = panel.locator(".elapsed").inner_text()
        assert re.fullmatch(r"\d+ s", done), done
        time.sleep(1.2)
        assert panel.locator(".elapsed").inner_text() == done  # finished: the time stands still
        shot(page, "lines-02-finished")
        move.locator(".step-line").click()
        expect(move.get_by_role("group", name=f"Approval: Move {DAL} → Archive")).to_be_visible()
        shot(page, "lines-03-move-opened")
    assert NEW in (example_vault / "Inbox.md").read_text(encoding="utf-8")
    assert (example_vault / MOVED).is_file() and not (example_vault / DAL).exists()
    assert "(Recipes/Weeknight%20Dal.md)" not in (example_vault / PLAN).read_text(encoding="utf-8")
    assert "StartAgent" in sent and "ShowChangeSet" not in sent, sent
    assert page.page_errors == []
