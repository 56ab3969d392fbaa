"""The one place that builds the built-in agent, for every transport (CLI, server, MCP later).

``build_agent(ctx, config, model, ...)`` returns an ``Agent`` with:

* the three vault tools on ``ctx`` (``VaultTools``), whose runs each make one change set;
* when ``config.process_tools`` is on, the process tools registered in memory.db (the shipped
  ``git_agent`` and any the user registered), bound to the run's vault (``ProcessTools.for_vault``:
  the model cannot point them elsewhere; git_agent is offered once the vault is a git repository)
  and run through the contract orchestrator in a child with
  an allowlisted environment that finds the same data folder, so the same vault write lock.
  ``obsidian_agent`` is not offered: its actions are the vault tools' ``create_note``,
  ``update_note`` and ``read_note`` without their safeguards (versions, dry-run diffs, journal);
* the system prompt with the vault's facts, its rules (``tools.rules``), how note text is marked
  in results (``tools.untrusted``, a fresh token per agent) and the configured ``instructions``
  (``system_prompt``, which GetVaultContext shows to external agents too);
* the vault's rules, whose approvals the loop keeps per run (``agent.guard``);
* the approval policy (defaults from the tools' facts, then ``[approvals]``; ``auto_approve``
  for ``ask --yes``) and the run limits of the configuration.

The caller owns ``ctx`` (and closes its connection).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vaultpilot.agent.approvals import ApprovalPolicy
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.loop import Agent, RunLimits
from vaultpilot.agent.model import ModelClient
from vaultpilot.agent.prompt import build_system_prompt
from vaultpilot.agent.toolset import CombinedTools, ProcessTools, ToolSet
from vaultpilot.agent.vault_tools import VaultTools
from vaultpilot.contract.catalog import register_shipped
from vaultpilot.contract.orchestrator import Replied, list_process_tools, new_request, run_process
from vaultpilot.locations import DATA_DIR_ENV, memory_db_path
from vaultpilot.memory.db import connect as connect_memory
from vaultpilot.memory.registry import ProcessTool
from vaultpilot.tools import ToolContext
from vaultpilot.tools.untrusted import instructions, new_token

__all__ = ["NOT_OFFERED", "build_agent", "run_process_tool", "system_prompt"]

# Process tools whose every action a vault tool does better (see the module).
NOT_OFFERED = frozenset({"obsidian_agent"})


def run_process_tool(
    tool: ProcessTool,
    action: str,
    payload: dict[str, Any],
    *,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run a registered process tool through the contract orchestrator; a JSON result.

    ``env`` is what the child's allowlisted environment is picked from (ours when None).
    """
    outcome = run_process(tool.command, new_request(tool.name, action, payload), env=env)
    if not isinstance(outcome, Replied):
        return {"error": outcome.message}
    reply = outcome.response
    out: dict[str, Any] = {"success": reply.status == "success", "code": reply.code}
    if reply.result is not None:
        out["result"] = reply.result.model_dump(mode="json", exclude_none=True)
    if reply.error:
        out["error"] = reply.error
    return out


def system_prompt(tools: VaultTools, config: AgentConfig, *, note_token: str = "") -> str:
    """The built-in agent's system prompt for this vault: its facts, the vault's rules, how note
    text is marked (with ``note_token``) and the configured instructions."""
    parts = [tools.ctx.rules.describe(), instructions(note_token) if note_token else ""]
    guard = "\n\n".join(p for p in parts if p)
    return build_system_prompt(tools.facts(), extra=config.instructions, guard=guard)


def _process_tools(vault: Path, data_root: Path) -> ProcessTools | None:
    memory = connect_memory(memory_db_path(data_root))
    try:
        register_shipped(memory)
        offered = [t for t in list_process_tools(memory) if t.name not in NOT_OFFERED]
    finally:
        memory.close()
    if not offered:
        return None
    # The child finds the same data folder (and so the vault's write lock) as this process.
    child_env = {**os.environ, DATA_DIR_ENV: str(data_root)}
    runner = functools.partial(run_process_tool, env=child_env)
    return ProcessTools.for_vault(offered, runner, vault)


def build_agent(
    ctx: ToolContext,
    config: AgentConfig,
    model: ModelClient,
    *,
    data_root: Path | None = None,
    auto_approve: bool = False,
) -> Agent:
    """The built-in agent on ``ctx``'s vault (see the module). ``data_root`` (the data folder
    holding memory.db) is needed for the process tools; without it none are offered."""
    vault_tools = VaultTools(ctx)
    tools: ToolSet = vault_tools
    if config.process_tools and data_root is not None:
        process = _process_tools(ctx.root, data_root)
        if process is not None:
            tools = CombinedTools(vault_tools, process)
    policy = ApprovalPolicy(auto_approve=auto_approve).with_rules(config.approvals)
    token = new_token()  # marks note text in results for this agent's runs
    return Agent(
        model,
        tools,
        system_prompt(vault_tools, config, note_token=token),
        policy=policy,
        limits=RunLimits(
            config.max_steps, config.token_budget, config.attach_budget, quiet=config.timeout
        ),
        vault=vault_tools,
        rules=ctx.rules,
        note_token=token,
    )
