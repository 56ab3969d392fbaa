"""MCP at /mcp on the Agent Communication Server: the same vaults, behind the same API key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.server.conftest import Live

TIMEOUT = 30


def test_mcp_is_served_behind_the_key(live: Callable[..., Live], vault: Path) -> None:
    server = live(vaults={"notes": vault})
    url = f"{server.url}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=TIMEOUT, trust_env=False) as http:
        assert http.post(url, json=body, headers=accept).status_code == 401
        wrong = {**accept, "Authorization": "Bearer wrong"}
        assert http.post(url, json=body, headers=wrong).status_code == 401

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            http = httpx2.AsyncClient(headers=server.auth, timeout=TIMEOUT, trust_env=False)
            async with Client(streamable_http_client(url, http_client=http)) as client:
                listed = await client.list_tools()
                names = {t.name for t in listed.tools}
                assert names == {
                    "obsidian_query_vault",
                    "obsidian_get_context",
                    "obsidian_vault_manager",
                }
                read = await client.call_tool(
                    "obsidian_get_context", {"contextType": "read_note", "target": "Inbox.md"}
                )
                assert not read.is_error
                assert read.structured_content is not None
                assert read.structured_content["primaryNote"]["path"] == "Inbox.md"
                appended = await client.call_tool(
                    "obsidian_vault_manager",
                    {"operation": "append_note", "target": "Inbox.md", "content": "- via MCP\n"},
                )
                assert not appended.is_error, appended.structured_content

    anyio.run(session)
    # The change is journaled as an MCP client's, not as the server's own.
    with server.http() as rest:
        latest = rest.get("/history", params={"limit": 1}).json()["result"]["changeSets"][0]
    assert (latest["source"], latest["summary"]) == ("mcp", "append_note")
