"""The ``vaultpilot`` command: lazy sub-commands, plain help, -h, --version, vault discovery."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultpilot import __version__
from vaultpilot.cli.common import discover_vault
from vaultpilot.cli.main import COMMANDS, _load, app
from vaultpilot.errors import SetupError

runner = CliRunner()
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}


def test_top_level_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys; from vaultpilot.cli.main import main; sys.argv = ['vaultpilot', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('vaultpilot.cli.', 'vaultpilot.agent', 'vaultpilot.tools', 'numpy', 'httpx')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *_, loaded = done.stdout.strip().splitlines()
    assert loaded == "['vaultpilot.cli.main']"
    for name in COMMANDS:
        assert f"  {name} " in done.stdout
    assert "(soon)" not in done.stdout


def test_each_summary_matches_its_command() -> None:
    for name, (_module, summary) in COMMANDS.items():
        command = _load(name)
        assert command is not None, name
        doc = " ".join((command.help or inspect.getdoc(command.callback) or "").split())
        first = summary.rstrip(".").split(";")[0].split(",")[0].split(":")[0]
        assert first.split()[0].lower() in doc.lower(), (name, summary, doc)


def test_short_help_and_version() -> None:
    assert runner.invoke(app, ["-h"], env=ENV).exit_code == 0
    done = runner.invoke(app, ["--version"], env=ENV)
    assert done.exit_code == 0 and done.output.strip() == f"vaultpilot {__version__}"
    sub = runner.invoke(app, ["search", "-h"], env=ENV)
    assert sub.exit_code == 0 and "--tag" in sub.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_has_no_type_labels_and_keeps_brackets(name: str) -> None:
    done = runner.invoke(app, [name, "--help"], env=ENV)
    assert done.exit_code == 0, done.output
    for label in ("<bool>", "<str>", "<int>", "<list[str]>", "<float>", "<Path>"):
        assert label not in done.output, (name, done.output)
    if name == "serve":
        flat = " ".join(done.output.split())
        assert "[server.vaults] in the config file" in flat
        assert "background_embedding in [server]" in flat
        assert "\\[" not in done.output


def test_unknown_command_is_a_usage_error() -> None:
    done = runner.invoke(app, ["nosuch"], env=ENV)
    assert done.exit_code == 2
    assert "No such command" in done.output


def test_the_vault_is_the_nearest_folder_with_obsidian(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAULTPILOT_VAULT", raising=False)
    vault = tmp_path / "vault"
    deep = vault / "Projects" / "2025"
    deep.mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    assert discover_vault(None, cwd=deep) == vault.resolve()
    assert discover_vault(None, cwd=vault) == vault.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SetupError, match=r"has an \.obsidian/ folder.*--vault PATH"):
        discover_vault(None, cwd=plain)
    assert discover_vault(str(plain)) == plain.resolve()  # named explicitly: accepted
    monkeypatch.setenv("VAULTPILOT_VAULT", str(plain))
    assert discover_vault(None, cwd=deep) == plain.resolve()


def test_a_folder_without_obsidian_is_refused_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAULTPILOT_VAULT", raising=False)
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["status"], env={**ENV, "VAULTPILOT_DATA_DIR": str(tmp_path / "d")})
    assert done.exit_code == 2
    assert "No vault here" in done.output and "Traceback" not in done.output
