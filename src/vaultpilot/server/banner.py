"""What ``vaultpilot serve`` prints at start-up: where the server is, whether a model answers,
and what to do next (open the one-time login link).

``model_status(settings)`` reads the agent configuration the server will use (without making a
model client): ``(name, "")`` when a model is configured, ``(None, how to configure one)`` when
not; an external agent command counts as configured. ``banner(...)`` returns the lines, as plain
text (the caller prints them without markup, so ``[server]`` and URLs stay as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vaultpilot.agent.config import load_config, require_model
from vaultpilot.errors import SetupError
from vaultpilot.server.sessions import LINK_TTL_S
from vaultpilot.server.settings import ServerSettings, is_loopback

__all__ = ["Banner", "banner", "model_status", "server_url"]


def server_url(host: str, port: int) -> str:
    """The URL a local client uses for a server listening on ``host:port``."""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def model_status(settings: ServerSettings) -> tuple[str | None, str]:
    """The built-in agent's model name, or None and how to configure one."""
    if settings.agent.command:
        return f"external agent ({Path(settings.agent.command[0]).name})", ""
    try:
        return require_model(load_config(path=settings.config_path)).model, ""
    except SetupError as err:
        return None, err.message


@dataclass(frozen=True, slots=True)
class Banner:
    settings: ServerSettings
    url: str
    login_path: str
    model: str | None
    model_help: str
    key: str | None  # shown when new (or asked for)
    key_created: bool


def banner(b: Banner) -> list[str]:
    s = b.settings
    lines = [f"vaultpilot Agent Communication Server on {b.url}"]
    lines += [f"  vault {vid}: {root}" for vid, root in s.vaults.items()]
    if s.background_embedding:
        lines.append(
            "  semantic search: embedding new and changed notes in the background "
            "(`vaultpilot status` shows how far)"
        )
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
