"""The agent view against the real server: a per-file approval (one note of a bulk change
unticked, so only the others change) and the run summary's Undo, which undoes the run's change
set and leaves the vault byte-for-byte as before. Screenshots go to test-artefacts/web/."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.real_server import real_server
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]
NOTE = "Reference/Concepts/Idempotency.md"
BULK = ScriptedCall(
    id="call_bulk",
    name="obsidian_vault_manager",
    arguments={
        "operation": "bulk_tag",
        "targets": [NOTE, "Home.md"],
        "metadata": {"tags": ["reviewed"]},
    },
)


# The first visible character of each line of a run summary (its list of notes left out): a
# character lower than the one before it by more than half a line begins a new line.
_LINE_STARTS = """(root) => {
  const starts = []; let top = null;
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement.closest('.changed')) continue;
    for (let i = 0; i < n.data.length; i++) {
      if (/\\s/.test(n.data[i])) continue;
      const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
      const box = r.getClientRects()[0];
      if (!box) continue;
      if (top === null || box.top > top + 8) starts.push(n.data[i]);
      top = box.top;
    }
  }
  return starts;
}"""


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".trash", ".obsidian")
    }


def test_approve_some_files_then_undo_the_run(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    before = _hashes(example_vault)
    home = (example_vault / "Home.md").read_bytes()
    turns = [ScriptedTurn(tool_calls=[BULK]), ScriptedTurn(text="Tagged the concept note.")]
    with real_server(example_vault, data_dir, turns) as server:
        page.goto(server.login_link())
        box = page.get_by_role("textbox", name="Message")
        box.fill("Tag the idempotency note and Home as reviewed")
        page.get_by_role("button", name="Send").click()
        approval = page.get_by_label(f"Approval: Tag {NOTE}, Home.md")
        expect(approval.get_by_role("checkbox", name=NOTE)).to_be_checked()
        expect(approval.locator(".diff")).to_have_count(2)
        approval.get_by_role("checkbox", name="Home.md").uncheck()
        shot(page, "undo-01-one-file-unticked")
        approval.get_by_role("button", name="Approve").click()
        summary = page.get_by_label("Run summary")
        expect(summary).to_contain_text("1 note changed")
        # The step says what happened: one changed, one left as it was.
        told = page.locator("summary", has_text="1 of 2 notes updated; 1 left as it was")
        expect(told).to_be_visible()
        assert "reviewed" in (example_vault / NOTE).read_text(encoding="utf-8")
        assert (example_vault / "Home.md").read_bytes() == home
        shot(page, "undo-02-run-done")
        summary.get_by_role("button", name="Undo").click()
        expect(summary.get_by_role("status")).to_have_text("Undone: restored 1 note")
        expect(summary.get_by_role("button", name="Undo")).to_have_count(0)
        # Said in the summary where the person clicked: no banner over the conversation.
        expect(page.locator(".banner")).to_have_count(0)
        expect(page.get_by_role("alert")).to_have_count(0)
        # The undone note is no longer a link to a changed note: it says it was undone.
        changed = summary.get_by_role("list", name="Notes changed")
        expect(changed).to_contain_text(f"{NOTE} (undone)")
        expect(changed.get_by_role("link")).to_have_count(0)
        shot(page, "undo-03-undone")
        # Narrow, the summary wraps: no line of it begins with a "·" separator.
        page.set_viewport_size({"width": 360, "height": 800})
        starts = summary.evaluate(_LINE_STARTS)
        shot(page, "undo-04-undone-narrow")
        assert len(starts) > 2, starts  # it did wrap
        assert "·" not in starts, starts
    assert _hashes(example_vault) == before
    assert page.page_errors == []
