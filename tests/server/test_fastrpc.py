"""Vault tool calls on /rpc go past FastAPI's router (``server.fastrpc``): the same envelope, the
same bytes, the same headers; everything else is the route's, unchanged."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse
from starlette.testclient import TestClient

from vaultpilot.server.fastrpc import tool_command

from .conftest import command


def test_only_a_valid_vault_tool_call_takes_the_short_way() -> None:
    call = command("obsidian_get_context", {"contextType": "read_note", "target": "Inbox.md"})
    assert tool_command(json.dumps(call).encode()) is not None
    for other in (
        command("GetVaultContext", {}),  # a command of the specification: the route's
        {**call, "timestamp": "yesterday"},  # not a valid IToolCommand: the route explains it
        {**call, "extra": 1},
        [call],
    ):
        assert tool_command(json.dumps(other).encode()) is None, other
    assert tool_command(b"{not json") is None
    assert tool_command(b"[" * 100_000) is None  # too deep for the parser: the route answers


def test_the_reply_is_what_the_route_would_send(client: TestClient) -> None:
    calls: list[dict[str, Any]] = [
        command("obsidian_get_context", {"contextType": "read_note", "target": "Inbox.md"}),
        command("obsidian_query_vault", {"queryType": "semantic_search", "query": "rollback é"}),
        command("obsidian_get_context", {"contextType": "read_note", "target": "No such.md"}),
        command("obsidian_vault_manager", {"operation": "delete_note", "target": "Inbox.md"}),
    ]
    for call in calls:
        reply = client.post("/rpc", json=call)
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        rendered = JSONResponse(reply.json()).body
        assert reply.content == rendered and int(reply.headers["content-length"]) == len(rendered)
    assert not client.post("/rpc", json=calls[-1]).json()["success"]  # a refusal, as before
    # A body that is not a valid command still gets the route's own answer.
    bad = client.post("/rpc", json={**calls[0], "timestamp": "yesterday"})
    assert bad.status_code == 400 and "timestamp" in bad.json()["error"]["message"]
