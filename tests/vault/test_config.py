"""Vault settings: rules 18 (daily notes, templates) and 21 (app.json), plus the settings that
rules 7 (link format), 19 (rename) and 20 (trash) depend on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.vault.helpers import write
from vaultpilot.vault.config import AppConfig, DailyNotesConfig, VaultConfig, read_vault_config


def _vault(tmp_path: Path, files: dict[str, object], config_dir: str = ".obsidian") -> Path:
    root = tmp_path / "vault"
    root.mkdir(parents=True)
    for name, data in files.items():
        text = data if isinstance(data, str) else json.dumps(data)
        write(root, f"{config_dir}/{name}", text)
    return root


# --- Rule 18: daily notes and templates -----------------------------------------------------------


def test_rule_18_daily_notes_folder_and_template_without_md(tmp_path: Path) -> None:
    root = _vault(
        tmp_path,
        {"daily-notes.json": {"folder": "Daily", "template": "Templates/Daily Note Template"}},
    )
    cfg = read_vault_config(root)
    assert cfg.daily_notes == DailyNotesConfig(
        folder="Daily", format="YYYY-MM-DD", template="Templates/Daily Note Template"
    )
    assert cfg.problems == ()


def test_rule_18_format_with_slash_kept_for_subfolders(tmp_path: Path) -> None:
    root = _vault(
        tmp_path,
        {"daily-notes.json": {"folder": "/Journal/", "format": "YYYY/MM/YYYY-MM-DD dddd"}},
    )
    assert read_vault_config(root).daily_notes == DailyNotesConfig(
        folder="Journal", format="YYYY/MM/YYYY-MM-DD dddd", template=""
    )


def test_rule_18_empty_format_means_default(tmp_path: Path) -> None:
    root = _vault(tmp_path, {"daily-notes.json": {"folder": "", "format": "  "}})
    assert read_vault_config(root).daily_notes.format == "YYYY-MM-DD"


def test_rule_18_templates_folder(tmp_path: Path) -> None:
    """Partial: template variables ({{title}}, {{date:FMT}}) are not expanded by the vault
    engine; only where templates live is read."""
    root = _vault(
        tmp_path,
        {"templates.json": {"folder": "Templates/", "dateFormat": "YYYY-MM-DD"}},
    )
    assert read_vault_config(root).templates_folder == "Templates"


def test_rule_18_missing_config_gives_defaults(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    assert read_vault_config(root) == VaultConfig()
    assert VaultConfig().daily_notes == DailyNotesConfig("", "YYYY-MM-DD", "")


def test_rule_18_malformed_files_reported_not_raised(tmp_path: Path) -> None:
    root = _vault(tmp_path, {"daily-notes.json": "{not json", "templates.json": "[1, 2]"})
    cfg = read_vault_config(root)
    assert cfg.daily_notes == DailyNotesConfig()
    assert cfg.templates_folder == ""
    assert len(cfg.problems) == 2
    assert cfg.problems[0].startswith("daily-notes.json: could not be read (")
    assert cfg.problems[1] == "templates.json: not a JSON object; using Obsidian's defaults"


# --- Rule 21: .obsidian/app.json ------------------------------------------------------------------


def test_rule_21_app_json_keys(tmp_path: Path) -> None:
    root = _vault(
        tmp_path,
        {
            "app.json": {
                "alwaysUpdateLinks": True,
                "newLinkFormat": "relative",
                "useMarkdownLinks": True,
                "attachmentFolderPath": "./assets",
                "newFileLocation": "folder",
                "newFileFolderPath": "Inbox",
                "trashOption": "local",
                "userIgnoreFilters": ["Archive/", 3, "*.tmp"],
                "showUnsupportedFiles": True,
                "promptDelete": False,
            }
        },
    )
    assert read_vault_config(root).app == AppConfig(
        new_link_format="relative",
        use_markdown_links=True,
        always_update_links=True,
        attachment_folder_path="./assets",
        new_file_location="folder",
        new_file_folder_path="Inbox",
        trash_option="local",
        user_ignore_filters=("Archive/", "*.tmp"),
    )


def test_rule_21_defaults(tmp_path: Path) -> None:
    """alwaysUpdateLinks: the help is ambiguous and TY says false (prompt). Pinned as false:
    links are never rewritten without being asked, which loses nothing."""
    root = _vault(tmp_path, {"app.json": {}})
    assert read_vault_config(root).app == AppConfig(
        new_link_format="shortest",
        use_markdown_links=False,
        always_update_links=False,
        attachment_folder_path="/",
        new_file_location="root",
        new_file_folder_path="",
        trash_option="system",
        user_ignore_filters=(),
    )


def test_rule_21_attachment_folder_values_kept_verbatim(tmp_path: Path) -> None:
    """The meaning of "/", "./", "./sub" comes from plugin code, not official docs: the value is
    kept exactly as written so whoever places attachments can apply it."""
    for n, value in enumerate(["/", "./", "./sub", "Attachments"]):
        root = _vault(tmp_path / str(n), {"app.json": {"attachmentFolderPath": value}})
        assert read_vault_config(root).app.attachment_folder_path == value


def test_rule_21_invalid_values_fall_back(tmp_path: Path) -> None:
    root = _vault(
        tmp_path,
        {
            "app.json": {
                "newLinkFormat": "weird",
                "alwaysUpdateLinks": "yes",
                "useMarkdownLinks": 1,
                "newFileLocation": 7,
                "trashOption": "shred",
                "userIgnoreFilters": "Archive/",
                "attachmentFolderPath": "",
            }
        },
    )
    assert read_vault_config(root).app == AppConfig()


def test_rule_21_config_folder_can_be_renamed(tmp_path: Path) -> None:
    root = _vault(
        tmp_path,
        {"app.json": {"trashOption": "none"}, "daily-notes.json": {"folder": "Days"}},
        config_dir=".config-obsidian",
    )
    assert read_vault_config(root).app.trash_option == "system"
    cfg = read_vault_config(root, ".config-obsidian")
    assert cfg.app.trash_option == "none"
    assert cfg.daily_notes.folder == "Days"


def test_rule_21_non_object_app_json_reported(tmp_path: Path) -> None:
    root = _vault(tmp_path, {"app.json": "[]"})
    cfg = read_vault_config(root)
    assert cfg.app == AppConfig()
    assert cfg.problems == ("app.json: not a JSON object; using Obsidian's defaults",)


# --- Settings that rules 7, 19 and 20 depend on ---------------------------------------------------


def test_rule_07_link_format_settings(tmp_path: Path) -> None:
    """Partial: no link writer exists yet; the two settings it must follow are read."""
    root = _vault(tmp_path, {"app.json": {"newLinkFormat": "absolute", "useMarkdownLinks": True}})
    app = read_vault_config(root).app
    assert (app.new_link_format, app.use_markdown_links) == ("absolute", True)


def test_rule_19_always_update_links_setting(tmp_path: Path) -> None:
    root = _vault(tmp_path, {"app.json": {"alwaysUpdateLinks": True}})
    assert read_vault_config(root).app.always_update_links is True


def test_rule_20_trash_option_values(tmp_path: Path) -> None:
    for value in ("system", "local", "none"):
        root = _vault(tmp_path / value, {"app.json": {"trashOption": value}})
        assert read_vault_config(root).app.trash_option == value
