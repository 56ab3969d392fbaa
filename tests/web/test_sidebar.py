"""The sidebar against the REAL server (``create_app`` under uvicorn over a copy of the example
vault): a search hit whose note was deleted or moved since the search says so in a person's words
(not the tool's advice to the model), leaves the list, and the search runs again; while another
process holds the embedding lock, the coverage block says who embeds as information, not as an
error; the preview's headings are never smaller than its text. Screenshots go to
test-artefacts/web/sidebar-*.png."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.real_server import RealServer, real_server, settings_for
from vaultpilot.index.background import EmbedLock

pytest.importorskip("playwright", reason="playwright is not installed (make test installs it)")
from playwright.sync_api import expect

Shot = Callable[[Any, str], Path]
NOTE = "Reference/Concepts/Idempotency.md"
MOVED = "Archive/Idempotency.md"


def _sign_in(page: Any, server: RealServer) -> None:
    page.goto(server.login_link())
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()


def _search_paths(server: RealServer, query: str) -> list[str]:
    """The paths semantic_search returns now, asked over /rpc the way the sidebar asks."""
    command = {
        "id": "probe",
        "commandName": "obsidian_query_vault",
        "arguments": {"queryType": "semantic_search", "query": query, "limit": 10},
        "timestamp": time.time() * 1000,
    }
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:
        reply = c.post("/rpc", json=command, headers={"Authorization": f"Bearer {server.key}"})
    reply.raise_for_status()
    return [r["path"] for r in reply.json()["result"]["results"]]


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


def test_a_hit_deleted_since_the_search_says_so_and_leaves_the_list(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    with real_server(example_vault, data_dir, None) as server:
        _sign_in(page, server)
        page.get_by_role("searchbox", name="Search the vault").fill("Idempotency")
        hit = page.get_by_role("button", name=f"Idempotency {NOTE}")
        expect(hit).to_be_visible()
        (example_vault / NOTE).unlink()
        hit.click()
        notice = page.locator(".search").get_by_role("status")
        expect(notice).to_have_text(
            "“Idempotency” was moved or deleted since the search; searching again."
        )
        expect(page.get_by_role("dialog")).to_have_count(0)
        expect(page.locator(".hits")).not_to_contain_text(NOTE)
        # The tool's advice is for the model: none of it reaches the person.
        expect(page.locator("body")).not_to_contain_text("obsidian_query_vault")
        expect(page.locator("body")).not_to_contain_text("doesn't exist")
        expect(page.get_by_role("searchbox", name="Search the vault")).to_be_focused()
        shot(page, "sidebar-01-hit-deleted")
        # New words: a new search, and the notice goes.
        page.get_by_role("searchbox", name="Search the vault").fill("Zettelkasten")
        expect(page.get_by_role("button", name="Zettelkasten Reference/Concepts")).to_be_visible()
        expect(notice).to_have_text("")
    assert page.page_errors == []


def test_a_hit_moved_since_the_search_comes_back_under_its_new_path(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    with real_server(example_vault, data_dir, None) as server:
        _sign_in(page, server)
        page.get_by_role("searchbox", name="Search the vault").fill("Idempotency")
        stale = page.get_by_role("button", name=f"Idempotency {NOTE}")
        expect(stale).to_be_visible()
        (example_vault / MOVED).parent.mkdir(exist_ok=True)
        (example_vault / NOTE).rename(example_vault / MOVED)
        _wait_for(lambda: MOVED in _search_paths(server, "Idempotency"), "the index saw the move")
        stale.click()
        expect(page.locator(".search").get_by_role("status")).to_contain_text(
            "was moved or deleted since the search"
        )
        moved = page.get_by_role("button", name=f"Idempotency {MOVED}")
        expect(moved).to_be_visible()  # the search ran again
        expect(page.locator(".hits")).not_to_contain_text(NOTE)
        shot(page, "sidebar-02-hit-moved")
        moved.click()
        expect(page.get_by_role("dialog", name=f"Preview of {MOVED}")).to_contain_text("retry")
    assert page.page_errors == []


def test_another_process_embedding_is_information_not_an_error(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    db = settings_for(example_vault, data_dir).index_db("vault")
    db.parent.mkdir(parents=True, exist_ok=True)
    holder = EmbedLock(db, "vaultpilot index")  # exclusive per open file: as another process
    assert holder.acquire()
    try:
        with real_server(example_vault, data_dir, None, background_embedding=True) as server:
            with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:

                def busy() -> bool:
                    auth = {"Authorization": f"Bearer {server.key}"}
                    vaults = c.get("/vaults", headers=auth).json()
                    return bool(vaults[0]["embedding"]["state"] == "busy")

                _wait_for(busy, "the server's embedder finding the lock held")
            _sign_in(page, server)
            coverage = page.get_by_label("Embedding coverage")
            expect(coverage).to_contain_text(
                f"vaultpilot index (pid {os.getpid()}) is embedding; this server follows"
            )
            expect(coverage.locator("code")).to_have_text("vaultpilot index")
            expect(coverage.locator(".warn")).to_have_count(0)
            # In the block's muted colour, as the rest of the coverage figures.
            said, block = coverage.locator(".embed-busy").evaluate(
                "(e) => [getComputedStyle(e).color, getComputedStyle(e.parentElement).color]"
            )
            assert said == block, (said, block)
            shot(page, "sidebar-03-another-process-embeds")
    finally:
        holder.release()
    assert page.page_errors == []


def test_preview_headings_are_never_smaller_than_its_text(
    page: Any, shot: Shot, example_vault: Path, data_dir: Path
) -> None:
    levels = "\n\n".join(f"{'#' * n} Level {n}\n\nText under level {n}." for n in range(1, 7))
    (example_vault / "Inbox").mkdir(exist_ok=True)
    (example_vault / "Inbox" / "Headings.md").write_text(levels + "\n", encoding="utf-8")
    with real_server(example_vault, data_dir, None) as server:
        _sign_in(page, server)
        page.get_by_role("searchbox", name="Search the vault").fill("Headings")
        page.get_by_role("button", name="Headings Inbox/Headings.md").click()
        preview = page.get_by_role("dialog", name="Preview of Inbox/Headings.md")
        expect(preview).to_contain_text("Level 6")
        sizes = preview.locator(".md").evaluate(
            "(md) => [...md.children].map((e) => [e.tagName, e.textContent,"
            " parseFloat(getComputedStyle(e).fontSize)])"
        )
        shot(page, "sidebar-04-preview-headings")
    text = [size for tag, _, size in sizes if tag == "P"]
    headings = [(words, size) for tag, words, size in sizes if tag != "P"]
    assert len(headings) == 6 and text, sizes
    assert all(size >= max(text) for _, size in headings), sizes
    # Deeper levels are no larger than shallower ones.
    assert [s for _, s in headings] == sorted((s for _, s in headings), reverse=True), sizes
