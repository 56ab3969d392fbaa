"""The vault tools for any MCP client: stdio (``vaultpilot mcp``) and Streamable HTTP (``/mcp``).

Built on the official ``mcp`` SDK (its low-level ``Server``): the three vault tools with their
registry schemas and annotations, notes as ``vault://NAME/path.md`` resources, prompts for the
specification's workflows, the approval policy (asked through elicitation when the client can),
and one or several vaults (a ``vault`` parameter only when there are several)::

    vaults = {name: LocalVault(root, db_path) for name, root in parse_vault_specs(specs).items()}
    await serve_stdio(vaults, approvals=Approvals(policy, config_path))

    mcp_http = build_http_app(server_vault_handles, approvals=...)   # mount at /mcp (see http)

Importing this package loads the SDK; the CLI imports it only when ``vaultpilot mcp`` runs.
"""

from __future__ import annotations

from vaultpilot.mcp.http import McpHttp, build_http_app
from vaultpilot.mcp.server import build_server
from vaultpilot.mcp.stdio import configure_logging, serve_stdio
from vaultpilot.mcp.tools import Approvals, list_tools
from vaultpilot.mcp.vaults import LocalVault, VaultSession, parse_vault_specs

__all__ = [
    "Approvals",
    "LocalVault",
    "McpHttp",
    "VaultSession",
    "build_http_app",
    "build_server",
    "configure_logging",
    "list_tools",
    "parse_vault_specs",
    "serve_stdio",
]
