"""The [approvals] rules bind /rpc and /ws clients as they bind agent runs and MCP clients.

A real server under uvicorn, a real config file (the one `vaultpilot serve` reads), real sockets:
a denied call is refused naming the rule and the file, an asked one waits for another client's
approval, a dry run or an allowed call runs, and the spec's CreateNote/UpdateNote are decided as
the vault manager's operations they are.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.server.conftest import (
    Live,
    approved_by_another_client,
    command,
    is_event,
    is_reply,
    recv_json,
    recv_until,
)
from vaultpilot.agent.approvals import Approvals
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.openai_model import OpenAIChatModel
from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn
from vaultpilot.server.approvals import ApprovalBroker
from vaultpilot.server.settings import ShellPolicy
from vaultpilot.server.ws import Hub

NOTE = "Reference/Concepts/Idempotency.md"


def _config(path: Path, rules: dict[str, str]) -> Path:
    lines = ["[approvals]", *(f'"{key}" = "{value}"' for key, value in rules.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def start(live: Callable[..., Live], vault: Path, tmp_path: Path) -> Callable[..., Live]:
    def go(rules: dict[str, str]) -> Live:
        config = _config(tmp_path / "config.toml", rules)
        return live(
            vaults={"vault": vault},
            config_path=config,
            shell=ShellPolicy(approval_timeout=10),
        )

    return go


def _update(text: str, **extra: Any) -> dict[str, Any]:
    return {"operation": "update_note", "target": NOTE, "content": text, **extra}


def test_a_denied_operation_is_refused_on_rpc_and_ws_naming_the_rule(
    start: Callable[..., Live], vault: Path, tmp_path: Path
) -> None:
    server = start({"obsidian_vault_manager.delete_note": "deny"})
    delete = {"operation": "delete_note", "target": NOTE, "confirmDestructive": True}
    reply = server.rpc("obsidian_vault_manager", delete)
    assert reply["success"] is False and reply["error"]["code"] == "request_refused"
    message = reply["error"]["message"]
    assert '"obsidian_vault_manager.delete_note" = "deny"' in message
    assert str(tmp_path / "config.toml") in message and "Nothing was changed" in message
    # A preview of a denied operation stays denied, as in agent runs.
    preview = server.rpc("obsidian_vault_manager", {**delete, "dryRun": True})
    assert preview["error"]["code"] == "request_refused"
    with server.http() as http:  # the per-tool REST route ends in the same place
        rest = http.post("/tools/obsidian_vault_manager", json=delete)
    assert rest.status_code == 403 and "deny" in rest.json()["error"]["message"]

    async def over_ws() -> dict[str, Any]:
        async with server.ws() as ws:
            await recv_json(ws)
            await ws.send(json.dumps(command("obsidian_vault_manager", delete, "d1")))
            return (await recv_until(ws, is_reply("d1")))[-1]

    assert asyncio.run(over_ws())["error"]["code"] == "request_refused"
    assert (vault / NOTE).exists()
    # Other operations are not touched by the rule.
    read = server.rpc("obsidian_get_context", {"contextType": "read_note", "target": NOTE})
    assert read["success"] is True


def test_a_tool_rule_binds_the_spec_commands_and_a_specific_rule_wins(
    start: Callable[..., Live], vault: Path
) -> None:
    server = start(
        {"obsidian_vault_manager": "deny", "obsidian_vault_manager.create_note": "allow"}
    )
    before = (vault / NOTE).read_text(encoding="utf-8")
    update = server.rpc("UpdateNote", {"FilePath": NOTE, "Changes": "overwritten"})
    assert update["error"]["code"] == "request_refused"
    assert '"obsidian_vault_manager" = "deny"' in update["error"]["message"]
    appended = server.rpc("UpdateNote", {"FilePath": NOTE, "Changes": {"append": "more"}})
    assert appended["error"]["code"] == "request_refused"
    assert (vault / NOTE).read_text(encoding="utf-8") == before
    created = server.rpc("CreateNote", {"FilePath": "Inbox/New.md", "Content": "hello"})
    assert created["success"] is True, created
    assert (vault / "Inbox/New.md").read_text(encoding="utf-8").strip() == "hello"


def test_an_asked_call_with_nobody_to_approve_is_refused_and_a_dry_run_is_not_asked(
    start: Callable[..., Live], vault: Path
) -> None:
    server = start({"obsidian_vault_manager.update_note": "ask"})
    before = (vault / NOTE).read_text(encoding="utf-8")
    reply = server.rpc("obsidian_vault_manager", _update("replaced"))
    assert reply["error"]["code"] == "request_refused"
    message = reply["error"]["message"]
    assert "nobody is connected to approve it" in message
    assert '"obsidian_vault_manager.update_note" = "ask"' in message
    spec = server.rpc("UpdateNote", {"FilePath": NOTE, "Changes": "replaced"})
    assert "nobody is connected to approve it" in spec["error"]["message"]
    preview = server.rpc("obsidian_vault_manager", _update("replaced", dryRun=True))
    assert preview["success"] is True and preview["result"]["diffs"], preview
    assert (vault / NOTE).read_text(encoding="utf-8") == before


def test_an_asked_call_over_http_runs_once_a_socket_approves_it(
    start: Callable[..., Live], vault: Path
) -> None:
    server = start({"obsidian_vault_manager.update_note": "ask"})

    def waiting() -> None:
        assert "approved text" not in (vault / NOTE).read_text(encoding="utf-8")

    asked, replies = approved_by_another_client(
        server,
        lambda: server.rpc("obsidian_vault_manager", _update("approved text\n")),
        waiting,
    )
    assert asked["name"] == "obsidian_vault_manager" and asked["operation"] == "update_note"
    assert asked["diffs"] and asked["diffs"][0]["path"] == NOTE
    assert '"obsidian_vault_manager.update_note" = "ask"' in asked["reason"]
    assert replies and replies[0]["success"] is True, replies
    assert (vault / NOTE).read_text(encoding="utf-8").endswith("---\napproved text\n")


def test_an_asked_call_over_ws_declined_or_approved_by_itself_does_not_run(
    start: Callable[..., Live], vault: Path
) -> None:
    server = start({"obsidian_vault_manager.update_note": "ask"})
    before = (vault / NOTE).read_text(encoding="utf-8")

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with server.ws() as asker, server.ws() as ui:
            await recv_json(asker), await recv_json(ui)
            await asker.send(json.dumps(command("obsidian_vault_manager", _update("x"), "u1")))
            call_id = (await recv_until(ui, is_event("approval_required")))[-1]["event"]["call_id"]
            yes = {"callId": call_id, "approved": True}
            await asker.send(json.dumps(command("ApproveToolCall", yes, "self")))
            own = (await recv_until(asker, is_reply("self")))[-1]
            no = {"callId": call_id, "approved": False, "reason": "not now"}
            await ui.send(json.dumps(command("ApproveToolCall", no, "n1")))
            return own, (await recv_until(asker, is_reply("u1")))[-1]

    own, reply = asyncio.run(go())
    assert "cannot approve its own request" in own["error"]["message"]
    assert reply["error"]["code"] == "request_refused"
    assert "was not approved: not now" in reply["error"]["message"]
    assert (vault / NOTE).read_text(encoding="utf-8") == before


def test_a_rule_changed_in_the_file_binds_the_running_server(
    start: Callable[..., Live], vault: Path, tmp_path: Path
) -> None:
    server = start({"obsidian_vault_manager.create_note": "allow"})
    first = server.rpc("CreateNote", {"FilePath": "Inbox/One.md", "Content": "one"})
    assert first["success"] is True, first
    _config(tmp_path / "config.toml", {"obsidian_vault_manager.create_note": "deny"})
    second = server.rpc("CreateNote", {"FilePath": "Inbox/Two.md", "Content": "two"})
    assert second["error"]["code"] == "request_refused"
    assert not (vault / "Inbox/Two.md").exists()


def test_a_tool_override_the_server_runs_is_held_to_the_rules(
    live: Callable[..., Live], vault: Path
) -> None:
    delete = ScriptedCall(
        id="call_del",
        name="obsidian_vault_manager",
        arguments={"operation": "delete_note", "target": NOTE, "confirmDestructive": True},
    )
    model = ScriptedModelServer([ScriptedTurn(tool_calls=[delete])]).start()
    try:
        client = openai.AsyncOpenAI(
            base_url=model.base_url, api_key="test", max_retries=0, timeout=10
        )
        server = live(
            vaults={"vault": vault},
            model=OpenAIChatModel(client, "scripted"),
            agent_config=AgentConfig(
                model="scripted",
                max_steps=3,
                approvals={"obsidian_vault_manager.move_note": "deny"},
            ),
        )
        instead = {"operation": "move_note", "target": NOTE, "destination": "Archive"}

        async def go() -> dict[str, Any]:
            async with server.ws() as ui:
                await recv_json(ui)
                await ui.send(json.dumps(command("StartAgent", {"goal": "Delete the note"})))
                await recv_until(ui, is_event("approval_required"))  # the delete waits
                override = {"toolName": "obsidian_vault_manager", "arguments": instead}
                await ui.send(
                    json.dumps(command("ToolOverride", {**override, "callId": "call_del"}, "o1"))
                )
                reply = (await recv_until(ui, is_reply("o1")))[-1]
                await ui.send(json.dumps(command("InterruptAgent", {"force": True}, "i1")))
                await recv_until(ui, is_event("run_finished"))
                return reply

        reply = asyncio.run(go())
    finally:
        model.stop()
    assert reply["error"]["code"] == "request_refused"
    assert '"obsidian_vault_manager.move_note" = "deny"' in reply["error"]["message"]
    assert (vault / NOTE).exists() and not (vault / "Archive" / "Idempotency.md").exists()


def test_a_rule_for_a_read_operation_binds_it_and_not_the_others(
    start: Callable[..., Live],
) -> None:
    server = start({"obsidian_get_context.read_multiple": "deny"})
    many = {"contextType": "read_multiple", "targets": [NOTE, "Home.md"]}
    refused = server.rpc("obsidian_get_context", many)
    assert refused["error"]["code"] == "request_refused"
    assert '"obsidian_get_context.read_multiple" = "deny"' in refused["error"]["message"]
    one = server.rpc("obsidian_get_context", {"contextType": "read_note", "target": NOTE})
    assert one["success"] is True, one


def test_the_configured_policy_is_made_once_per_reading_of_the_file(tmp_path: Path) -> None:
    """/rpc's hot path reuses the configured policy until the config file is read again."""
    config = _config(tmp_path / "config.toml", {"obsidian_vault_manager.delete_note": "deny"})
    rules = Approvals.read(config)
    broker = ApprovalBroker(Hub())
    first = broker.configured_policy(rules)
    assert broker.configured_policy(rules) is first
    assert first.decide("obsidian_vault_manager", "delete_note") == "deny"
    assert first.decide("obsidian_vault_manager", "move_note") == "allow"  # no default layer
    _config(config, {"obsidian_vault_manager.delete_note": "ask", "obsidian_vault_manager": "deny"})
    second = broker.configured_policy(rules)
    assert second is not first and broker.configured_policy(rules) is second
    assert second.decide("obsidian_vault_manager", "delete_note") == "ask"
