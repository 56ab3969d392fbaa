"""The live index in the server: notes saved on disk are found within a second, and read tool
calls do not walk the vault while the watcher is live (a real uvicorn server, a real watcher)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.server.conftest import Live
from vaultpilot.tools.session import VaultRuntime

# Audit hooks cannot be removed, so one hook is installed once and counts only while a test
# asks it to: every os.scandir (the vault walk's listing of a folder), from any thread.
_SCANS = {"on": False, "count": 0}
_GUARD = threading.Lock()


def _hook(event: str, _args: tuple[Any, ...]) -> None:
    if event == "os.scandir" and _SCANS["on"]:
        with _GUARD:
            _SCANS["count"] += 1


sys.addaudithook(_hook)


def _count_scans(fn: Callable[[], object]) -> int:
    with _GUARD:
        _SCANS["on"], _SCANS["count"] = True, 0
    try:
        fn()
    finally:
        _SCANS["on"] = False
    return _SCANS["count"]


def _search(server: Live, word: str) -> list[str]:
    args = {"queryType": "semantic_search", "query": word, "limit": 5}
    reply = server.rpc("obsidian_query_vault", args)
    assert reply["success"], reply.get("error")
    return [r["path"] for r in reply["result"]["results"]]


def _reads(server: Live) -> None:
    # (list_structure is left out: it lists the folders it shows, a few levels deep, by design.)
    with server.http() as c:
        for body in (
            {"queryType": "search_by_metadata", "filters": {"tags": ["project"]}},
            {"queryType": "semantic_search", "query": "rollback plan"},
            {"queryType": "recent_changes"},
        ):
            assert c.post("/tools/obsidian_query_vault", json=body).json()["success"]
        for ctx_type in ("read_note", "note_with_backlinks"):
            note = {"contextType": ctx_type, "target": "Home.md"}
            assert c.post("/tools/obsidian_get_context", json=note).json()["success"]


def test_a_note_saved_on_disk_is_found_within_a_second(
    live: Callable[..., Live], vault: Path
) -> None:
    server = live(vaults={"vault": vault})
    handle = server.app.state.vaultpilot.vaults.get("vault")
    assert handle.live()["state"] == "live"
    for n, word in enumerate(["zephyrquartz", "quillmarrow", "brackenfold"]):
        (vault / f"Saved {n}.md").write_text(f"# Saved\nA {word} appears.\n", encoding="utf-8")
        saved = time.monotonic()
        while word and not _search(server, word):
            assert time.monotonic() - saved < 1.0, f"'{word}' not found 1 s after the save"
            time.sleep(0.02)
        assert _search(server, word) == [f"Saved {n}.md"]
    # An edit in place (as Obsidian saves) and a delete follow too.
    (vault / "Saved 0.md").write_text("# Saved\nnow about lanternmoss\n", encoding="utf-8")
    (vault / "Saved 1.md").unlink()
    deadline = time.monotonic() + 1.0
    while _search(server, "lanternmoss") != ["Saved 0.md"] or _search(server, "quillmarrow"):
        assert time.monotonic() < deadline, "the edit or the delete was not seen within 1 s"
        time.sleep(0.02)
    assert _search(server, "zephyrquartz") == []


def test_read_calls_do_not_walk_the_vault_while_live(
    live: Callable[..., Live], vault: Path, data_dir: Path
) -> None:
    server = live(vaults={"vault": vault})
    handle = server.app.state.vaultpilot.vaults.get("vault")
    assert handle.live()["state"] == "live"
    _reads(server)  # warm up: the embedder's first load, connections
    assert _count_scans(lambda: _reads(server)) == 0
    # A write still syncs (it walks the vault), and what it wrote is found at once.
    note = {"FilePath": "Projects/Walked.md", "Content": "# W\nsolvent"}
    created = server.rpc("CreateNote", note)
    assert created["success"], created
    assert _search(server, "solvent") == ["Projects/Walked.md"]

    # The same reads on a runtime without a watcher walk the vault every time.
    other = VaultRuntime(vault, data_dir / "other" / "index.db", source="server", watch=False)
    try:
        other.open()
        assert other.live_info()["state"] == "off"
        args = {"queryType": "semantic_search", "query": "project"}
        walks = _count_scans(lambda: other.call_tool("obsidian_query_vault", args))
        assert walks > 0
    finally:
        other.close()
