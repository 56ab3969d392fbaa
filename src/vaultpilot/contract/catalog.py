"""The process tools vaultpilot ships, as ``tool_registry`` entries.

Each entry's command starts the agent with this interpreter (``python -m …``), so it works in any
environment vaultpilot is installed in, with or without the console scripts on ``PATH``. The
payload schemas are derived from the command models in ``contract.models``.

``git_agent`` registers itself on every start (as its contract asks); ``register_shipped`` is
called by ``vaultpilot agents list`` and ``call`` so both agents are always listed. Neither
command names a data directory: a child started by the orchestrator finds memory.db through
``VAULTPILOT_DATA_DIR``, which the caller sets when it uses another data directory.
"""

from __future__ import annotations

import sqlite3
import sys

from vaultpilot.contract.models import GitAgentCommandV1, ObsidianAgentCommandV1
from vaultpilot.memory.registry import ProcessTool, upsert_tool

__all__ = ["git_agent_tool", "obsidian_agent_tool", "register_shipped", "shipped_tools"]


def obsidian_agent_tool() -> ProcessTool:
    return ProcessTool(
        name="obsidian_agent",
        description=(
            "Create, read or update one note in an Obsidian vault. Actions: create_note "
            "(refused if the note exists), read_note, update_note (the note must exist). "
            "Payload: vault_path, note_name (e.g. 'Projects/Plan'; '.md' optional), and "
            "content to write."
        ),
        payload_schema=ObsidianAgentCommandV1.model_json_schema(),
        command=(sys.executable, "-m", "vaultpilot.contract.obsidian_agent"),
    )


def git_agent_tool() -> ProcessTool:
    return ProcessTool(
        name="git_agent",
        description=(
            "Run git in a repository: git_status, git_diff (files), git_log (limit, default "
            "10), git_add (files), git_commit (message). The repository is the working "
            "directory unless the payload names repo_path. Failures come back in the result "
            "with metadata.exit_code."
        ),
        payload_schema=GitAgentCommandV1.model_json_schema(),
        command=(sys.executable, "-m", "vaultpilot.contract.git_agent"),
    )


def shipped_tools() -> list[ProcessTool]:
    return [git_agent_tool(), obsidian_agent_tool()]


def register_shipped(conn: sqlite3.Connection) -> None:
    """Register both shipped agents (idempotent: an unchanged entry is not rewritten)."""
    for tool in shipped_tools():
        upsert_tool(conn, tool)
