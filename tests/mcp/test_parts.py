"""The MCP transport's parts in-process: config snippets, vault specs, hints, background upkeep."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultpilot.cli.main import app
from vaultpilot.errors import SetupError
from vaultpilot.index.lookup import all_paths
from vaultpilot.locations import vault_data_dir
from vaultpilot.mcp import LocalVault, list_tools, parse_vault_specs
from vaultpilot.mcp.approval import _digest
from vaultpilot.tools import TOOLS

from .conftest import TIMEOUT, VAULTPILOT


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_json_config_snippets(client: str, example_vault: Path) -> None:
    done = CliRunner().invoke(app, ["mcp", "config", client, "--vault", f"notes={example_vault}"])
    assert done.exit_code == 0, done.output
    entry = json.loads(done.stdout)["mcpServers"]["vaultpilot"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).name == "vaultpilot"
    assert Path(entry["command"]).exists()
    assert entry["args"] == ["mcp", "--vault", f"notes={example_vault.resolve()}"]


def test_claude_code_command(tmp_path: Path, example_vault: Path, data_dir: Path) -> None:
    done = CliRunner().invoke(
        app,
        [
            "mcp",
            "config",
            "claude-code",
            "--vault",
            str(example_vault),
            "--data-dir",
            str(data_dir),
        ],
    )
    assert done.exit_code == 0, done.output
    words = shlex.split(done.stdout)
    assert words[:5] == ["claude", "mcp", "add", "vaultpilot", "--"]
    assert Path(words[5]).is_absolute()
    assert words[6:] == [
        "mcp", "--vault", str(example_vault.resolve()), "--data-dir", str(data_dir.absolute()),
    ]  # fmt: skip


def test_config_carries_what_this_shell_uses(
    tmp_path: Path, example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTPILOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "my config.toml"))
    monkeypatch.setenv("VAULTPILOT_EMBEDDINGS", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    done = CliRunner().invoke(app, ["mcp", "config", "cursor", "--vault", str(example_vault)])
    assert done.exit_code == 0, done.output
    entry = json.loads(done.stdout)["mcpServers"]["vaultpilot"]
    assert entry["args"][-2:] == ["--data-dir", str(tmp_path / "data")]
    assert entry["env"] == {
        "VAULTPILOT_CONFIG": str(tmp_path / "my config.toml"),
        "VAULTPILOT_EMBEDDINGS": "openai",
    }  # the same index, the same embeddings; never a key
    assert "carries over" in done.stderr and "does not exist yet" in done.stderr
    assert "sk-secret" not in done.stdout + done.stderr
    done = CliRunner().invoke(app, ["mcp", "config", "claude-code", "--vault", str(example_vault)])
    words = shlex.split(done.stdout)
    assert words[4:9] == [
        "-e", f"VAULTPILOT_CONFIG={tmp_path / 'my config.toml'}",
        "-e", "VAULTPILOT_EMBEDDINGS=openai", "--",
    ]  # fmt: skip


def test_vault_specs(tmp_path: Path) -> None:
    (tmp_path / "My Notes").mkdir()
    (tmp_path / "b").mkdir()
    specs = parse_vault_specs([str(tmp_path / "My Notes"), f"work={tmp_path / 'b'}"])
    assert specs == {"My-Notes": tmp_path / "My Notes", "work": tmp_path / "b"}
    with pytest.raises(SetupError, match="does not exist"):
        parse_vault_specs([str(tmp_path / "nope")])
    with pytest.raises(SetupError, match="Two vaults are named 'x'"):
        parse_vault_specs([f"x={tmp_path / 'b'}", f"x={tmp_path / 'My Notes'}"])
    with pytest.raises(SetupError, match="--vault"):
        parse_vault_specs([])


def test_every_tool_has_hints_and_keeps_its_schema() -> None:
    assert [t.read_only for t in TOOLS] == [True, True, False]
    for tool, listed in zip(TOOLS, list_tools(["only"]), strict=True):
        assert listed.input_schema == tool.schema()
        assert listed.annotations is not None and listed.annotations.open_world_hint is False
    two = {t.name: t.input_schema for t in list_tools(["a", "b"])}
    for tool in TOOLS:
        props = dict(two[tool.name]["properties"])
        assert props.pop("vault") == {
            "type": "string", "enum": ["a", "b"], "description": "The vault to act on: a, b.",
        }  # fmt: skip
        assert props == tool.schema()["properties"]


def test_an_answer_approves_only_the_call_it_was_asked_for() -> None:
    call = {"operation": "delete_note", "target": "A.md", "confirmDestructive": True}
    same = dict(reversed(list(call.items())))
    seen = [{"path": "A.md", "diff": "-a\n"}]
    name = "obsidian_vault_manager"
    assert _digest(name, call, seen) == _digest(name, same, seen)
    assert _digest(name, call, seen) != _digest(name, {**call, "target": "B.md"}, seen)
    # ... and only the change it was shown: the note edited since is another change.
    assert _digest(name, call, seen) != _digest(name, call, [{"path": "A.md", "diff": "-b\n"}])


def test_local_vault_indexes_in_the_background(example_vault: Path, data_dir: Path) -> None:
    vault = LocalVault(example_vault, vault_data_dir(example_vault, data_dir) / "index.db")
    try:
        vault.start(embed=False, rescan=1.0)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and "Home.md" not in vault.call(
            lambda c: all_paths(c.conn)
        ):
            time.sleep(0.05)
        (example_vault / "Added Outside.md").write_text("# Added outside\n")
        # The rescan (every second here) indexes it without any tool call.
        while time.monotonic() < deadline and "Added Outside.md" not in vault.call(
            lambda c: all_paths(c.conn)
        ):
            time.sleep(0.1)
        assert "Added Outside.md" in vault.call(lambda c: all_paths(c.conn))
    finally:
        vault.close()


def test_the_cli_loads_the_sdk_only_for_mcp() -> None:
    code = "import sys, vaultpilot.cli.main; print('mcp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert out.stdout.strip() == "False"
    assert VAULTPILOT.exists()
