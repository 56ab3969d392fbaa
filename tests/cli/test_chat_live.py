"""chat keeps the index live: a note saved on disk during the session is found without a scan."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.semantic.test_vectors import _Embeddings
from tests.server.test_live import _count_scans
from vaultpilot.cli.agent_session import open_session
from vaultpilot.index.background import lock_holder
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


class _SlowEmbeddings(_Embeddings):
    """The OpenAI-compatible /v1/embeddings of tests/semantic, answering once ``gate`` is set."""

    gate: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        self.gate.wait(10)
        super().do_POST()


@pytest.fixture
def slow_embeddings(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    _SlowEmbeddings.gate = threading.Event()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowEmbeddings)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    monkeypatch.setenv("VAULTPILOT_EMBEDDINGS", "openai")
    monkeypatch.setenv("VAULTPILOT_EMBEDDINGS_BASE_URL", f"http://127.0.0.1:{httpd.server_port}/v1")
    try:
        yield _SlowEmbeddings.gate
    finally:
        _SlowEmbeddings.gate.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.usefixtures("model_env")
def test_chat_embedding_names_itself_to_other_processes(
    example_vault: Path, data_dir: Path, slow_embeddings: threading.Event
) -> None:
    flags = {"model": None, "base_url": None, "max_steps": None}
    with open_session(
        str(example_vault), str(data_dir), yes=False, flags=flags, live=True, embed=True
    ) as s:
        deadline = time.monotonic() + 10
        holder = lock_holder(s.db_path)
        while holder is None:  # the embedder takes its lock when its first pass starts
            assert time.monotonic() < deadline
            time.sleep(0.02)
            holder = lock_holder(s.db_path)
        # What `vaultpilot status` or `vaultpilot embed` in another process reports.
        assert holder == f"pid {os.getpid()}, vaultpilot chat"
        slow_embeddings.set()
