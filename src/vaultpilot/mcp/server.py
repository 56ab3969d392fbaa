"""``build_server(vaults, approvals=...)``: the MCP server over the given vaults (SDK low-level).

It answers ``tools/list`` and ``tools/call`` (``mcp.tools``), ``resources/list``,
``resources/templates/list`` and ``resources/read`` (``mcp.resources``), and ``prompts/list``
and ``prompts/get`` (``mcp.prompts``). Nothing in the handshake or in ``tools/list`` touches a
vault: the tool list is computed once here, so a client sees the tools at once however large
the vault and whatever its index is doing.

``on_first_request`` (optional) is called once, on the first request after the handshake
(``notifications/initialized`` or, on 2026-07-28 connections, the first request that is not
``server/discover``): ``vaultpilot mcp`` starts indexing there, so the handshake never competes
with it. The protocol itself (framing, the handshake, errors for unknown methods, malformed
params or a request before ``initialize``) is the SDK's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

import vaultpilot
from vaultpilot.mcp import prompts, resources
from vaultpilot.mcp.tools import Approvals, Cuts, call_tool, list_tools
from vaultpilot.mcp.vaults import VaultSession
from vaultpilot.tools.untrusted import instructions, new_token

__all__ = ["INSTRUCTIONS", "build_server"]

INSTRUCTIONS = (
    "vaultpilot: an Obsidian vault's notes. Find notes with obsidian_query_vault, read them "
    "with obsidian_get_context (every read returns the note's version), and change them with "
    "obsidian_vault_manager, passing expectedVersion so nothing written meanwhile is lost. "
    "Deletes, moves and bulk edits may need the person's approval."
)
_HANDSHAKE = frozenset({"initialize", "server/discover", "ping"})

Ctx = ServerRequestContext[Any, Any]


class _FirstRequest:
    """Context-tier middleware calling ``hook`` once, after the handshake (see the module)."""

    def __init__(self, hook: Callable[[], None]) -> None:
        self._hook: Callable[[], None] | None = hook

    async def __call__(self, ctx: Ctx, call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if self._hook is not None and ctx.method not in _HANDSHAKE:
            hook, self._hook = self._hook, None
            hook()
        return result


def build_server(
    vaults: Mapping[str, VaultSession],
    *,
    approvals: Approvals,
    on_first_request: Callable[[], None] | None = None,
    token: str | None = None,
) -> Server[Any]:
    """The MCP server for ``vaults`` (name → session), in configuration order.

    Note text in tool results is wrapped in boundary markers with ``token`` (a fresh one per
    server when not given), and the server's instructions tell the client's model what they
    mean (``tools.untrusted``): a note's text is the person's data, never instructions.
    """
    names = list(vaults)
    token = token or new_token()
    tools = types.ListToolsResult(tools=list_tools(names))
    template_list = types.ListResourceTemplatesResult(resource_templates=resources.templates(names))
    prompt_list = types.ListPromptsResult(prompts=prompts.list_prompts())

    async def on_list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return tools

    cuts: Cuts = {}

    async def on_call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
        return await call_tool(
            ctx, params, vaults=vaults, approvals=approvals, token=token, server_cuts=cuts
        )

    async def on_list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return await resources.list_resources(vaults, params.cursor if params else None)

    async def on_list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return template_list

    async def on_read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> Any:
        return await resources.read_resource(vaults, params.uri, token=token)

    async def on_list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return prompt_list

    async def on_get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> Any:
        return prompts.get_prompt(params.name, params.arguments)

    server: Server[Any] = Server(
        "vaultpilot",
        version=vaultpilot.__version__,
        title="vaultpilot",
        instructions=f"{INSTRUCTIONS} {instructions(token)}",
        get_tool_input_schema=lambda name: next(
            (t.input_schema for t in tools.tools if t.name == name), None
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
    )
    if on_first_request is not None:
        server.middleware.append(_FirstRequest(on_first_request))
    return server
