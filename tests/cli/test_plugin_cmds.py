"""``vaultpilot plugin install``: copying the Obsidian plugin into a vault, with real files and,
where npm is installed, a real ``npm ci`` and ``npm run build`` of a small plugin folder."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from vaultpilot.cli import plugin_cmds

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "obsidian-plugin"


def cli(*args: str) -> tuple[int, str]:
    app = typer.Typer()
    plugin_cmds.register(app)
    app.command("noop", hidden=True)(lambda: None)  # a group of one command would be flattened
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300", "NO_COLOR": "1"})
    return result.exit_code, result.output


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "My Notes"
    (folder / ".obsidian").mkdir(parents=True)
    (folder / "Inbox.md").write_text("# Inbox\n", encoding="utf-8")
    return folder


def built_plugin(folder: Path, main: str = "// built\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(
        json.dumps({"id": "vaultpilot", "version": "9.9.9"}), encoding="utf-8"
    )
    (folder / "package.json").write_text('{"name": "p", "version": "9.9.9"}', encoding="utf-8")
    (folder / "main.js").write_text(main, encoding="utf-8")
    (folder / "styles.css").write_text(".vaultpilot-view {}\n", encoding="utf-8")
    return folder


def test_the_plugin_version_is_the_python_package_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    version = pyproject["project"]["version"]
    manifest = json.loads((PLUGIN / "manifest.json").read_text("utf-8"))
    package = json.loads((PLUGIN / "package.json").read_text("utf-8"))
    assert manifest["version"] == version
    assert package["version"] == version
    assert manifest["id"] == plugin_cmds.PLUGIN_ID
    assert manifest["isDesktopOnly"] is True
    assert {"name", "minAppVersion", "description", "author"} <= manifest.keys()


def test_install_copies_the_built_plugin_and_says_how_to_enable_it(
    vault: Path, tmp_path: Path
) -> None:
    source = built_plugin(tmp_path / "plugin")
    dest = vault / ".obsidian" / "plugins" / "vaultpilot"
    dest.mkdir(parents=True)
    (dest / "data.json").write_text('{"apiKey": "kept"}', encoding="utf-8")
    (dest / "main.js").write_text("// old\n", encoding="utf-8")

    code, out = cli("plugin", "install", "--vault", str(vault), "--plugin-dir", str(source))

    assert code == 0, out
    assert sorted(p.name for p in dest.iterdir()) == [
        "data.json",
        "main.js",
        "manifest.json",
        "styles.css",
    ]
    assert (dest / "main.js").read_text("utf-8") == "// built\n"
    assert (dest / "main.js").stat().st_mode == (source / "main.js").stat().st_mode
    assert (dest / "data.json").read_text("utf-8") == '{"apiKey": "kept"}'  # settings survive
    assert f"Installed the vaultpilot plugin 9.9.9 into {dest.resolve()}" in out
    assert "Settings → Community plugins" in out
    assert f'vaultpilot serve --vault "{vault.resolve()}"' in out
    # Nothing else in the vault was touched.
    assert sorted(p.name for p in vault.iterdir()) == [".obsidian", "Inbox.md"]
    assert sorted(p.name for p in (vault / ".obsidian").iterdir()) == ["plugins"]


def test_a_folder_that_is_not_a_vault_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    source = built_plugin(tmp_path / "plugin")

    code, out = cli("plugin", "install", "--vault", str(folder), "--plugin-dir", str(source))

    assert code == 2
    assert "is not an Obsidian vault (it has no .obsidian/ folder)" in out
    assert list(folder.iterdir()) == []
    code, out = cli("plugin", "install", "--vault", str(tmp_path / "missing"))
    assert code == 2 and "is not a folder" in out


def test_an_unbuilt_plugin_without_npm_says_to_run_make_plugin(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = built_plugin(tmp_path / "plugin")
    (source / "main.js").unlink()
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    code, out = cli("plugin", "install", "--vault", str(vault), "--plugin-dir", str(source))

    assert code == 2
    assert "npm is not installed" in out and "make plugin" in out
    assert not (vault / ".obsidian" / "plugins").exists()


def test_sources_that_are_not_a_plugin_are_named(vault: Path, tmp_path: Path) -> None:
    code, out = cli("plugin", "install", "--vault", str(vault), "--plugin-dir", str(tmp_path))
    assert code == 2
    assert "The plugin's sources are not in" in out and "--plugin-dir" in out


NPM = shutil.which("npm")
needs_npm = pytest.mark.skipif(NPM is None, reason="npm is not installed")


def npm_project(folder: Path, build: str) -> Path:
    """A plugin folder whose `npm run build` runs `build` (no dependencies, so ci is offline)."""
    folder.mkdir(parents=True)
    package = {"name": "p", "version": "1.2.3", "private": True, "scripts": {"build": build}}
    (folder / "package.json").write_text(json.dumps(package), encoding="utf-8")
    lock = {
        "name": "p",
        "version": "1.2.3",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "p", "version": "1.2.3"}},
    }
    (folder / "package-lock.json").write_text(json.dumps(lock), encoding="utf-8")
    (folder / "manifest.json").write_text('{"id": "vaultpilot", "version": "1.2.3"}', "utf-8")
    return folder


@needs_npm
def test_a_missing_main_js_is_built_with_npm_first(vault: Path, tmp_path: Path) -> None:
    source = npm_project(
        tmp_path / "plugin",
        "node -e \"const fs=require('fs');fs.writeFileSync('main.js','// npm built\\n');"
        "fs.writeFileSync('styles.css','')\"",
    )

    code, out = cli("plugin", "install", "--vault", str(vault), "--plugin-dir", str(source))

    assert code == 0, out
    main = vault / ".obsidian" / "plugins" / "vaultpilot" / "main.js"
    assert main.read_text("utf-8") == "// npm built\n"


@needs_npm
def test_a_failed_build_is_reported_and_nothing_is_installed(vault: Path, tmp_path: Path) -> None:
    source = npm_project(
        tmp_path / "plugin", "node -e \"console.error('syntax error in main.ts'); process.exit(3)\""
    )

    code, out = cli("plugin", "install", "--vault", str(vault), "--plugin-dir", str(source))

    assert code == 1
    assert "Building the plugin failed at `npm run build`" in out
    assert "syntax error in main.ts" in out and "make plugin" in out
    assert not (vault / ".obsidian" / "plugins").exists()
