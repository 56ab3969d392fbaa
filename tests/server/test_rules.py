"""The server holds the vault's rules from the config file it was started with (serve --config),
for its tools and its agent, whatever $VAULTPILOT_CONFIG says, and follows an edit of the file
while it runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Live


@pytest.mark.parametrize("read_workers", [0, 2])
def test_rules_come_from_the_servers_config_file(
    live: Callable[..., Live], vault: Path, tmp_path: Path, read_workers: int
) -> None:
    config = tmp_path / "served.toml"
    config.write_text('[rules]\ndeny = ["People"]\nread_only = ["Meetings"]\n', encoding="utf-8")
    server = live(vaults={"vault": vault}, config_path=config, read_workers=read_workers)
    readers = server.app.state.vaultpilot.vaults.get(None).readers
    _workers_ready(server, read_workers)  # reads go to the workers
    read = server.rpc("obsidian_get_context", {"contextType": "read_note", "target": "Marcus Feld"})
    assert not read["success"] and "deny" in read["error"]["message"]
    assert "oat flat white" not in str(read)
    found = server.rpc("obsidian_query_vault", {"queryType": "semantic_search", "query": "oat"})
    assert "People/" not in str(found) and "oat flat white" not in str(found)
    if readers is not None:
        assert readers.answered == 2
    change = {
        "operation": "append_note",
        "target": "Meetings/Sprint Retro 2025-10-24.md",
        "content": "- more\n",
    }
    before = (vault / change["target"]).read_bytes()
    written = server.rpc("obsidian_vault_manager", change)
    assert "read-only" in str(written) and (vault / change["target"]).read_bytes() == before
    # The specification's commands hold to the same rules as the tools.
    updated = server.rpc("UpdateNote", {"FilePath": change["target"], "Changes": "gone\n"})
    assert not updated["success"] and "read-only" in updated["error"]["message"]
    assert (vault / change["target"]).read_bytes() == before
    created = server.rpc("CreateNote", {"FilePath": "People/New friend.md", "Content": "hi\n"})
    assert not created["success"] and "kept from the agent" in created["error"]["message"]
    assert not (vault / "People" / "New friend.md").exists()
    (vault / "People" / "Marcus Feld.md").touch()  # the most recent note, and denied
    summary = server.rpc("GetVaultContext", {})["result"]["stateSummary"]
    assert "Marcus" not in summary and "People/" not in summary
    context = server.rpc("GetVaultContext", {})
    prompt = context["result"]["systemPrompt"]
    assert "Some notes and folders are hidden from you" in prompt and "People" not in prompt


def _workers_ready(server: Live, count: int) -> None:
    readers = server.app.state.vaultpilot.vaults.get(None).readers
    deadline = time.monotonic() + 30
    while readers is not None and readers.ready() < count:
        assert time.monotonic() < deadline, "the read workers did not start"
        time.sleep(0.05)


def _rewrite(config: Path, text: str) -> None:
    """Write the config file anew, so its stamp changes even within the clock's granularity."""
    before = config.stat().st_mtime_ns
    config.write_text(text, encoding="utf-8")
    os.utime(config, ns=(before + 10**9, before + 10**9))


@pytest.mark.parametrize("read_workers", [0, 2])
def test_a_rule_added_while_the_server_runs_holds_at_once(
    live: Callable[..., Live], vault: Path, tmp_path: Path, read_workers: int
) -> None:
    config = tmp_path / "served.toml"
    config.write_text("[rules]\n", encoding="utf-8")
    server = live(vaults={"vault": vault}, config_path=config, read_workers=read_workers)
    _workers_ready(server, read_workers)
    note = {"contextType": "read_note", "target": "Marcus Feld"}
    assert "oat flat white" in str(server.rpc("obsidian_get_context", note))
    _rewrite(config, '[rules]\ndeny = ["People"]\n')
    for _ in range(4):  # every worker, and the server itself, holds to the new rule
        read = server.rpc("obsidian_get_context", note)
        assert not read["success"] and "oat flat white" not in str(read)
    found = server.rpc("obsidian_query_vault", {"queryType": "semantic_search", "query": "oat"})
    assert "People/" not in str(found)
    # A file that no longer reads keeps the last good rules; a fixed one is followed again.
    _rewrite(config, "[rules\n")
    assert not server.rpc("obsidian_get_context", note)["success"]
    _rewrite(config, "[rules]\n")
    assert "oat flat white" in str(server.rpc("obsidian_get_context", note))
