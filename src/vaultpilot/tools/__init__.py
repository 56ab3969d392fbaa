"""The three vault tools of the specification: find, read, change.

``obsidian_query_vault`` (discover), ``obsidian_get_context`` (read with context) and
``obsidian_vault_manager`` (every change), as plain functions over the vault engine and index
with typed parameters. Transports call them through ``registry``:

    ctx = open_context(vault_root, index_db_path)
    tool_schemas()                                   # [{name, description, parameters}, ...]
    call_tool(ctx, "obsidian_query_vault", {"queryType": "semantic_search", "query": "x"})
"""

from __future__ import annotations

from vaultpilot.tools.context import ToolContext, open_context
from vaultpilot.tools.registry import (
    TOOLS,
    Tool,
    ToolOutcome,
    call_tool,
    get_tool,
    is_error,
    run_tool,
    tool_schemas,
)

__all__ = [
    "TOOLS",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "call_tool",
    "get_tool",
    "is_error",
    "open_context",
    "run_tool",
    "tool_schemas",
]
