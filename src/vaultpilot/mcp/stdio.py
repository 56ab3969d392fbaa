"""``serve_stdio(vaults, ...)``: ``vaultpilot mcp`` over the process's stdin and stdout.

stdout carries protocol messages only: the SDK's transport owns it while the server runs, and
every log line goes to stderr (``configure_logging``). The vaults start indexing on the first
request after the handshake (``build_server``'s ``on_first_request``), or after ``grace``
seconds if the client says nothing, and are closed when the client closes stdin.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

import anyio
from mcp.server.stdio import stdio_server

from vaultpilot.mcp.server import build_server
from vaultpilot.mcp.tools import Approvals
from vaultpilot.mcp.vaults import LocalVault

__all__ = ["configure_logging", "serve_stdio"]


def configure_logging(level: int = logging.WARNING) -> None:
    """Every log record to stderr, never stdout (stdout is the protocol's)."""
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


async def serve_stdio(
    vaults: Mapping[str, LocalVault],
    *,
    approvals: Approvals,
    embed: bool = True,
    rescan: float = 30.0,
    grace: float = 2.0,
) -> None:
    """Serve until the client closes stdin (see the module)."""

    def start() -> None:
        for vault in vaults.values():
            vault.start(embed=embed, rescan=rescan)  # idempotent

    server = build_server(vaults, approvals=approvals, on_first_request=start)
    try:
        async with stdio_server() as (read, write), anyio.create_task_group() as tg:

            async def start_later() -> None:
                await anyio.sleep(grace)
                start()

            tg.start_soon(start_later)
            await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        for vault in vaults.values():
            await anyio.to_thread.run_sync(vault.close)
