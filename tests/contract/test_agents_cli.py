"""``vaultpilot agents …`` and ``vaultpilot contract …`` through typer's runner, mounted as the
main CLI mounts them; the tools they call run as real child processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from vaultpilot.cli.agents import agents_app, contract_app
from vaultpilot.contract.models import json_schema
from vaultpilot.memory.db import connect
from vaultpilot.memory.registry import ProcessTool, upsert_tool

app = typer.Typer()
app.add_typer(agents_app, name="agents")
app.add_typer(contract_app, name="contract")


def vp(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    path.mkdir()
    (path / "Plan.md").write_text("# Plan\n\n- [ ] ship\n", encoding="utf-8")
    return path


def test_list(data_dir: Path) -> None:
    out = vp("agents", "list")
    assert out.exit_code == 0, out.output
    assert "obsidian_agent" in out.output and "git_agent" in out.output
    assert "read_note" in out.output and "git_commit" in out.output
    rows = json.loads(vp("agents", "list", "--json").stdout)
    assert [r["name"] for r in rows] == ["git_agent", "obsidian_agent"]
    assert rows[1]["actions"] == ["create_note", "read_note", "update_note"]
    assert rows[1]["command"] == [sys.executable, "-m", "vaultpilot.contract.obsidian_agent"]
    assert (data_dir / "memory.db").exists()


def test_list_with_a_data_dir_flag(tmp_path: Path) -> None:
    flag_dir = tmp_path / "elsewhere"
    assert vp("agents", "list", "--data-dir", str(flag_dir)).exit_code == 0
    assert (flag_dir / "memory.db").exists()


def test_call_read_note(data_dir: Path, vault: Path) -> None:
    payload = json.dumps({"vault_path": str(vault), "note_name": "Plan"})
    out = vp("agents", "call", "obsidian_agent", "--action", "read_note", "--payload", payload)
    assert out.exit_code == 0, out.output
    assert "success (code 0)" in out.output and "- [ ] ship" in out.output

    raw = vp(
        "agents", "call", "obsidian_agent", "--action", "read_note", "--payload", payload, "--json"
    )
    reply = json.loads(raw.stdout)
    assert reply["result"]["data"] == "# Plan\n\n- [ ] ship\n" and reply["api_version"] == "V1"


def test_call_git_agent_registers_in_the_same_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not a repository: git_agent runs in the caller's directory
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("VAULTPILOT_DATA_DIR", str(tmp_path / "env-dir"))
    flag_dir = tmp_path / "flagged"
    out = vp(
        "agents",
        "call",
        "git_agent",
        "--action",
        "git_log",
        "--payload",
        '{"limit": "1"}',
        "--data-dir",
        str(flag_dir),
        "--json",
    )
    assert out.exit_code == 1, out.output
    assert json.loads(out.stdout)["result"]["metadata"] == {"exit_code": 128}
    assert (flag_dir / "memory.db").exists()
    assert not (tmp_path / "env-dir").exists()  # the child was told about --data-dir


def test_a_tool_error_exits_1(data_dir: Path, vault: Path) -> None:
    payload = json.dumps({"vault_path": str(vault), "note_name": "Missing"})
    out = vp("agents", "call", "obsidian_agent", "--action", "read_note", "--payload", payload)
    assert out.exit_code == 1
    assert "error (code 3)" in out.output and "does not exist" in out.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--action", "x"], "No tool named 'nope' is registered."),
        (["obsidian_agent", "--action", "x", "--payload", "{oops"], "--payload is not valid JSON"),
        (["obsidian_agent", "--action", "x", "--payload", "[1]"], "must be a JSON object"),
    ],
)
def test_bad_command_lines_exit_2(data_dir: Path, args: list[str], message: str) -> None:
    out = vp("agents", "call", *args)
    assert out.exit_code == 2 and message in " ".join(out.output.split())


def test_a_tool_without_a_valid_reply_exits_3(data_dir: Path) -> None:
    conn = connect(data_dir / "memory.db")
    upsert_tool(conn, ProcessTool("liar", "Lies.", {}, (sys.executable, "-c", "print('hi')")))
    conn.close()
    out = vp("agents", "call", "liar", "--action", "x", "--timeout", "20")
    assert out.exit_code == 3 and "[not_json]" in out.output


def test_contract_schema() -> None:
    out = vp("contract", "schema", "ActionResponse")
    assert out.exit_code == 0
    assert json.loads(out.stdout) == json_schema("ActionResponse")
    bad = vp("contract", "schema", "Nope")
    assert bad.exit_code == 2 and "No contract schema named 'Nope'" in bad.output


def test_list_at_80_columns_wraps_at_words(data_dir: Path) -> None:
    out = CliRunner().invoke(app, ["agents", "list"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any(line.endswith("-m vaultpilot.contract.obsidian_agent") for line in lines)
    words = set(out.output.split())
    assert {"git_commit,", "update_note", "repo_path."} <= words, out.output
    assert all(line == line.rstrip() for line in lines)


def test_list_keeps_a_long_command_on_one_line_to_copy(data_dir: Path) -> None:
    python = "/home/someone/a rather long/path/to/a/checkout/of/the/project/.venv/bin/python"
    conn = connect(data_dir / "memory.db")
    upsert_tool(conn, ProcessTool("deep", "Deep.", {}, (python, "-m", "some.module")))
    conn.close()
    out = CliRunner().invoke(app, ["agents", "list"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    quoted = "'/home/someone/a rather long/path/to/a/checkout/of/the/project/.venv/bin/python'"
    assert f"  command: {quoted} -m some.module" in out.output.splitlines(), out.output


def test_call_gives_the_vault_when_the_payload_names_none(data_dir: Path, vault: Path) -> None:
    payload = json.dumps({"note_name": "Plan"})
    args = ["agents", "call", "obsidian_agent", "--action", "read_note", "--payload", payload]
    out = vp(*args, "--vault", str(vault))
    assert out.exit_code == 0, out.output
    assert "- [ ] ship" in out.output
    elsewhere = vault.parent / "other"
    elsewhere.mkdir()
    (elsewhere / "Plan.md").write_text("# Other plan\n", encoding="utf-8")
    named = json.dumps({"note_name": "Plan", "vault_path": str(elsewhere)})
    out = vp(*args[:-1], named, "--vault", str(vault))  # the payload's own vault wins
    assert out.exit_code == 0 and "Other plan" in out.output, out.output
    out = vp(*args, "--vault", str(vault / "missing"))
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
