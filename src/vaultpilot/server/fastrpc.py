"""Vault tool calls on ``POST /rpc``, answered without FastAPI's routing: the server's hot path.

``ToolCallShortcut`` sits inside ``BodyLimitMiddleware``, so the key, the Host and Origin checks
and the body's size and text checks have all passed when it runs. It answers a ``POST /rpc``
whose body is one valid ``IToolCommand`` naming one of the three vault tools, with the same
``rpc.dispatch`` the route calls and the same envelope, as the same JSON bytes FastAPI's
``JSONResponse`` would send (``Retry-After`` on ``vault_busy`` too). Everything else (another
command, a body that is not one valid command, another path) goes on to FastAPI untouched, so
its answers and error messages stay the route's own. What it saves (the router, the dependency
solving, the response class, per read) is measured in docs/benchmarks.md.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from vaultpilot.server import models as m
from vaultpilot.server.envelope import retry_headers
from vaultpilot.server.limits import replaying
from vaultpilot.server.rpc import dispatch
from vaultpilot.server.state import ServerState

__all__ = ["ToolCallShortcut", "tool_command"]

_TOOLS = frozenset(m.AGENT_TOOLS)


def tool_command(body: bytes) -> m.ToolCommand | None:
    """The vault tool call ``body`` holds, or None when it holds anything else."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("commandName") not in _TOOLS:
        return None
    try:
        return m.ToolCommand.model_validate(data)
    except ValidationError:
        return None


def _rendered(envelope: dict[str, Any]) -> bytes:
    """The bytes Starlette's ``JSONResponse`` renders for ``envelope``."""
    return json.dumps(
        envelope, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


class ToolCallShortcut:
    """See the module."""

    def __init__(self, app: ASGIApp, *, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/rpc":
            await self.app(scope, receive, send)
            return
        first = await receive()  # the whole body: BodyLimitMiddleware hands it over in one
        command = (
            tool_command(first.get("body", b""))
            if first["type"] == "http.request" and not first.get("more_body", False)
            else None
        )
        if command is None:
            await self.app(scope, replaying(first, receive), send)
            return
        envelope = await dispatch(self.state, command, None)
        body = _rendered(envelope)
        headers = [
            (b"content-length", str(len(body)).encode("latin-1")),
            (b"content-type", b"application/json"),
        ]
        error = envelope.get("error")
        extra = retry_headers(error["code"]) if error else None
        for key, value in (extra or {}).items():
            headers.append((key.lower().encode("latin-1"), value.encode("latin-1")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
