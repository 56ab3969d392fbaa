"""``vaultpilot plugin install``: put the Obsidian plugin into a vault.

    vaultpilot plugin install --vault ~/Notes          copy the built plugin into the vault
    vaultpilot plugin install --vault ~/Notes --build  rebuild it first (needs npm)

The plugin is ``obsidian-plugin/`` of this checkout (``--plugin-dir`` names another folder).
Its built files, ``manifest.json``, ``main.js`` and ``styles.css``, are copied into
``<vault>/.obsidian/plugins/vaultpilot/``. That is the one place vaultpilot ever writes into
``.obsidian/``, and only on this explicit command: no tool and no agent run does. The plugin's
own ``data.json`` (its settings, with the API key) is left as it is.

Contract:

* A folder without ``.obsidian/`` is not an Obsidian vault and is refused before anything is
  written (``InvalidArgumentError``).
* When ``main.js`` or ``styles.css`` is missing (or with ``--build``) the plugin is built first
  with ``npm ci`` and ``npm run build``; without npm that is a ``SetupError`` saying to run
  ``make plugin``; a failed build is an ``ExternalError`` with the end of npm's output.
* The files are first copied next to their destination under temporary names and only then
  renamed into place, so a failure leaves the previous plugin as it was, never half of each.
* On success it prints where the plugin went and how to enable it (Community plugins).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultpilot.cli.common import console, handle_errors
from vaultpilot.errors import (
    ExternalError,
    InvalidArgumentError,
    NotFoundError,
    OSErrorMapping,
    SetupError,
    map_os_errors,
)

__all__ = ["PLUGIN_FILES", "PLUGIN_ID", "default_plugin_dir", "install_plugin", "register"]

PLUGIN_ID = "vaultpilot"
PLUGIN_FILES = ("manifest.json", "main.js", "styles.css")
_BUILT = ("main.js", "styles.css")
_BUILD_TIMEOUT_S = 600.0
_MAKE_PLUGIN = "Run `make plugin` to see what fails."
_SETUP: OSErrorMapping = {OSError: SetupError}


def default_plugin_dir() -> Path:
    """``obsidian-plugin/`` at the root of the checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "obsidian-plugin"


def _check_vault(vault: Path) -> Path:
    folder = vault.expanduser()
    if not folder.is_dir():
        raise NotFoundError(f"{folder} is not a folder: pass the vault's folder with --vault.")
    if not (folder / ".obsidian").is_dir():
        raise InvalidArgumentError(
            f"{folder} is not an Obsidian vault (it has no .obsidian/ folder). Pass the folder "
            "Obsidian opens as the vault, or open this folder as a vault in Obsidian once "
            "(that creates .obsidian/) and run this again."
        )
    return folder.resolve()


def _check_source(source: Path) -> Path:
    if not (source / "manifest.json").is_file() or not (source / "package.json").is_file():
        raise SetupError(
            f"The plugin's sources are not in {source}: run this from a checkout of the vaultpilot "
            "repository (installed with `pip install -e .`), or name the plugin's folder with "
            "--plugin-dir."
        )
    return source


def _run_npm(npm: str, args: list[str], source: Path) -> None:
    try:
        with map_os_errors(npm, "run", {OSError: ExternalError}, advice=_MAKE_PLUGIN):
            done = subprocess.run(
                [npm, *args],
                cwd=source,
                capture_output=True,
                text=True,
                timeout=_BUILD_TIMEOUT_S,
                check=False,
            )
    except subprocess.TimeoutExpired:
        raise ExternalError(
            f"`npm {' '.join(args)}` in {source} took more than {_BUILD_TIMEOUT_S:.0f} s; "
            "run `make plugin` to see what it is doing."
        ) from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise ExternalError(
            f"Building the plugin failed at `npm {' '.join(args)}` (exit {done.returncode}):\n"
            f"{tail}\nRun `make plugin` to see the whole output."
        )


def _build(source: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SetupError(
            f"The plugin is not built ({source / 'main.js'} is missing) and npm is not installed "
            "to build it. Install Node.js (with npm), run `make plugin`, then run this again."
        )
    _run_npm(npm, ["ci", "--no-audit", "--no-fund"], source)
    _run_npm(npm, ["run", "build"], source)
    missing = [n for n in _BUILT if not (source / n).is_file()]
    if missing:
        raise ExternalError(
            f"`npm run build` in {source} finished without producing {', '.join(missing)}; "
            "run `make plugin` to see its output."
        )


def _copy_all(source: Path, dest: Path) -> None:
    """Stage every file beside its destination, then rename them all into place."""
    staged: list[tuple[Path, Path]] = []
    try:
        with map_os_errors(dest, "write the plugin into"):
            dest.mkdir(parents=True, exist_ok=True)
            for name in PLUGIN_FILES:
                fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=dest)
                os.close(fd)
                staged.append((Path(tmp_name), dest / name))
                shutil.copyfile(source / name, tmp_name)
                # mkstemp makes the file 0600; the plugin's files are as readable as their sources.
                shutil.copymode(source / name, tmp_name)
            for staged_file, final in staged:
                os.replace(staged_file, final)
    finally:
        for leftover, _ in staged:
            with contextlib.suppress(FileNotFoundError):  # renamed into place: nothing left
                leftover.unlink()


def install_plugin(vault: Path, *, source: Path, build: bool = False) -> tuple[Path, str]:
    """Copy the built plugin into ``vault``; returns the destination and the plugin's version."""
    folder = _check_vault(vault)
    source = _check_source(source)
    if build or any(not (source / n).is_file() for n in _BUILT):
        _build(source)
    manifest = source / "manifest.json"
    restore = "Restore it from the repository."
    try:
        with map_os_errors(manifest, "read the plugin's manifest", _SETUP, advice=restore):
            text = manifest.read_text("utf-8")
        version = str(json.loads(text)["version"])
    except (ValueError, KeyError, TypeError):
        raise SetupError(
            f"{manifest} cannot be read as the plugin's manifest; restore it from the repository."
        ) from None
    dest = folder / ".obsidian" / "plugins" / PLUGIN_ID
    _copy_all(source, dest)
    return dest, version


def register(app: typer.Typer) -> None:
    """Add ``plugin install`` to ``app``."""
    plugin_app = typer.Typer(help="The Obsidian plugin.", no_args_is_help=True)
    app.add_typer(plugin_app, name="plugin")

    @plugin_app.command("install")
    @handle_errors
    def install(
        vault: Annotated[
            Path,
            typer.Option(
                "--vault", help="The Obsidian vault's folder (the one holding .obsidian/)."
            ),
        ],
        build: Annotated[
            bool, typer.Option("--build", help="Rebuild the plugin first (needs npm).")
        ] = False,
        plugin_dir: Annotated[
            Path | None,
            typer.Option(
                "--plugin-dir",
                help="The plugin's folder (default: obsidian-plugin/ of this checkout).",
            ),
        ] = None,
    ) -> None:
        """Copy the Obsidian plugin into a vault (.obsidian/plugins/vaultpilot/)."""
        dest, version = install_plugin(
            vault, source=plugin_dir or default_plugin_dir(), build=build
        )
        root = dest.parents[2]
        console.print(
            f"Installed the vaultpilot plugin {version} into {escape(str(dest))}", soft_wrap=True
        )
        console.print(
            "Enable it in Obsidian: Settings → Community plugins (turn off Restricted mode if "
            "it is on), then switch on vaultpilot. If it was already on, turn it off and on "
            "again to load this version.",
            soft_wrap=True,
        )
        console.print(
            "Then, in its settings, paste the server's API key and press Test connection. "
            f'The server for this vault: vaultpilot serve --vault "{root}"',
            soft_wrap=True,
        )
