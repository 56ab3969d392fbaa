"""Approval cards and run control in a real browser (Debian's chromium) against the frame server.

What a person does with a card: approve with ``y`` a call that shows no files (git_agent's
``git_add``), pick files only where the operation takes a subset, read a long delete as one
line, pause while a card waits; and what the page shows when its server restarts mid-run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.approval_scripts import (
    HUGE_LINES,
    git_add_run,
    huge_delete_run,
    move_then_delete_folder_run,
    waits_for_ever,
)
from tests.web.frame_server import FrameServer, serving
from tests.web.scripts import recorded_run
from tests.web.test_view import _connected, _open

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]


def _send(page: Any, server: FrameServer, goal: str) -> Any:
    box = _open(page, server)
    expect(box).to_be_focused()  # on load, typing goes to the message box
    box.fill(goal)
    box.press("Enter")
    return box


def test_y_approves_a_call_that_shows_no_files(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=git_add_run)) as server:
        box = _send(page, server, "Stage the inbox")
        card = page.get_by_role("group", name="Approval: Stage files")
        expect(card).to_be_focused()
        expect(card.locator(".reason")).to_have_text(
            "git_agent git_add changes things outside the vault tools, so it asks first."
        )
        expect(card.get_by_role("checkbox")).to_have_count(1)  # only "Allow … for the run"
        expect(card.locator("fieldset.files")).to_have_count(0)
        shot(page, "approvals-01-git-add")
        page.keyboard.press("y")
        line = page.locator(".tool .step-line")
        expect(line.locator(".decided")).to_have_text("approved")
        expect(line.locator(".outcome")).to_have_text("staged 1 file")
        expect(page.get_by_label("Run summary")).to_contain_text("Done in 2 steps.")
        expect(box).to_be_focused()  # the card that had the keys is gone: back to the box
        # Control characters in the answer read as escapes, not as empty boxes.
        escaped = "Staged Inbox.md.\\x00 \\x1b[31mred\\x1b[0m"
        expect(page.get_by_label("Answer")).to_have_text(escaped)
        shot(page, "approvals-02-git-add-approved")
    assert server.sent("ApproveToolCall") == [{"callId": "g1", "approved": True}]
    assert page.page_errors == []


def test_files_are_picked_only_where_the_operation_takes_a_subset(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=move_then_delete_folder_run)) as server:
        _send(page, server, "Archive the retro, then delete Travel")
        move = page.get_by_role("group", name="Approval: Move Meetings/Retro.md → Archive")
        expect(move.locator(".what")).to_have_text(
            "Moves Meetings/Retro.md to Archive/Retro.md; rewrites the links in 1 other note."
        )
        files = move.locator("fieldset.files input[type=checkbox]")
        expect(files).to_have_count(2)
        # The move itself goes with the move: ticked, and it cannot be unticked; only the link
        # rewrite in another note may be left out.
        expect(files.nth(0)).to_be_checked()
        expect(files.nth(0)).to_be_disabled()
        expect(move.locator("fieldset.files label").nth(0)).to_have_text(
            "Meetings/Retro.md → Archive/Retro.md (the move itself)"
        )
        files.nth(1).uncheck()
        expect(move.locator(".left-out")).to_have_count(1)  # its diff fades: not to be changed
        expect(move.locator(".left-out")).to_contain_text("Weekly Review.md")
        shot(page, "approvals-03-move-without-its-link-rewrite")
        move.get_by_role("button", name="Approve").click()

        folder = page.get_by_role("group", name="Approval: Delete folder Travel")
        expect(folder.get_by_role("button", name="Approve")).to_be_visible()
        expect(folder.locator("fieldset.files")).to_have_count(0)  # a folder delete is whole
        # The notes it deletes: a long one said in a line (its text opens on request), a short
        # one shown as it is.
        expect(folder.locator(".diff-fold > summary")).to_have_text("Deletes 19 lines (show them)")
        expect(folder.locator(".diff tr.dl-del")).to_have_count(3)
        shot(page, "approvals-04-delete-folder-whole")
        page.keyboard.press("y")
        expect(page.get_by_label("Run summary")).to_contain_text("Done in 3 steps.")
    assert server.sent("ApproveToolCall") == [
        {"callId": "m1", "approved": True, "files": ["Archive/Retro.md"]},
        {"callId": "d1", "approved": True},
    ]
    assert page.page_errors == []


def test_a_long_delete_reads_as_one_line_and_the_buttons_stay_in_sight(
    page: Any, shot: Shot
) -> None:
    with serving(FrameServer(script=huge_delete_run)) as server:
        _send(page, server, "Delete the huge log")
        card = page.get_by_role("group", name="Approval: Delete Long/Huge Log.md")
        approve = card.get_by_role("button", name="Approve")
        expect(approve).to_be_in_viewport()
        expect(card.locator(".question")).to_be_in_viewport()
        fold = card.locator(".diff-fold > summary")
        expect(fold).to_have_text(f"Deletes {HUGE_LINES:,} lines (show them)")
        expect(card.locator(".diff tr")).to_have_count(0)  # not rendered until opened
        shot(page, "approvals-05-huge-delete-folded")
        fold.click()
        expect(card.locator(".diff tr.dl-del")).to_have_count(HUGE_LINES)
        expect(fold).to_have_text(f"Deletes {HUGE_LINES:,} lines (hide them)")
        fold.click()
        expect(card.locator(".diff tr")).to_have_count(0)
        approve.click()
        expect(page.get_by_label("Run summary")).to_contain_text("Done in 2 steps.")
    assert server.sent("ApproveToolCall") == [{"callId": "h1", "approved": True}]
    assert page.page_errors == []


def test_pause_while_a_card_waits_is_pending_until_cancelled(page: Any, shot: Shot) -> None:
    with serving(FrameServer(script=recorded_run)) as server:
        _send(page, server, "Tag the meeting notes as reviewed")
        expect(page.locator(".approval.pending")).to_be_visible()
        page.get_by_role("button", name="Pause").click()
        cancel = page.get_by_role("button", name="Don't pause")
        expect(cancel).to_be_visible()
        pending = "Waiting for your approval · pauses before its next step"
        expect(page.locator(".working")).to_contain_text(pending)
        panel = page.get_by_role("complementary", name="This run")
        expect(panel).to_contain_text(pending)
        shot(page, "approvals-06-pause-pending")
        cancel.click()
        expect(page.get_by_role("button", name="Pause")).to_be_visible()
        expect(page.locator(".working")).not_to_contain_text("pauses")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_label("Run summary")).to_contain_text("Done in 3 steps.")
    assert server.pauses == 1
    assert len(server.sent("ResumeAgent")) == 1


def _elapsed(page: Any) -> str:
    return str(page.get_by_role("complementary", name="This run").locator(".elapsed").inner_text())


def test_a_run_the_restarted_server_does_not_know_is_shown_as_stopped(
    page: Any, shot: Shot
) -> None:
    with serving(FrameServer(script=waits_for_ever)) as server:
        _send(page, server, "Summarise everything")
        expect(page.locator(".working")).to_contain_text("Thinking (step 2)")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        server.restart()
        _connected(page)
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("Stopped: the server restarted.")
        expect(page.locator(".working")).to_have_count(0)
        expect(page.get_by_role("button", name="Stop")).to_have_count(0)
        expect(page.get_by_role("button", name="Pause")).to_have_count(0)
        expect(page.get_by_role("button", name="Send")).to_be_visible()
        panel = page.get_by_role("complementary", name="This run")
        expect(panel).to_contain_text("Stopped: the server restarted.")
        stopped_at = _elapsed(page)
        time.sleep(1.5)
        assert _elapsed(page) == stopped_at  # the timer stopped with the run
        shot(page, "approvals-07-server-restarted")
    assert server.sent("InterruptAgent") == []


def test_stop_says_why_when_the_server_no_longer_runs_the_run(page: Any, shot: Shot) -> None:
    """A server that does not say its start (no server_id) restarts: the page cannot tell, so
    the run looks alive until Stop, whose refusal is shown and ends the run on the page."""
    with serving(FrameServer(script=waits_for_ever, server_id=None)) as server:
        _send(page, server, "Summarise everything")
        expect(page.locator(".working")).to_contain_text("Thinking (step 2)")
        server.restart()
        _connected(page)
        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_role("alert")).to_contain_text("No matching agent run is active")
        expect(page.get_by_label("Run summary")).to_contain_text(
            "Stopped: the server was no longer running it."
        )
        expect(page.get_by_role("button", name="Send")).to_be_visible()
        shot(page, "approvals-08-stop-refused")
    assert [a["force"] for a in server.sent("InterruptAgent")] == [True]
