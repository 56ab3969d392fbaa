"""A stored conversation read back for the agent view (``GET /conversations/{id}``) on a real
uvicorn server, a run of the built-in agent against the scripted model server: each run's
message, events and change set, the change set marked undone once UndoRun has undone it, its
files marked gone when they no longer exist; the wire shape snapshot-pinned; an unknown id or
another vault's conversation is a 404 that says what to do. ``GET /model-setup`` names the config
file the server reads."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.openai_model import OpenAIChatModel
from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn

from .conftest import Live, snapshot

NOTE = "Reference/Concepts/Idempotency.md"
MOVE = ScriptedCall(
    id="call_move",
    name="obsidian_vault_manager",
    arguments={"operation": "move_note", "target": NOTE, "destination": "Archive"},
)
GOAL = "Archive the idempotency note"


@pytest.fixture
def server(live: Callable[..., Live], vault: Path, tmp_path: Path) -> Iterator[Live]:
    scripted = ScriptedModelServer(
        [ScriptedTurn(text="Moving it.", tool_calls=[MOVE]), ScriptedTurn(text="Archived.")]
    ).start()
    other = tmp_path / "other"
    other.mkdir()
    (other / "Note.md").write_text("# Other\n", encoding="utf-8")
    client = openai.AsyncOpenAI(base_url=scripted.base_url, api_key="t", max_retries=0, timeout=10)
    try:
        yield live(
            vaults={"vault": vault, "other": other},
            model=OpenAIChatModel(client, "scripted"),
            # Started over HTTP, a run has nobody to ask: the move is allowed outright here.
            agent_config=AgentConfig(
                model="scripted",
                max_steps=5,
                approvals={"obsidian_vault_manager.move_note": "allow"},
            ),
        )
    finally:
        scripted.stop()


def _transcript(server: Live, conv: str, vault: str = "vault") -> tuple[int, dict[str, Any]]:
    with server.http() as c:
        reply = c.get(f"/conversations/{conv}", params={"vaultId": vault})
    body: dict[str, Any] = reply.json()
    return reply.status_code, body


def _finished(server: Live, conv: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        status, body = _transcript(server, conv)
        assert status == 200, body
        runs = body["runs"]
        if runs and runs[-1]["events"][-1]["event"]["kind"] == "run_finished":
            return body
        time.sleep(0.1)
    raise AssertionError("the run did not finish within 15 s")


def test_a_finished_run_reads_back_with_its_change_set_then_undone(
    server: Live, vault: Path
) -> None:
    started = server.rpc("StartAgent", {"goal": GOAL, "vaultId": "vault"})
    assert started["success"], started
    run_id = started["result"]["runId"]
    conv = started["result"]["conversationId"]
    body = _finished(server, conv)
    assert body["id"] == conv and body["title"] == GOAL
    (run,) = body["runs"]
    assert run["runId"] == run_id and run["goal"] == GOAL
    kinds = [e["event"]["kind"] for e in run["events"]]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "tool_call" in kinds and "tool_result" in kinds
    assert "message" not in kinds  # the history is kept apart, not repeated as events
    answer = [e["event"]["text"] for e in run["events"] if e["event"]["kind"] == "text_chunk"]
    assert answer == ["Moving it.", "Archived."]  # streamed chunks merged, one per step
    change = run["changeSet"]
    assert change["id"] == run_id and change["undoneBy"] is None
    moved = change["files"][0]
    assert (moved["kind"], moved["from"], moved["to"]) == ("move", NOTE, "Archive/Idempotency.md")
    assert moved["exists"] is True
    snapshot("http_conversation_transcript", {**body, "id": "<conversation>", "updated": "<ms>"})

    undone = server.rpc("UndoRun", {"runId": run_id})
    assert undone["success"], undone
    status, after = _transcript(server, conv)
    assert status == 200
    change = after["runs"][0]["changeSet"]
    assert change["undoneBy"] == undone["result"]["changeSetId"]
    assert change["files"][0]["exists"] is False  # moved back: the archive path is gone
    assert (vault / NOTE).is_file()


def test_unknown_or_foreign_conversations_are_not_found(server: Live) -> None:
    status, body = _transcript(server, "nosuchconversation")
    assert status == 404 and body["error"]["code"] == "not_found", body
    assert "vaultpilot chat --list" in body["error"]["message"]
    started = server.rpc("StartAgent", {"goal": GOAL, "vaultId": "vault"})
    conv = started["result"]["conversationId"]
    _finished(server, conv)
    status, body = _transcript(server, conv, vault="other")
    assert status == 404 and body["error"]["code"] == "not_found", body
    assert "GET /conversations?vaultId=" in body["error"]["message"]
    status, body = _transcript(server, conv, vault="nosuchvault")
    assert status == 404 and "nosuchvault" in body["error"]["message"], body


def test_model_setup_names_the_model_and_the_config_file(
    live: Callable[..., Live], vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "elsewhere" / "config.toml"
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(config))
    server = live(vaults={"vault": vault})
    with server.http() as c:
        reply = c.get("/model-setup")
    assert reply.status_code == 200
    assert reply.json() == {"model": None, "configPath": str(config)}
