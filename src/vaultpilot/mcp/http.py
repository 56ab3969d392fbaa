"""The MCP server as Streamable HTTP, for a host application to mount (the ACS at ``/mcp``).

    mcp_http = build_http_app(vaults, approvals=Approvals(policy, config_path))
    app.router.routes.append(Route("/mcp", endpoint=mcp_http.app))   # the exact path: no redirect
    ...
    async with mcp_http.running():      # in the host's lifespan: sessions live inside it
        yield

``vaults`` are the host's own sessions (anything with ``root`` and ``run(fn)``, e.g. the server's
``VaultHandle``), so MCP calls share their contexts, write locks and background embedding. The
host guards the route: this app does no authentication and no Host/Origin checks of its own
(the SDK's DNS-rebinding check is off, since the host's middleware has already refused a foreign
Host or Origin and a missing or wrong key before a request gets here). Sessions are stateful
(``Mcp-Session-Id``), end after ``idle_timeout`` seconds without a request, and a body larger
than ``max_body`` bytes is refused with 413 before it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from vaultpilot.mcp.server import build_server
from vaultpilot.mcp.tools import MAX_ARGUMENTS, Approvals
from vaultpilot.mcp.vaults import VaultSession

__all__ = ["McpHttp", "build_http_app"]


@dataclass(frozen=True, slots=True)
class McpHttp:
    """An ASGI app to mount, and the context its sessions run in."""

    app: ASGIApp
    manager: StreamableHTTPSessionManager

    def running(self) -> AbstractAsyncContextManager[None]:
        """Enter once, in the host's lifespan; requests are served only inside it."""
        return self.manager.run()


def build_http_app(
    vaults: Mapping[str, VaultSession],
    *,
    approvals: Approvals,
    max_body: int = MAX_ARGUMENTS + 64 * 1024,
    idle_timeout: float = 30 * 60,
) -> McpHttp:
    """The Streamable HTTP endpoint for ``vaults`` (name → session; see the module)."""
    manager = StreamableHTTPSessionManager(
        app=build_server(vaults, approvals=approvals),
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body,
        session_idle_timeout=idle_timeout,
    )
    return McpHttp(StreamableHTTPASGIApp(manager), manager)
