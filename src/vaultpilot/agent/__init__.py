"""Agent mode: the ReAct loop over the vault tools, its model clients, prompt and conversations.

A transport wires it together (see ``cli/agent_cmds.py``)::

    tools = CombinedTools(VaultTools(ctx), ProcessTools(...))
    agent = Agent(make_model(config), tools, build_system_prompt(vault_tools.facts()),
                  policy=ApprovalPolicy().with_rules(config.approvals), vault=vault_tools)
    controls = RunControls()
    async for event in run(agent, "Summarise @Projects/Plan", controls=controls):
        ...  # match event.kind; controls.approve / deny / override / interrupt

``run_conversation`` does the same inside a conversation stored in memory.db.
"""

from vaultpilot.agent.approvals import DEFAULT_RULES, ApprovalPolicy, Decision
from vaultpilot.agent.config import AgentConfig, LoadedConfig, load_config, require_model
from vaultpilot.agent.controls import RunControls
from vaultpilot.agent.conversations import (
    Conversation,
    get_conversation,
    list_conversations,
    load_history,
    new_conversation,
    run_conversation,
)
from vaultpilot.agent.events import AgentEvent, FinishReason, event_to_dict
from vaultpilot.agent.loop import Agent, RunLimits, VaultAccess, run
from vaultpilot.agent.model import ModelClient, ModelError
from vaultpilot.agent.prompt import VaultFacts, build_system_prompt
from vaultpilot.agent.providers import make_model
from vaultpilot.agent.toolset import (
    CombinedTools,
    FunctionTools,
    ProcessRunner,
    ProcessTools,
    ToolSet,
    ToolSpec,
)
from vaultpilot.agent.vault_tools import VaultTools
from vaultpilot.agent.versions import NoteVersions

__all__ = [
    "DEFAULT_RULES",
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "ApprovalPolicy",
    "CombinedTools",
    "Conversation",
    "Decision",
    "FinishReason",
    "FunctionTools",
    "LoadedConfig",
    "ModelClient",
    "ModelError",
    "NoteVersions",
    "ProcessRunner",
    "ProcessTools",
    "RunControls",
    "RunLimits",
    "ToolSet",
    "ToolSpec",
    "VaultAccess",
    "VaultFacts",
    "VaultTools",
    "build_system_prompt",
    "event_to_dict",
    "get_conversation",
    "list_conversations",
    "load_config",
    "load_history",
    "make_model",
    "new_conversation",
    "require_model",
    "run",
    "run_conversation",
]
