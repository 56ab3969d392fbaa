"""The vault's [rules] that ask (``mode = "ask"``, ``ask`` folders, ``max_notes_per_run``) bind
/rpc and /ws vault tool calls as they bind agent runs and MCP clients: a real server under
uvicorn, a real config file, real sockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from vaultpilot.server.settings import ShellPolicy

NOTE = "Reference/Concepts/Idempotency.md"
OTHER = "Home.md"


@pytest.fixture
def start(live: Callable[..., Live], vault: Path, tmp_path: Path) -> Callable[[str], Live]:
    def go(rules: str) -> Live:
        config = tmp_path / "config.toml"
        config.write_text(f"[rules]\n{rules}\n", encoding="utf-8")
        return live(
            vaults={"vault": vault}, config_path=config, shell=ShellPolicy(approval_timeout=10)
        )

    return go


def _update(path: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"operation": "update_note", "target": path, "content": text, **extra}


def test_an_ask_folder_asks_and_nobody_connected_refuses(
    start: Callable[[str], Live], vault: Path
) -> None:
    server = start('ask = ["Reference"]')
    before = (vault / NOTE).read_text(encoding="utf-8")
    reply = server.rpc("obsidian_vault_manager", _update(NOTE, "replaced"))
    assert reply["success"] is False and reply["error"]["code"] == "request_refused", reply
    message = reply["error"]["message"]
    assert "nobody is connected to approve it" in message
    assert "The vault's [rules] in the config file" in message and "Reference" in message
    assert "Nothing was changed." in message
    spec = server.rpc("UpdateNote", {"FilePath": NOTE, "Changes": "replaced"})
    assert "nobody is connected to approve it" in spec["error"]["message"]
    assert (vault / NOTE).read_text(encoding="utf-8") == before
    # Outside the folder, a read, and a dry run are not asked about.
    outside = server.rpc("obsidian_vault_manager", _update(OTHER, "home\n"))
    assert outside["success"] is True, outside
    read = server.rpc("obsidian_get_context", {"contextType": "read_note", "target": NOTE})
    assert read["success"] is True, read
    preview = server.rpc("obsidian_vault_manager", _update(NOTE, "replaced", dryRun=True))
    assert preview["success"] is True and preview["result"]["diffs"], preview


def test_mode_ask_waits_for_another_client_to_approve(
    start: Callable[[str], Live], vault: Path
) -> None:
    server = start('mode = "ask"')

    def waiting() -> None:
        assert not (vault / "Inbox/Asked.md").exists()

    asked, replies = approved_by_another_client(
        server,
        lambda: server.rpc("CreateNote", {"FilePath": "Inbox/Asked.md", "Content": "asked"}),
        waiting,
    )
    assert asked["name"] == "obsidian_vault_manager" and asked["operation"] == "create_note"
    assert 'mode = "ask"' in asked["reason"]
    assert replies and replies[0]["success"] is True, replies
    assert (vault / "Inbox/Asked.md").read_text(encoding="utf-8").strip() == "asked"


def test_a_socket_cannot_approve_its_own_call_and_a_refusal_changes_nothing(
    start: Callable[[str], Live], vault: Path
) -> None:
    server = start('mode = "ask"')
    before = (vault / NOTE).read_text(encoding="utf-8")

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with server.ws() as asker, server.ws() as ui:
            await recv_json(asker), await recv_json(ui)
            call = command("obsidian_vault_manager", _update(NOTE, "mine\n"), "u1")
            await asker.send(json.dumps(call))
            asked = (await recv_until(ui, is_event("approval_required")))[-1]["event"]
            yes = {"callId": asked["call_id"], "approved": True}
            await asker.send(json.dumps(command("ApproveToolCall", yes, "self")))
            own = (await recv_until(asker, is_reply("self")))[-1]
            no = {"callId": asked["call_id"], "approved": False, "reason": "not now"}
            await ui.send(json.dumps(command("ApproveToolCall", no, "n1")))
            return own, (await recv_until(asker, is_reply("u1")))[-1]

    own, reply = asyncio.run(go())
    assert own["success"] is False and "cannot approve its own request" in own["error"]["message"]
    assert reply["error"]["code"] == "request_refused"
    assert "was not approved: not now" in reply["error"]["message"]
    assert (vault / NOTE).read_text(encoding="utf-8") == before


def test_one_call_past_max_notes_per_run_asks(start: Callable[[str], Live], vault: Path) -> None:
    server = start("max_notes_per_run = 1")
    one = server.rpc("obsidian_vault_manager", _update(OTHER, "home\n"))
    assert one["success"] is True, one  # each call is counted alone, as for MCP clients
    move = {
        "operation": "move_note",
        "target": NOTE,
        "destination": "Inbox/Moved.md",
        "confirmDestructive": True,
    }
    reply = server.rpc("obsidian_vault_manager", move)  # names two notes: past the limit
    assert reply["success"] is False, reply
    message = reply["error"]["message"]
    assert "past 1 changed notes (max_notes_per_run)" in message, message
    assert "nobody is connected to approve it" in message
    assert (vault / NOTE).exists() and not (vault / "Inbox/Moved.md").exists()


@pytest.mark.parametrize(
    "target", ["Idempotency", "Idempotency.md", f"./{NOTE}", "./Reference/./Concepts//Idempotency"]
)
def test_an_ask_folder_asks_by_the_note_a_name_leads_to(
    start: Callable[[str], Live], vault: Path, target: str
) -> None:
    # A title, or a path with './' in it, leads to the same note: it asks like its full path.
    server = start('ask = ["Reference"]')
    before = (vault / NOTE).read_text(encoding="utf-8")
    reply = server.rpc("obsidian_vault_manager", _update(target, "replaced"))
    assert reply["success"] is False and "nobody is connected" in str(reply), reply
    assert (vault / NOTE).read_text(encoding="utf-8") == before


@pytest.mark.parametrize("flag", ["false", "no", 0])
def test_a_dry_run_flag_that_is_no_boolean_neither_asks_nor_writes(
    start: Callable[[str], Live], vault: Path, flag: Any
) -> None:
    server = start('ask = ["Reference"]')
    before = (vault / NOTE).read_text(encoding="utf-8")
    reply = server.rpc("obsidian_vault_manager", _update(NOTE, "replaced", dryRun=flag))
    assert reply["success"] is False, reply
    assert "'dryRun' must be true or false" in reply["error"]["message"], reply
    assert (vault / NOTE).read_text(encoding="utf-8") == before


@pytest.mark.parametrize(
    "arguments",
    [
        {"operation": "move_folder", "target": "Reference", "destination": "Archive"},
        {"operation": "delete_folder", "target": "Reference", "recursive": True,
         "confirmDestructive": True},
        # No note in the folder is named: the move rewrites a link in one.
        {"operation": "move_note", "target": "Inbox.md", "destination": "Archive/Inbox2.md"},
    ],
)  # fmt: skip
def test_a_change_reaching_into_an_ask_folder_asks(
    start: Callable[[str], Live], vault: Path, arguments: dict[str, Any]
) -> None:
    server = start('ask = ["Reference/Concepts"]')
    before = {p: p.read_bytes() for p in sorted(vault.rglob("*.md"))}
    reply = server.rpc("obsidian_vault_manager", arguments)
    assert reply["success"] is False and "nobody is connected" in str(reply), reply
    assert "Reference/Concepts" in reply["error"]["message"]
    assert {p: p.read_bytes() for p in sorted(vault.rglob("*.md"))} == before


def test_a_folder_moved_counts_its_notes_toward_max_notes_per_run(
    start: Callable[[str], Live], vault: Path
) -> None:
    server = start("max_notes_per_run = 3")
    moved = {"operation": "move_folder", "target": "Meetings", "destination": "Archive"}
    reply = server.rpc("obsidian_vault_manager", moved)  # six notes and their linkers: asks
    assert reply["success"] is False and "max_notes_per_run" in str(reply), reply
    assert (vault / "Meetings").is_dir() and not (vault / "Archive" / "Meetings").exists()
    one = {"operation": "move_note", "target": "Inbox.md", "destination": "Archive/Inbox.md"}
    assert server.rpc("obsidian_vault_manager", one)["success"] is True  # a few notes: runs
