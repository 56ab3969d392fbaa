"""chat keeps the index live: a note saved on disk during the session is found without a scan."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.server.test_live import _count_scans
from vaultpilot.cli.agent_session import open_session
from vaultpilot.tools import call_tool


@pytest.fixture
def model_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("VAULTPILOT_MODEL", "scripted")
    monkeypatch.setenv("VAULTPILOT_BASE_URL", "http://127.0.0.1:9/v1")  # never called here
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


@pytest.mark.usefixtures("model_env")
def test_a_note_saved_during_chat_is_found_without_a_scan(
    example_vault: Path, data_dir: Path
) -> None:
    flags = {"model": None, "base_url": None, "max_steps": None}
    with open_session(str(example_vault), str(data_dir), yes=False, flags=flags, live=True) as s:
        (example_vault / "Saved while chatting.md").write_text(
            "# Saved while chatting\n\nThe zyxwvut plan.\n", encoding="utf-8"
        )
        deadline = time.monotonic() + 5
        found: list[str] = []
        while time.monotonic() < deadline and not found:
            # Reads skip the vault walk while the watcher is live; the watcher brings the note in.
            out = call_tool(
                s.ctx, "obsidian_query_vault", {"queryType": "semantic_search", "query": "zyxwvut"}
            )
            found = [r["path"] for r in out.get("results", [])]
            time.sleep(0.05)
        assert found == ["Saved while chatting.md"]
        # And the agent's reads walk no folder of the vault (the watcher keeps the index).
        read = {"contextType": "read_note", "target": "Saved while chatting"}
        assert _count_scans(lambda: call_tool(s.ctx, "obsidian_get_context", read)) == 0
    # Without the watcher (ask, one shot), a read syncs first: it walks the vault.
    with open_session(str(example_vault), str(data_dir), yes=False, flags=flags) as s:
        assert _count_scans(lambda: call_tool(s.ctx, "obsidian_get_context", read)) > 0
