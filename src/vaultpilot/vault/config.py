"""The vault's own settings, read from its ``.obsidian/`` folder (semantics rules 18, 21).

Reading never fails: a missing or unreadable file gives Obsidian's defaults, and a malformed one
is reported in ``problems`` so ``status`` can show it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["AppConfig", "DailyNotesConfig", "VaultConfig", "read_vault_config"]

LinkFormat = Literal["shortest", "relative", "absolute"]


@dataclass(frozen=True, slots=True)
class AppConfig:
    """``.obsidian/app.json``; values Obsidian uses when a key is absent."""

    new_link_format: LinkFormat = "shortest"
    use_markdown_links: bool = False
    always_update_links: bool = False
    attachment_folder_path: str = "/"
    new_file_location: Literal["root", "current", "folder"] = "root"
    new_file_folder_path: str = ""
    trash_option: Literal["system", "local", "none"] = "system"
    user_ignore_filters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DailyNotesConfig:
    """``.obsidian/daily-notes.json``: folder, moment.js format, template path (no ``.md``)."""

    folder: str = ""
    format: str = "YYYY-MM-DD"
    template: str = ""


@dataclass(frozen=True, slots=True)
class VaultConfig:
    app: AppConfig = AppConfig()
    daily_notes: DailyNotesConfig = DailyNotesConfig()
    templates_folder: str = ""
    problems: tuple[str, ...] = field(default=())


def _read_json(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path.name}: could not be read ({exc}); using Obsidian's defaults")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name}: not a JSON object; using Obsidian's defaults")
        return {}
    return data


def _choice(value: Any, allowed: tuple[str, ...], default: str) -> Any:
    return value if isinstance(value, str) and value in allowed else default


def _text(value: Any, default: str = "") -> str:
    return value.strip() if isinstance(value, str) else default


def read_vault_config(vault: Path, config_dir: str = ".obsidian") -> VaultConfig:
    """Read the settings vaultpilot honours from the vault's config folder."""
    folder = vault / config_dir
    problems: list[str] = []
    app = _read_json(folder / "app.json", problems)
    daily = _read_json(folder / "daily-notes.json", problems)
    templates = _read_json(folder / "templates.json", problems)
    filters = app.get("userIgnoreFilters")
    app_cfg = AppConfig(
        new_link_format=_choice(
            app.get("newLinkFormat"), ("shortest", "relative", "absolute"), "shortest"
        ),
        use_markdown_links=app.get("useMarkdownLinks") is True,
        always_update_links=app.get("alwaysUpdateLinks") is True,
        attachment_folder_path=_text(app.get("attachmentFolderPath"), "/") or "/",
        new_file_location=_choice(
            app.get("newFileLocation"), ("root", "current", "folder"), "root"
        ),
        new_file_folder_path=_text(app.get("newFileFolderPath")),
        trash_option=_choice(app.get("trashOption"), ("system", "local", "none"), "system"),
        user_ignore_filters=tuple(f for f in filters if isinstance(f, str))
        if isinstance(filters, list)
        else (),
    )
    daily_cfg = DailyNotesConfig(
        folder=_text(daily.get("folder")).strip("/"),
        format=_text(daily.get("format")) or "YYYY-MM-DD",
        template=_text(daily.get("template")),
    )
    return VaultConfig(
        app=app_cfg,
        daily_notes=daily_cfg,
        templates_folder=_text(templates.get("folder")).strip("/"),
        problems=tuple(problems),
    )
