"""GetVaultContext: the ``IAgentVaultContext`` of one vault, built from the index and the runs.

* ``vaultId``: the VaultID asked for.
* ``currentGoal``: the goal of the vault's active agent run, else of its last run, else "".
* ``systemPrompt``: the built-in agent's system prompt for this vault (its role, how it uses the
  tools, today's date, the vault's facts and the configured ``instructions``: the same text
  ``agent.build`` gives the built-in agent), so an external agent can act the same way.
* ``stateSummary``: a few lines: the vault's size, the most recently changed notes, how much of
  it semantic search covers, how the index is kept fresh (the file watcher), the agent's state
  and the last status an agent reported.
* ``activeFiles``: the notes the active (else last) run named in its tool calls or attached with
  ``@``, in first-named order.
* ``availableTools``: the commands an agent may call here: the five of the specification
  (``ExecuteShell`` only when enabled) and the three vault tools.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultpilot.agent.build import system_prompt
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.vault_tools import VaultTools
from vaultpilot.index.background import EmbedProgress, describe_coverage
from vaultpilot.index.lookup import folder_note_counts
from vaultpilot.index.semantic import EmbeddingStatus
from vaultpilot.server.models import ACS_TOOLS, AGENT_TOOLS
from vaultpilot.server.runs import RunRecord
from vaultpilot.tools import ToolContext
from vaultpilot.tools.api import recent_notes
from vaultpilot.tools.session import LiveInfo

__all__ = ["StatusRecord", "available_tools", "build_vault_context"]

_RECENT = 5


@dataclass(frozen=True, slots=True)
class StatusRecord:
    """The last ReportStatus of a vault."""

    status: str
    message: str
    time: float


def available_tools(*, shell_enabled: bool) -> list[str]:
    names = [n for n in ACS_TOOLS if shell_enabled or n != "ExecuteShell"]
    return [*names, *AGENT_TOOLS]


def _vault_facts(ctx: ToolContext, config: AgentConfig) -> tuple[str, list[str], int, int]:
    """The system prompt, the most recent notes, the note and folder counts (one locked call)."""
    prompt = system_prompt(VaultTools(ctx), config)
    counts = folder_note_counts(ctx.conn)
    notes = sum(n for n, _ in counts.values())
    folders = sum(1 for folder, (n, _) in counts.items() if folder and n)
    return prompt, recent_notes(ctx, _RECENT), notes, folders


def _agent_line(record: RunRecord | None) -> str:
    if record is None:
        return "Agent: no run yet."
    state = "working on" if record.active else "last run was"
    return f'Agent: {state} "{record.goal}" (run {record.run_id}, {record.agent}).'


def _index_line(live: LiveInfo) -> str:
    state, reason = live["state"], live["reason"]
    text = {
        "live": "kept live by a file watcher (changes made in Obsidian are found within a second)",
        "starting": "the file watcher is starting",
        "rescanning": "rescanning the vault",
        "failed": "the file watcher failed; each call syncs first",
        "off": "synced before each call (no file watcher)",
        "stopped": "the file watcher has stopped; each call syncs first",
    }[state]
    return f"Index: {text}" + (f" ({reason})." if reason else ".")


def build_vault_context(
    ctx: ToolContext,
    *,
    vault_id: str,
    record: RunRecord | None,
    status: StatusRecord | None,
    shell_enabled: bool,
    coverage: EmbeddingStatus,
    embedding: EmbedProgress | None = None,
    config: AgentConfig | None = None,
    live: LiveInfo | None = None,
) -> dict[str, object]:
    """The ``IAgentVaultContext`` JSON (blocking: call under the vault's lock, in a thread).
    ``config`` is the built-in agent's (its instructions join the system prompt)."""
    prompt, recent, notes, folders = _vault_facts(ctx, config or AgentConfig())
    lines = [f"Vault '{ctx.root.name}' (VaultID {vault_id}): {notes} notes in {folders} folders."]
    if recent:
        lines.append("Recently changed: " + ", ".join(recent) + ".")
    lines.append(f"Semantic search: {describe_coverage(coverage, embedding)}.")
    if live is not None:
        lines.append(_index_line(live))
    lines.append(_agent_line(record))
    if status is not None:
        said = f": {status.message}" if status.message else ""
        lines.append(f"Last reported status: {status.status}{said}")
    return {
        "vaultId": vault_id,
        "currentGoal": record.goal if record else "",
        "systemPrompt": prompt,
        "stateSummary": "\n".join(lines),
        "activeFiles": list(record.files) if record else [],
        "availableTools": available_tools(shell_enabled=shell_enabled),
    }
