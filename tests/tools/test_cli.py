"""``vaultpilot tool``: any tool from the shell, JSON in, JSON out, meaningful exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from vaultpilot.cli.tool_cmds import register

app = typer.Typer()
register(app)


@app.callback()
def _root() -> None:
    """A stand-in for the vaultpilot app (register adds 'tool' to it)."""


runner = CliRunner()


def test_list_prints_every_schema() -> None:
    out = runner.invoke(app, ["tool", "--list"])
    assert out.exit_code == 0, out.output
    specs = json.loads(out.stdout)
    assert [s["name"] for s in specs] == [
        "obsidian_query_vault",
        "obsidian_get_context",
        "obsidian_vault_manager",
    ]


@pytest.mark.usefixtures("data_dir")
def test_call_a_tool(vault: Path) -> None:
    args = json.dumps({"queryType": "semantic_search", "query": "sourdough", "limit": 1})
    out = runner.invoke(
        app, ["tool", "obsidian_query_vault", "--json", args, "--vault", str(vault)]
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["results"][0]["path"] == "Recipes/Sourdough Starter.md"


@pytest.mark.usefixtures("data_dir")
def test_stdin_and_failures_exit_2(vault: Path) -> None:
    out = runner.invoke(
        app,
        ["tool", "obsidian_vault_manager", "--json", "-", "--vault", str(vault)],
        input='{"operation": "delete_note", "target": "Inbox.md"}',
    )
    assert out.exit_code == 2
    assert "requires confirmDestructive=true" in json.loads(out.stdout)["message"]
    bad = runner.invoke(
        app, ["tool", "obsidian_query_vault", "--json", "{oops", "--vault", str(vault)]
    )
    assert bad.exit_code == 2 and "--json is not valid JSON" in bad.output
    nameless = runner.invoke(app, ["tool"])
    assert nameless.exit_code == 2 and "Name the tool to call" in nameless.output


def test_the_list_marks_dry_run_on_the_operations_that_take_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vaultpilot.cli.tool_cmds import _summary
    from vaultpilot.tools import TOOLS, tool_schemas

    _summary()
    lines = {
        line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:2] == "  "
    }
    takes = {s["name"]: "dryRun" in s["parameters"].get("properties", {}) for s in tool_schemas()}
    assert takes == {
        "obsidian_query_vault": False,
        "obsidian_get_context": False,
        "obsidian_vault_manager": True,
    }
    for tool in TOOLS:
        for op in tool.operations.values():
            assert ("dryRun" in lines[op.name]) == (op.dry_run and takes[tool.name]), lines[op.name]
    assert "dryRun" in lines["move_note"] and "dryRun" not in lines["read_note"]
