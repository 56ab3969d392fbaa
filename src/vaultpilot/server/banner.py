"""What ``vaultpilot serve`` prints at start-up: where the server is, whether a model answers,
and what to do next (open the one-time login link).

``model_status(settings)`` reads the agent configuration the server will use (without making a
model client): ``(name, "")`` when a model is configured, ``(None, how to configure one)`` when
not (the same three kinds of model the agent view's no-model panel shows: Ollama, OpenAI,
Anthropic); an external agent command counts as configured. ``read_coverage(db_path)`` reads how
much of a vault's index has vectors (None before the first index). ``banner(...)`` returns the
lines, as plain text (the caller prints them without markup, so ``[server]`` and URLs stay as
they are).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vaultpilot.agent.config import how_to_configure, load_config, require_model
from vaultpilot.errors import SetupError, VaultpilotError
from vaultpilot.index.background import lock_holder
from vaultpilot.index.db import connect
from vaultpilot.index.lookup import note_count
from vaultpilot.index.semantic import EmbeddingStatus, embedding_status
from vaultpilot.server.sessions import LINK_TTL_S
from vaultpilot.server.settings import ServerSettings, is_loopback

__all__ = ["Banner", "Coverage", "banner", "model_status", "read_coverage", "server_url"]


def server_url(host: str, port: int) -> str:
    """The URL a local client uses for a server listening on ``host:port``."""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _no_model_help(config_path: Path) -> str:
    """How to configure a model, as the CLI's no-model error lists them."""
    return how_to_configure(
        config_path, lead="Set one of these in the environment of `vaultpilot serve`:"
    )


def model_status(settings: ServerSettings) -> tuple[str | None, str]:
    """The built-in agent's model name, or None and how to configure one."""
    if settings.agent.command:
        return f"external agent ({Path(settings.agent.command[0]).name})", ""
    try:
        loaded = load_config(path=settings.config_path)
        if not loaded.config.model:
            return None, _no_model_help(loaded.path)
        return require_model(loaded).model, ""
    except SetupError as err:
        return None, err.message


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of one vault's index semantic search can use."""

    notes: int  # notes in the index
    status: EmbeddingStatus
    holder: str | None = None  # another process embedding it now ("pid 12, vaultpilot index")


def read_coverage(db_path: Path) -> Coverage | None:
    """The coverage of the index at ``db_path``; None when there is no index yet (or it cannot
    be read: the server says so itself when it opens it)."""
    if not db_path.is_file():
        return None
    try:
        conn = connect(db_path, read_only=True)
    except (VaultpilotError, sqlite3.Error):
        return None
    try:
        holder = lock_holder(db_path)
        if holder is not None and holder.startswith(f"pid {os.getpid()},"):
            holder = None  # this server itself
        return Coverage(note_count(conn), embedding_status(conn), holder)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _coverage_line(coverage: Coverage | None, *, background: bool) -> str:
    """What semantic search can use now, and what happens to the rest."""
    follow = "(`vaultpilot status` shows how far)"
    if coverage is None:
        if background:
            return f"indexing at start-up, then embedding the notes in the background {follow}"
        return "no index yet; `vaultpilot index` then `vaultpilot embed` make one"
    st = coverage.status
    if st.complete:
        return f"{coverage.notes} of {coverage.notes} notes embedded"
    done = f"{st.embedded} of {st.chunks} passages embedded"
    if st.chunks == 0:  # nothing read yet: count notes, not passages
        done = f"0 of {coverage.notes} notes embedded"
    elif st.notes_pending:
        notes = "note" if st.notes_pending == 1 else "notes"
        done += f", {st.notes_pending} new or changed {notes} to read"
    if background and coverage.holder is not None:
        return (
            f"{done}; being embedded by {coverage.holder}; this server follows, and takes over "
            "if it stops"
        )
    if background:
        return f"{done}; embedding the rest in the background {follow}"
    return f"{done}; `vaultpilot embed` embeds the rest (background embedding is off)"


@dataclass(frozen=True, slots=True)
class Banner:
    settings: ServerSettings
    url: str
    login_path: str
    model: str | None
    model_help: str
    key: str | None  # shown when new (or asked for)
    key_created: bool
    coverage: Mapping[str, Coverage | None] = field(default_factory=dict)  # by VaultID


def banner(b: Banner) -> list[str]:
    s = b.settings
    lines = [f"vaultpilot Agent Communication Server on {b.url}"]
    for vid, root in s.vaults.items():
        lines.append(f'  vault "{vid}": {root}')
        if vid in b.coverage:
            where = "" if len(s.vaults) == 1 else f' in "{vid}"'
            line = _coverage_line(b.coverage[vid], background=s.background_embedding)
            lines.append(f"  semantic search{where}: {line}")
    if b.model is not None:
        lines.append(f"  model: {b.model}")
    else:
        lines.append(
            "  model: none configured. Search works; to let the agent run, configure a model "
            "and restart the server:"
        )
        lines += [f"    {line}" for line in b.model_help.splitlines()]
    if b.key is not None:
        lines.append(f"{'New API key' if b.key_created else 'API key'}: {b.key}")
    lines.append(
        f"  key file: {s.key_path} (mode 0600; `vaultpilot key show`, `vaultpilot key rotate`)"
    )
    minutes = f"{LINK_TTL_S / 60:g}"
    lines += [
        "",
        "Next: open the agent view in your browser with this link (it signs you in; it works "
        f"once, for {minutes} minutes):",
        f"  {b.url}{b.login_path}",
        "For a new link later: `vaultpilot open` (it opens the browser when there is one).",
    ]
    if not is_loopback(s.host):
        lines.append(
            f"warning: listening on {s.host}: other machines can reach this server. Anyone "
            "with the key can read and change the vaults."
        )
    lines.append("Press Ctrl+C to stop.")
    return lines
