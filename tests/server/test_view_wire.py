"""What the agent view needs from the wire, against a real server and the scripted model server:
hello's model and commands, the spec-shaped ``{type, data}`` frames (snapshot-pinned; text
before tool calls is a thought), the backlog a socket gets mid-run, pause and resume, per-file
approval (a subset of a bulk change or of a move's link rewrites; a single-note change approved
whole), and stored conversations listed and continued."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn
from vaultpilot.wording import plural

from . import test_agent_e2e as e2e
from .conftest import Live, command, is_event, is_reply, recv_json, recv_until, snapshot

DELETE, NOTE = e2e.DELETE, e2e.NOTE
agent_server = e2e.agent_server  # the fixtures, shared
scripted = e2e.scripted

READ = ScriptedCall(
    id="call_read",
    name="obsidian_get_context",
    arguments={"contextType": "read_note", "target": NOTE, "responseFormat": "concise"},
)
Start = Callable[[list[ScriptedTurn]], Live]


def _spec_done(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "run_finished"


def test_hello_names_the_model_and_the_commands(
    agent_server: Start, live: Any, vault: Path
) -> None:
    server = agent_server([ScriptedTurn(text="x")])
    bare = live(vaults={"vault": vault})

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with server.ws() as a, bare.ws() as b:
            return await recv_json(a), await recv_json(b)

    with_model, without = asyncio.run(go())
    assert with_model["model"] == "scripted" and without["model"] is None
    assert {"StartAgent", "InterruptAgent", "ResumeAgent", "ApproveToolCall"} <= set(
        with_model["commands"]
    )
    assert {"ChangeHistory", "ShowChangeSet", "UndoChangeSet", "UndoRun"} <= set(
        with_model["commands"]
    )
    assert with_model["server_id"] != without["server_id"]


def test_spec_format_frames_and_text_before_tool_calls_is_a_thought(agent_server: Start) -> None:
    server = agent_server(
        [
            ScriptedTurn(reasoning="The note is named.", text="Let me read it.", tool_calls=[READ]),
            ScriptedTurn(text="Idempotency means a retry is safe."),
        ]
    )

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with server.ws() as spec, server.ws() as frames:
            await recv_json(spec), await recv_json(frames)
            await spec.send(json.dumps(command("Subscribe", {"format": "spec"}, "sub")))
            await recv_until(spec, is_reply("sub"))
            await spec.send(json.dumps(command("StartAgent", {"goal": "What is idempotency?"})))
            got = await recv_until(spec, _spec_done)
            plain = await recv_until(frames, is_event("run_finished"))
            return got, plain

    got, plain = asyncio.run(go())
    shaped = [f for f in got if f.get("type") not in ("reply",)]
    assert all(set(f) == {"type", "data", "runId", "vaultId", "seq"} for f in shaped)
    types = [f["type"] for f in shaped]
    thoughts = [f["data"] for f in shaped if f["type"] == "thought"]
    reasoning = "".join(t["text"] for t in thoughts if "source" not in t)  # streamed live
    assert reasoning == "The note is named."
    assert [t["text"] for t in thoughts if t.get("source") == "text"] == ["Let me read it."]
    texts = [f["data"]["text"] for f in shaped if f["type"] == "text_chunk"]
    assert texts == ["Idempotency means a retry is safe."]
    assert types.index("tool_call") < types.index("tool_result") < types.index("text_chunk")
    # The default format still streams the same text as text_chunk events.
    plain_text = "".join(
        f["event"]["text"] for f in plain if is_event("text_chunk")(f) and f["event"]["step"] == 1
    )
    assert plain_text == "Let me read it."
    snapshot("ws_spec_frames", shaped)


def test_a_socket_that_connects_mid_run_gets_the_run_so_far(agent_server: Start) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Deleted.")])

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            live_frames = await recv_until(ui, is_event("approval_required"))
            async with server.ws() as late:
                hello = await recv_json(late)
                backlog = await recv_until(late, is_event("approval_required"))
                await late.send(json.dumps(command("Subscribe", {"since": 0}, "again")))
                again = await recv_until(late, is_reply("again"))
                approve = {"callId": "call_del", "approved": True}
                await late.send(json.dumps(command("ApproveToolCall", approve)))
                await recv_until(late, is_event("run_finished"))
            return [hello, *backlog], live_frames, again

    backlog, live_frames, again = asyncio.run(go())
    assert backlog[0]["type"] == "hello"
    events = [f for f in live_frames if f.get("type") == "event"]
    assert backlog[1:] == events  # the same frames, same seq
    assert [f for f in again if f.get("type") == "event"] == events
    assert server.app.state.vaultpilot.hub.backlog() == []  # dropped when the run ended


def test_interrupt_without_force_pauses_at_the_next_step_and_resume_continues(
    agent_server: Start,
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Deleted.")])

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            frames = await recv_until(ui, is_event("approval_required"))
            await ui.send(json.dumps(command("InterruptAgent", {"force": False}, "p1")))
            frames += await recv_until(ui, is_reply("p1"))
            approve = {"callId": "call_del", "approved": True}
            await ui.send(json.dumps(command("ApproveToolCall", approve, "a1")))

            def paused(f: dict[str, Any]) -> bool:
                return is_event("status")(f) and f["event"]["message"].startswith("Paused")

            frames += await recv_until(ui, paused)
            # Paused: nothing more comes until ResumeAgent.
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(ui.recv(), 0.5)
            await ui.send(json.dumps(command("ResumeAgent", {}, "r1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    pause = next(f for f in frames if is_reply("p1")(f))
    resume = next(f for f in frames if is_reply("r1")(f))
    assert pause["success"] and pause["result"]["force"] is False
    assert resume["success"] and resume["result"]["resumed"] == pause["result"]["interrupted"]
    messages = [f["event"]["message"] for f in frames if is_event("status")(f)]
    assert "Paused before step 2: send ResumeAgent to continue." in messages
    assert "Resumed" in messages
    final = next(f["event"] for f in frames if is_event("run_finished")(f))
    assert final["reason"] == "done" and final["text"] == "Deleted."


def test_a_single_note_change_is_approved_whole(agent_server: Start) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[DELETE]), ScriptedTurn(text="Done.")])

    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
            frames = await recv_until(ui, is_event("approval_required"))
            for cid, files in (("f1", ["Other.md"]), ("f3", [NOTE])):
                args = {"callId": "call_del", "approved": True, "files": files}
                await ui.send(json.dumps(command("ApproveToolCall", args, cid)))
                frames += await recv_until(ui, is_reply(cid))
            return frames + await recv_until(ui, is_event("run_finished"))

    frames = asyncio.run(go())
    asked = next(f["event"] for f in frames if is_event("approval_required")(f))
    assert [d["path"] for d in asked["diffs"]] == [NOTE]  # a delete carries its diff now
    assert asked["diffs"][0]["to"] is None and asked["diffs"][0]["diff"].startswith(f"--- a/{NOTE}")
    other, whole = (next(f for f in frames if is_reply(c)(f)) for c in ("f1", "f3"))
    assert other["error"]["code"] == "invalid_argument"
    assert f"does not change Other.md; it changes {NOTE}" in other["error"]["message"]
    assert whole["success"]
    result = next(f["event"] for f in frames if is_event("tool_result")(f))
    assert result["success"], result


BULK_ARGUMENTS: dict[str, Any] = {
    "operation": "bulk_tag",
    "targets": [NOTE, "Home.md", "Inbox.md"],
    "metadata": {"tags": ["reviewed"]},
}
BULK = ScriptedCall(id="call_bulk", name="obsidian_vault_manager", arguments=BULK_ARGUMENTS)
MOVE = ScriptedCall(
    id="call_move",
    name="obsidian_vault_manager",
    arguments={"operation": "move_note", "target": NOTE, "destination": "Elsewhere/Renamed.md"},
)


def _approve_with(server: Live, call_id: str, files: list[str]) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", {"goal": "Do it"})))
            frames = await recv_until(ui, is_event("approval_required"))
            asked = next(f["event"] for f in frames if is_event("approval_required")(f))
            chosen = [p for p in files if p in {d["path"] for d in asked["diffs"]}]
            args = {"callId": call_id, "approved": True, "files": chosen}
            await ui.send(json.dumps(command("ApproveToolCall", args, "a1")))
            return frames + await recv_until(ui, is_event("run_finished"))

    return asyncio.run(go())


def test_approving_some_notes_of_a_bulk_change(agent_server: Start, vault: Path) -> None:
    home = (vault / "Home.md").read_bytes()
    server = agent_server([ScriptedTurn(tool_calls=[BULK]), ScriptedTurn(text="Tagged.")])
    frames = _approve_with(server, "call_bulk", [NOTE, "Inbox.md"])
    asked = next(f["event"] for f in frames if is_event("approval_required")(f))
    assert [d["path"] for d in asked["diffs"]] == [NOTE, "Home.md", "Inbox.md"]
    reply = next(f for f in frames if is_reply("a1")(f))
    assert reply["success"], reply
    result = next(f["event"] for f in frames if is_event("tool_result")(f))
    assert result["success"] and result["result"]["affectedPaths"] == [NOTE, "Inbox.md"]
    assert any("not approved): Home.md" in w for w in result["result"]["warnings"])
    assert (vault / "Home.md").read_bytes() == home
    assert "reviewed" in (vault / NOTE).read_text(encoding="utf-8")


def test_a_move_whose_link_rewrites_are_refused_still_moves(
    agent_server: Start, vault: Path
) -> None:
    server = agent_server([ScriptedTurn(tool_calls=[MOVE]), ScriptedTurn(text="Moved.")])
    frames = _approve_with(server, "call_move", ["Elsewhere/Renamed.md"])
    asked = next(f["event"] for f in frames if is_event("approval_required")(f))
    others = [d["path"] for d in asked["diffs"]][1:]
    assert asked["diffs"][0]["from"] == NOTE and others, asked["diffs"]
    result = next(f["event"] for f in frames if is_event("tool_result")(f))
    assert result["success"], result
    assert (vault / "Elsewhere/Renamed.md").exists() and not (vault / NOTE).exists()
    assert (
        f"links in {plural(len(others), 'note')} were left unchanged"
        in (result["result"]["message"])
    )


def test_approving_no_file_refuses_the_call(agent_server: Start, vault: Path) -> None:
    before = (vault / NOTE).read_bytes()
    server = agent_server([ScriptedTurn(tool_calls=[BULK]), ScriptedTurn(text="Not done.")])
    frames = _approve_with(server, "call_bulk", [])
    resolved = next(f["event"] for f in frames if is_event("approval_resolved")(f))
    assert resolved["approved"] is False
    result = next(f["event"] for f in frames if is_event("tool_result")(f))
    assert result["success"] is False and "no file of the change was approved" in str(result)
    assert (vault / NOTE).read_bytes() == before


def test_conversations_are_listed_and_continued(
    live: Callable[..., Live], vault: Path, scripted: Callable[..., ScriptedModelServer]
) -> None:
    import openai

    from vaultpilot.agent.config import AgentConfig
    from vaultpilot.agent.openai_model import OpenAIChatModel

    model_server = scripted([ScriptedTurn(text="First answer."), ScriptedTurn(text="Second.")])
    client = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0)
    server = live(
        vaults={"vault": vault},
        model=OpenAIChatModel(client, "scripted"),
        agent_config=AgentConfig(model="scripted", max_steps=3),
    )

    async def run(goal: str, conversation: str | None = None) -> dict[str, Any]:
        args = {"goal": goal, **({"conversationId": conversation} if conversation else {})}
        async with server.ws() as ui:
            await recv_json(ui)
            await ui.send(json.dumps(command("StartAgent", args, "s")))
            frames = await recv_until(ui, is_reply("s"))
            if frames[-1]["success"]:
                await recv_until(ui, is_event("run_finished"))
        return frames[-1]

    first = asyncio.run(run("Remember the word heron"))
    conv = first["result"]["conversationId"]
    with server.http() as c:
        listed = c.get("/conversations", params={"vaultId": "vault"}).json()
        assert c.get("/conversations", params={"vaultId": "nope"}).status_code == 404
    assert [(x["id"], x["title"], x["running"]) for x in listed] == [
        (conv, "Remember the word heron", False)
    ]
    assert listed[0]["updated"] > 1.7e12  # ms
    second = asyncio.run(run("Which word?", conv))
    assert second["result"]["conversationId"] == conv
    sent = model_server.requests[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "Remember the word heron",
        "Which word?",
    ]
    unknown = asyncio.run(run("x", "nosuchconversation"))
    assert unknown["error"]["code"] == "not_found"


def test_undo_run_undoes_the_runs_change_set(agent_server: Start, vault: Path) -> None:
    before = {p: (vault / p).read_bytes() for p in (NOTE, "Home.md", "Inbox.md")}
    server = agent_server([ScriptedTurn(tool_calls=[BULK]), ScriptedTurn(text="Tagged.")])
    frames = _approve_with(server, "call_bulk", [NOTE, "Home.md", "Inbox.md"])
    run_id = next(f["runId"] for f in frames if is_event("run_finished")(f))
    assert (vault / NOTE).read_bytes() != before[NOTE]
    undone = server.rpc("UndoRun", {"runId": run_id})
    assert undone["success"], undone
    assert undone["result"]["undone"] == run_id and len(undone["result"]["restored"]) == 3
    assert {p: (vault / p).read_bytes() for p in before} == before
    again = server.rpc("UndoRun", {"runId": "run-000000000000"})
    assert again["error"]["code"] == "not_found", again


def test_approved_files_written_by_the_model_are_dropped(agent_server: Start, vault: Path) -> None:
    sneaky = ScriptedCall(
        id="call_bulk",
        name="obsidian_vault_manager",
        arguments={**BULK_ARGUMENTS, "approvedFiles": [NOTE]},
    )
    server = agent_server([ScriptedTurn(tool_calls=[sneaky]), ScriptedTurn(text="Tagged.")])
    frames = _approve_with(server, "call_bulk", [NOTE, "Home.md", "Inbox.md"])
    call = next(f["event"] for f in frames if is_event("tool_call")(f))
    assert "approvedFiles" not in call["arguments"]
    result = next(f["event"] for f in frames if is_event("tool_result")(f))
    assert result["result"]["affectedPaths"] == [NOTE, "Home.md", "Inbox.md"], result
