"""The MCP server as Streamable HTTP, mounted the way the Agent Communication Server mounts it.

A small Starlette host app holds the vault sessions, guards every request with a bearer key
compared in constant time and a loopback Host check (what the server's SecurityMiddleware does),
adds ``/mcp`` with ``build_http_app`` and enters its ``running()`` in the lifespan. It runs under
a real uvicorn on a free port; the SDK's client talks to it over HTTP.
"""

from __future__ import annotations

import contextlib
import hmac
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from vaultpilot.agent.approvals import ApprovalPolicy
from vaultpilot.locations import vault_data_dir
from vaultpilot.mcp import Approvals, LocalVault, build_http_app

from .conftest import TIMEOUT, snapshot, wire

KEY = "test-key-0123456789"


class KeyCheck:
    """Loopback Host and ``Authorization: Bearer <KEY>`` on every request, like the server's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            host = headers.get("host", "").rsplit(":", 1)[0]
            given = headers.get("authorization", "").removeprefix("Bearer ").encode()
            if host not in ("127.0.0.1", "localhost"):
                await JSONResponse({"error": "forbidden"}, 403)(scope, receive, send)
                return
            if not hmac.compare_digest(given, KEY.encode()):
                await JSONResponse({"error": "unauthorized"}, 401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _host_app(vault: LocalVault) -> Starlette:
    mcp_http = build_http_app({"notes": vault}, approvals=Approvals(ApprovalPolicy()))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp_http.running():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=mcp_http.app)], lifespan=lifespan)
    app.add_middleware(KeyCheck)
    return app


@pytest.fixture
def served(example_vault: Path, data_dir: Path) -> Iterator[tuple[str, Path]]:
    vault = LocalVault(example_vault, vault_data_dir(example_vault, data_dir) / "index.db")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(_host_app(vault), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", example_vault
    finally:
        server.should_exit = True
        thread.join(TIMEOUT)
        vault.close()


def _client(url: str, key: str = KEY, **options: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT)
    return Client(streamable_http_client(url, http_client=http), **options)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_session(mode: str, served: tuple[str, Path]) -> None:
    url, vault = served

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with _client(url, mode=mode) as client:
                tools = await client.list_tools()
                snapshot("tools_one_vault", wire(tools.tools))  # the same as over stdio
                found = await client.call_tool(
                    "obsidian_query_vault", {"queryType": "semantic_search", "query": "rollback"}
                )
                assert not found.is_error and found.structured_content["totalFound"] > 0
                read = await client.call_tool(
                    "obsidian_get_context", {"contextType": "read_note", "target": "Inbox.md"}
                )
                assert read.structured_content["primaryNote"]["path"] == "Inbox.md"
                appended = await client.call_tool(
                    "obsidian_vault_manager",
                    {"operation": "append_note", "target": "Inbox.md", "content": "- via MCP\n"},
                )
                assert not appended.is_error, appended.structured_content
                note = await client.read_resource("vault://notes/Inbox.md")
                content = note.contents[0]
                assert isinstance(content, types.TextResourceContents)
                assert content.text.endswith("- via MCP\n")
                refused = await client.call_tool(
                    "obsidian_vault_manager",
                    {"operation": "delete_note", "target": "Inbox.md", "confirmDestructive": True},
                )
                assert refused.is_error and "[approvals]" in refused.structured_content["message"]

    anyio.run(session)
    assert (vault / "Inbox.md").exists()
    assert (vault / "Inbox.md").read_text().endswith("- via MCP\n")


def test_http_refuses_a_bad_key_and_a_foreign_host(served: tuple[str, Path]) -> None:
    url, _ = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=TIMEOUT) as http:
        assert http.post(url, json=body, headers=accept).status_code == 401
        wrong = {**accept, "Authorization": "Bearer wrong"}
        assert http.post(url, json=body, headers=wrong).status_code == 401
        foreign = {**accept, "Authorization": f"Bearer {KEY}", "Host": "evil.example"}
        assert http.post(url, json=body, headers=foreign).status_code == 403

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with _client(url, key="wrong", mode="legacy") as client:
                await client.list_tools()

    # The SDK client gives up on the 401 with an MCP error (inside its task groups).
    with pytest.raises(BaseExceptionGroup) as caught:
        anyio.run(session)
    assert caught.group_contains(MCPError)
