"""The process tools vaultpilot ships, as ``tool_registry`` entries.

Each entry's command starts the agent with this interpreter (``python -m …``), so it works in any
environment vaultpilot is installed in, with or without the console scripts on ``PATH``. The
payload schemas are derived from the command models in ``contract.models``.

``git_agent`` registers itself on every start (as its contract asks); ``register_shipped`` is
called by ``vaultpilot agents list`` and ``call`` so both agents are always listed. Neither
command names a data directory: a child started by the orchestrator finds memory.db through
``VAULTPILOT_DATA_DIR``, which the caller sets when it uses another data directory.

A process tool never inherits the orchestrator's environment, which holds secrets
(``OPENAI_API_KEY``, ``*_TOKEN``, ``DATABASE_URL``, ``AWS_*``…). ``child_env(name, source)`` keeps
only the names on one allowlist:

* ``BASE_ENV`` for every process tool: what any program needs to start and to read and write
  text (``PATH``, ``HOME``, ``LANG``, ``LC_*``, ``TZ``, the temp folder) and, on Windows, the
  variables the system itself needs (``SYSTEMROOT``, ``COMSPEC``, the profile folders…);
* plus, for the shipped agents only, ``VAULTPILOT_ENV``: ``VAULTPILOT_DATA_DIR`` and
  ``XDG_DATA_HOME`` so the child finds the same data folder (memory.db, the vault's write lock)
  as its caller, and ``PYTHONPATH`` so ``python -m vaultpilot…`` imports the same vaultpilot;
* plus, for ``git_agent``, ``GIT_ENV``: the variables that choose which of the *user's own* git
  configuration is read (``GIT_CONFIG_GLOBAL``, ``XDG_CONFIG_HOME``…) and the commit identity.
  ``git_agent`` applies the same list again before it runs git.

A tool registered by someone else gets ``BASE_ENV`` only: the registry knows its command, not
what it needs, and a secret is never ours to hand on.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from vaultpilot.contract.models import GitAgentCommandV1, ObsidianAgentCommandV1
from vaultpilot.memory.registry import ProcessTool, upsert_tool

__all__ = [
    "BASE_ENV",
    "GIT_ACTIONS",
    "GIT_ENV",
    "VAULTPILOT_ENV",
    "GitAction",
    "child_env",
    "git_agent_tool",
    "obsidian_agent_tool",
    "pick_env",
    "register_shipped",
    "shipped_tools",
]

# Names ending in "*" are prefixes. Nothing here carries a credential.
BASE_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    # Windows: Python and git do not start, or cannot find the profile, without these.
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
)
# Where the data folder and the config file (the vault's [rules]) are.
VAULTPILOT_ENV = (
    "VAULTPILOT_DATA_DIR",
    "VAULTPILOT_CONFIG",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "PYTHONPATH",
)
GIT_ENV = (
    # Which configuration files of the user git reads (never the repository's: that is what
    # git_agent distrusts), and where a search for the repository stops.
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "XDG_CONFIG_HOME",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    # Who commits.
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "EMAIL",
    "USER",
    "LOGNAME",
    "USERNAME",
)
_TOOL_ENV = {"obsidian_agent": VAULTPILOT_ENV, "git_agent": VAULTPILOT_ENV + GIT_ENV}


def pick_env(source: Mapping[str, str], allowed: tuple[str, ...]) -> dict[str, str]:
    """The entries of ``source`` named in ``allowed`` (``"LC_*"`` is a prefix); nothing else.

    Names compare case-insensitively on Windows, where the environment does too.
    """
    fold = str.upper if os.name == "nt" else str
    exact = {fold(a) for a in allowed if not a.endswith("*")}
    prefixes = tuple(fold(a[:-1]) for a in allowed if a.endswith("*"))
    return {k: v for k, v in source.items() if fold(k) in exact or fold(k).startswith(prefixes)}


def child_env(tool: str, source: Mapping[str, str]) -> dict[str, str]:
    """The environment a process tool named ``tool`` is started with, picked from ``source``."""
    return pick_env(source, BASE_ENV + _TOOL_ENV.get(tool, ()))


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


@dataclass(frozen=True, slots=True)
class GitAction:
    """One action of git_agent, as the approvals and the step labels read it: ``writes`` (it
    changes the repository, so it asks by default) and how a person says it (``verb``, and
    ``what`` when the call names nothing: "Stage files", "Git(status)")."""

    name: str
    verb: str
    what: str
    writes: bool = False


GIT_ACTIONS: Mapping[str, GitAction] = {
    a.name: a
    for a in (
        GitAction("git_status", "Git", "status"),
        GitAction("git_diff", "Git", "diff"),
        GitAction("git_log", "Git", "log"),
        GitAction("git_add", "Stage", "files", writes=True),
        GitAction("git_commit", "Commit", "changes", writes=True),
    )
}


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
