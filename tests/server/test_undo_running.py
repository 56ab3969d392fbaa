"""Undoing an agent run that is still going, on a real uvicorn server with the built-in agent
against the scripted model server: UndoRun and UndoChangeSet (by id, by prefix, as ``last``) are
refused while the run waits for an approval, with a message that says to stop it first, and
nothing is written; once the run is stopped the same UndoRun undoes it."""

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

from .conftest import Live

NEW = "Inbox/Step one.md"
OLD = "Reference/Concepts/Idempotency.md"
CREATE = ScriptedCall(
    id="call_create",
    name="obsidian_vault_manager",
    arguments={"operation": "create_note", "target": NEW, "content": "first step\n"},
)
DELETE = ScriptedCall(
    id="call_delete",
    name="obsidian_vault_manager",
    arguments={"operation": "delete_note", "target": OLD, "confirmDestructive": True},
)


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Iterator[Live]:
    scripted = ScriptedModelServer(
        [
            ScriptedTurn(text="Creating it.", tool_calls=[CREATE]),
            ScriptedTurn(text="Now deleting.", tool_calls=[DELETE]),
            ScriptedTurn(text="Done."),
        ]
    ).start()
    client = openai.AsyncOpenAI(base_url=scripted.base_url, api_key="t", max_retries=0, timeout=10)
    try:
        yield live(
            vaults={"vault": vault},
            model=OpenAIChatModel(client, "scripted"),
            agent_config=AgentConfig(
                model="scripted",
                max_steps=5,
                approvals={
                    "obsidian_vault_manager.create_note": "allow",
                    "obsidian_vault_manager.delete_note": "ask",  # the run waits here
                },
            ),
        )
    finally:
        scripted.stop()


def _events(server: Live, conv: str) -> list[str]:
    with server.http() as c:
        body: dict[str, Any] = c.get(f"/conversations/{conv}", params={"vaultId": "vault"}).json()
    runs = body["runs"]
    return [e["event"]["kind"] for e in runs[-1]["events"]] if runs else []


def _wait_for(server: Live, conv: str, kind: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if kind in _events(server, conv):
            return
        time.sleep(0.1)
    raise AssertionError(f"no {kind} event within 15 s")


def test_a_run_still_going_is_not_undone_until_it_is_stopped(server: Live, vault: Path) -> None:
    started = server.rpc("StartAgent", {"goal": "Tidy up", "vaultId": "vault"})
    assert started["success"], started
    run_id, conv = started["result"]["runId"], started["result"]["conversationId"]
    _wait_for(server, conv, "approval_required")
    assert (vault / NEW).is_file()  # the first step is written; the run waits for the second
    history = server.rpc("ChangeHistory", {})["result"]["changeSets"]
    assert history[0]["id"] == run_id and history[0]["undoneBy"] is None

    for command, arguments in [
        ("UndoRun", {"runId": run_id}),
        ("UndoChangeSet", {"id": run_id}),
        ("UndoChangeSet", {"id": run_id[:8]}),
        ("UndoChangeSet", {"last": True}),
    ]:
        refused = server.rpc(command, arguments)
        assert refused["error"]["code"] == "request_refused", (command, refused)
        message = refused["error"]["message"]
        assert f"The agent run {run_id} is still going" in message, message
        assert "stop it first" in message and "InterruptAgent" in message
        assert (vault / NEW).is_file() and (vault / OLD).is_file()
    assert server.rpc("ChangeHistory", {})["result"]["changeSets"] == history  # no undo stored

    stopped = server.rpc("InterruptAgent", {"runId": run_id, "force": True})
    assert stopped["success"], stopped
    _wait_for(server, conv, "run_finished")
    undone = server.rpc("UndoRun", {"runId": run_id})
    assert undone["success"], undone
    assert undone["result"]["undone"] == run_id and NEW in undone["result"]["restored"]
    assert not (vault / NEW).exists() and (vault / OLD).is_file()
    after = server.rpc("ChangeHistory", {})["result"]["changeSets"]
    by_id = {s["id"]: s for s in after}
    assert by_id[run_id]["undoneBy"] == undone["result"]["changeSetId"]
