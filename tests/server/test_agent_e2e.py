"""End to end: a real uvicorn server, real WebSocket clients, the built-in agent loop talking to
the scripted OpenAI-compatible model server through the official SDK.

Covers StartAgent (events streamed to every subscriber), the approval round trip (approve and
refuse), ToolOverride (a given result, and the tool run with other arguments), InterruptAgent
(while the model streams), and an external agent: spawned with the key in its environment, and
subscribed over the socket.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.openai_model import OpenAIChatModel
from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn
from vaultpilot.server.settings import AgentSettings

from .conftest import Live, command, is_event, is_reply, recv_json, recv_until, snapshot

NOTE = "Reference/Concepts/Idempotency.md"
DELETE = ScriptedCall(
    id="call_del",
    name="obsidian_vault_manager",
    arguments={"operation": "delete_note", "target": NOTE, "confirmDestructive": True},
)


@pytest.fixture
def scripted() -> Iterator[Callable[[list[ScriptedTurn]], ScriptedModelServer]]:
    servers: list[ScriptedModelServer] = []

    def start(turns: list[ScriptedTurn]) -> ScriptedModelServer:
        server = ScriptedModelServer(turns).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def agent_server(
    live: Callable[..., Live], vault: Path, scripted: Callable[..., ScriptedModelServer]
) -> Callable[[list[ScriptedTurn]], Live]:
    def start(turns: list[ScriptedTurn]) -> Live:
        model_server = scripted(turns)
        client = openai.AsyncOpenAI(
            base_url=model_server.base_url, api_key="test", max_retries=0, timeout=10
        )
        return live(
            vaults={"vault": vault},
            model=OpenAIChatModel(client, "scripted"),
            agent_config=AgentConfig(model="scripted", max_steps=5),
        )

    return start


def events(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["event"] for f in frames if f.get("type") == "event"]


def test_start_agent_streams_every_event_to_every_subscriber(
    agent_server: Callable[[list[ScriptedTurn]], Live],
) -> None:
    server = agent_server(
        [
            ScriptedTurn(
                reasoning="Look at the latest notes.",
                tool_calls=[
                    ScriptedCall(
                        id="call_1",
                        name="obsidian_get_context",
                        arguments={
                            "contextType": "read_note",
                            "target": NOTE,
                            "responseFormat": "concise",
                        },
                    )
                ],
            ),
            ScriptedTurn(text="Idempotency means a retry is safe."),
        ]
    )

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        async with server.ws() as ui, server.ws() as watcher:
            await recv_json(ui), await recv_json(watcher)  # hello
            start = command(
                "StartAgent", {"goal": "What is idempotency?", "vaultId": "vault"}, "s1"
            )
            await ui.send(json.dumps(start))
            ui_frames = await recv_until(ui, is_event("run_finished"))
            watcher_frames = await recv_until(watcher, is_event("run_finished"))
            reply = next(f for f in ui_frames if is_reply("s1")(f))
            return ui_frames, watcher_frames, reply

    ui_frames, watcher_frames, reply = asyncio.run(go())
    assert reply["success"] and reply["result"]["agent"] == "builtin"
    assert events(ui_frames) == events(watcher_frames)
    kinds = [e["kind"] for e in events(ui_frames)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "thought" in kinds and "tool_call" in kinds and "tool_result" in kinds
    assert "text_chunk" in kinds
    final = events(ui_frames)[-1]
    assert final["reason"] == "done" and final["text"] == "Idempotency means a retry is safe."
    event_frames = [f for f in ui_frames if f.get("type") == "event"]
    assert all(
        f["vaultId"] == "vault" and f["runId"] == reply["result"]["runId"] for f in event_frames
    )
    seqs = [f["seq"] for f in event_frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    snapshot("ws_agent_run_frames", [{**f} for f in ui_frames if f.get("type") != "reply"])

    context = server.rpc("GetVaultContext")["result"]
    assert context["currentGoal"] == "What is idempotency?"
    assert context["activeFiles"] == [NOTE]
    assert 'last run was "What is idempotency?"' in context["stateSummary"]


def test_approval_round_trip_over_the_socket(
    agent_server: Callable[[list[ScriptedTurn]], Live], vault: Path
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Deleted it.")])

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"}, "s1")))
            frames = await recv_until(ui, is_event("approval_required"))
            asked = frames[-1]["event"]
            assert asked["call_id"] == "call_del" and asked["operation"] == "delete_note"
            assert (vault / NOTE).exists()  # nothing ran before the answer
            await ui.send(
                json.dumps(
                    command("ApproveToolCall", {"callId": "call_del", "approved": True}, "a1")
                )
            )
            frames += await recv_until(ui, is_event("run_finished"))
            return frames

    frames = asyncio.run(go())
    answer = next(f for f in frames if is_reply("a1")(f))
    assert answer["result"] == {"callId": "call_del", "approved": True}
    resolved = next(e for e in events(frames) if e["kind"] == "approval_resolved")
    assert resolved == {
        "kind": "approval_resolved",
        "call_id": "call_del",
        "approved": True,
        "by": "user",
        "reason": "",
    }
    result = next(e for e in events(frames) if e["kind"] == "tool_result")
    assert result["success"] is True and result["source"] == "tool"
    assert not (vault / NOTE).exists() and (vault / ".trash" / "Idempotency.md").exists()
    snapshot(
        "ws_approval_frames",
        [
            f
            for f in frames
            if f.get("type") == "reply" or f["event"]["kind"].startswith("approval")
        ],
    )


def test_a_run_started_over_http_is_approved_only_from_a_socket(
    agent_server: Callable[[list[ScriptedTurn]], Live], vault: Path
) -> None:
    """A non-interactive client (plain HTTP) that starts a run cannot approve its steps over
    HTTP; the person's view (a socket) can."""
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Deleted it.")])

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with server.ws() as ui:
            await recv_json(ui)
            started = server.rpc("StartAgent", {"goal": "Delete the note"})
            assert started["success"], started
            await recv_until(ui, is_event("approval_required"))
            over_http = server.rpc("ApproveToolCall", {"callId": "call_del", "approved": True})
            assert (vault / NOTE).exists()  # still waiting
            yes = {"callId": "call_del", "approved": True}
            await ui.send(json.dumps(command("ApproveToolCall", yes, "a1")))
            return over_http, await recv_until(ui, is_event("run_finished"))

    over_http, frames = asyncio.run(go())
    assert over_http["success"] is False and over_http["error"]["code"] == "request_refused"
    assert "must be approved from the agent view" in over_http["error"]["message"]
    assert "started over HTTP" in over_http["error"]["message"]
    assert next(f for f in frames if is_reply("a1")(f))["success"] is True
    assert not (vault / NOTE).exists()


def test_a_refusal_reaches_the_model_and_nothing_changes(
    agent_server: Callable[[list[ScriptedTurn]], Live], vault: Path
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="I left it.")])

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            frames = await recv_until(ui, is_event("approval_required"))
            deny = {"callId": "call_del", "approved": False, "reason": "keep it"}
            await ui.send(json.dumps(command("ApproveToolCall", deny, "a1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    result = next(e for e in events(frames) if e["kind"] == "tool_result")
    assert result["source"] == "denied" and "keep it" in result["result"]["error"]
    assert (vault / NOTE).exists()


def test_tool_override_injects_a_result(
    agent_server: Callable[[list[ScriptedTurn]], Live], vault: Path
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="OK.")])
    injected = {"success": False, "message": "The user keeps this note."}

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            frames = await recv_until(ui, is_event("approval_required"))
            override = {"toolName": "obsidian_vault_manager", "result": injected}
            await ui.send(json.dumps(command("ToolOverride", override, "o1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    reply = next(f for f in frames if is_reply("o1")(f))
    assert reply["success"] and reply["result"]["callId"] == "call_del"
    result = next(e for e in events(frames) if e["kind"] == "tool_result")
    assert result["source"] == "override" and result["result"] == injected
    resolved = next(e for e in events(frames) if e["kind"] == "approval_resolved")
    assert resolved["by"] == "override"
    assert (vault / NOTE).exists()


def test_tool_override_runs_the_tool_with_the_users_arguments(
    agent_server: Callable[[list[ScriptedTurn]], Live], vault: Path
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Archived.")])
    instead = {"operation": "move_note", "target": NOTE, "destination": "Archive"}

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            frames = await recv_until(ui, is_event("approval_required"))
            override = {
                "toolName": "obsidian_vault_manager",
                "arguments": instead,
                "callId": "call_del",
            }
            await ui.send(json.dumps(command("ToolOverride", override, "o1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    result = next(e for e in events(frames) if e["kind"] == "tool_result")
    assert result["source"] == "override" and result["result"]["operation"] == "move_note"
    assert (vault / "Archive" / "Idempotency.md").exists() and not (vault / NOTE).exists()


def test_interrupt_agent_stops_a_streaming_model(
    agent_server: Callable[[list[ScriptedTurn]], Live],
) -> None:
    server = agent_server(
        [ScriptedTurn(text="Let me think about this for a long while", stall_after=3)]
    )

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Think"})))
            frames = await recv_until(ui, is_event("text_chunk"))
            await ui.send(json.dumps(command("InterruptAgent", {"force": True}, "i1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    reply = next(f for f in frames if is_reply("i1")(f))
    assert reply["success"] and len(reply["result"]["interrupted"]) == 1
    final = events(frames)[-1]
    assert final["reason"] == "interrupted"
    # The vault is free again: a new run may start.
    again = server.rpc("InterruptAgent", {"force": True})
    assert again["error"]["code"] == "not_found"


def test_one_run_per_vault_at_a_time(agent_server: Callable[[list[ScriptedTurn]], Live]) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="x")])

    async def go() -> dict[str, Any]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "one"})))
            await recv_until(ui, is_event("approval_required"))
            await ui.send(json.dumps(command("StartAgent", {"goal": "two"}, "s2")))
            frames = await recv_until(ui, is_reply("s2"))
            await ui.send(json.dumps(command("InterruptAgent", {"force": True}, "i1")))
            await recv_until(ui, is_event("run_finished"))
            return frames[-1]

    second = asyncio.run(go())
    assert second["error"]["code"] == "request_refused"
    assert "already working on vault 'vault'" in second["error"]["message"]


def test_a_hundred_subscribers_receive_every_event(
    agent_server: Callable[[list[ScriptedTurn]], Live],
) -> None:
    server = agent_server(
        [
            ScriptedTurn(
                tool_calls=[
                    ScriptedCall(
                        name="obsidian_query_vault",
                        arguments={"queryType": "recent_changes", "limit": 3},
                    )
                ]
            ),
            ScriptedTurn(text="Here are the three most recent notes, in order of change."),
        ]
    )

    async def go() -> list[list[dict[str, Any]]]:
        sockets = [await server.ws().__aenter__() for _ in range(100)]
        try:
            for ws in sockets:
                await recv_json(ws)
            await sockets[0].send(json.dumps(command("StartAgent", {"goal": "recent"})))
            received = await asyncio.gather(
                *(recv_until(ws, is_event("run_finished")) for ws in sockets)
            )
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))
        return [events(r) for r in received]

    received = asyncio.run(go())
    assert len(received) == 100
    assert all(r == received[0] for r in received)
    assert len(received[0]) >= 10 and received[0][-1]["reason"] == "done"


AGENT_PROGRAM = """
import os, httpx
url, key = os.environ["VAULTPILOT_SERVER_URL"], os.environ["VAULTPILOT_SERVER_KEY"]
leaked = [k for k in os.environ if k.startswith("SECRET_")]
body = {"id": "x1", "commandName": "ReportStatus", "timestamp": 0,
        "arguments": {"Status": "done", "VaultID": os.environ["VAULTPILOT_VAULT_ID"],
                      "Message": os.environ["VAULTPILOT_GOAL"] + " | leaked=" + ",".join(leaked)}}
httpx.post(url + "/rpc", json=body, headers={"Authorization": "Bearer " + key}, trust_env=False)
"""


def test_a_spawned_external_agent_gets_the_key_and_calls_back(
    live: Callable[..., Live], vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-pass")
    server = live(
        vaults={"vault": vault},
        agent=AgentSettings(command=(sys.executable, "-c", AGENT_PROGRAM)),
    )

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Tidy up"}, "s1")))
            return await recv_until(
                ui, lambda f: f.get("type") == "status" and f["status"] == "done"
            )

    frames = asyncio.run(go())
    reply = next(f for f in frames if is_reply("s1")(f))
    assert reply["result"]["agent"] == "external"
    status = frames[-1]
    assert status["message"] == "Tidy up | leaked=" and status["vaultId"] == "vault"


def test_a_subscribed_external_agent_receives_the_ui_commands(
    live: Callable[..., Live], vault: Path
) -> None:
    server = live(vaults={"vault": vault})

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as agent, server.ws() as ui:
            await recv_json(agent), await recv_json(ui)
            await agent.send(json.dumps(command("Subscribe", {"role": "agent"}, "sub")))
            await recv_until(agent, is_reply("sub"))
            await ui.send(json.dumps(command("StartAgent", {"goal": "Plan the week"}, "s1")))
            start = await recv_until(agent, lambda f: f.get("type") == "command")
            override = {
                "toolName": "obsidian_query_vault",
                "arguments": {"queryType": "recent_changes"},
            }
            await ui.send(json.dumps(command("ToolOverride", override, "o1")))
            forwarded = await recv_until(agent, lambda f: f.get("type") == "command")
            await ui.send(json.dumps(command("InterruptAgent", {"force": True}, "i1")))
            stop = await recv_until(agent, lambda f: f.get("type") == "command")
            await recv_until(ui, is_reply("i1"))
            return [start[-1], forwarded[-1], stop[-1]]

    start, override, stop = asyncio.run(go())
    assert start["commandName"] == "StartAgent"
    assert (
        start["arguments"]["goal"] == "Plan the week" and start["arguments"]["vaultId"] == "vault"
    )
    assert override["commandName"] == "ToolOverride"
    assert override["arguments"]["toolName"] == "obsidian_query_vault"
    assert stop["commandName"] == "InterruptAgent" and stop["arguments"]["force"] is True
    snapshot("ws_external_agent_commands", [start, override, stop])


def test_an_agent_program_that_cannot_start_says_what_to_check(
    live: Callable[..., Live], vault: Path, tmp_path: Path
) -> None:
    program = tmp_path / "not-a-program"
    program.write_text("plain text\n")  # exists, but may not be run
    server = live(vaults={"vault": vault}, agent=AgentSettings(command=(str(program),)))
    for _ in range(2):  # the failed start left no run behind: the vault is free again
        reply = server.rpc("StartAgent", {"goal": "Tidy up"})
        assert reply["success"] is False and reply["error"]["code"] == "setup_required"
        assert reply["error"]["message"] == (
            f"Could not start the agent program '{program}': Permission denied. "
            "Check [server.agent] command in the config file."
        )
