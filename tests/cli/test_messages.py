"""What the CLI says, run as a user runs it: a huge argument is cut in the message (with its
length), an empty ``--vault`` is an error, ``agents call`` errors read like every other
command's, the chat's /help and goodbye say what a new user needs, and ``index --rebuild``
reports no "0 chunks/s"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.scripted_env import scripted_env
from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn
from vaultpilot.cli.main import app

BIN = Path(sys.executable).parent / "vaultpilot"
HUGE = "a" * 130_000


def vp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "COLUMNS": "60", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=full, timeout=120)


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize("command", ["search", "links", "backlinks"])
def test_a_huge_argument_is_cut_in_the_message(command: str, example_vault: Path) -> None:
    out = vp(command, HUGE, "--vault", str(example_vault))
    assert out.returncode == 2, out.stderr
    assert len(out.stderr) < 600 and "(130,000 characters)" in out.stderr, out.stderr[:600]
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr


@pytest.mark.usefixtures("data_dir")
def test_a_long_query_that_finds_nothing_is_not_echoed_whole(example_vault: Path) -> None:
    query = "zq" * 450  # under the 1,000-character limit, over what a message shows
    out = vp("search", query, "--vault", str(example_vault))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("No notes match 'zqzq") and "(900 characters)" in out.stdout
    assert len(out.stdout) < 200


@pytest.mark.usefixtures("data_dir")
def test_any_error_line_is_cut_when_an_argument_made_it_huge(example_vault: Path) -> None:
    out = vp("undo", HUGE, "--vault", str(example_vault))
    assert out.returncode == 2
    assert len(out.stderr) < 1_200 and "characters left out" in out.stderr, out.stderr[:300]


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize(
    "args",
    [("status", "--vault", ""), ("history", "--vault", " "), ("mcp", "--vault", ""),
     ("serve", "--vault", "")],
)  # fmt: skip
def test_an_empty_vault_flag_is_an_error(args: tuple[str, ...], example_vault: Path) -> None:
    # Run inside a vault: an empty --vault must not quietly fall back to it.
    out = subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, cwd=example_vault, timeout=60,
        env={**os.environ, "VAULTPILOT_VAULT": str(example_vault)}, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.startswith("error: --vault is empty. Give the vault folder"), out.stderr


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch", "--action", "x"], "No tool named 'nosuch' is registered."),
        (["obsidian_agent", "--action", "x", "--payload", "{bad"], "--payload is not valid JSON"),
    ],
)
def test_agents_call_errors_are_one_error_line(args: list[str], message: str) -> None:
    out = vp("agents", "call", *args)
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), out.stderr


@pytest.mark.usefixtures("data_dir")
def test_history_limit_must_be_at_least_one(example_vault: Path) -> None:
    out = vp("history", "--limit", "0", "--vault", str(example_vault))
    assert out.returncode == 2 and "greater than or equal to 1" in out.stderr


def test_chat_help_and_goodbye(example_vault: Path, tmp_path: Path) -> None:
    with ScriptedModelServer([ScriptedTurn(text="Hello.")]) as server:
        env = scripted_env(tmp_path, server.base_url)
        done = CliRunner().invoke(
            app, ["chat", "--vault", str(example_vault)], env=env, input="/help\nhi\n/exit\n"
        )
    out = done.output
    assert done.exit_code == 0, out
    assert "Ctrl-C stops a running answer" in out
    assert "Up/Down bring back earlier messages" in out and "Tab goes through them" in out
    last = out.strip().splitlines()[-1]
    assert "› Conversation " in last and "`vaultpilot chat --continue` resumes it" in last


@pytest.mark.usefixtures("data_dir")
def test_index_rebuild_does_not_report_a_rate_of_nothing(example_vault: Path) -> None:
    first = vp("index", "--vault", str(example_vault))
    assert first.returncode == 0, first.stderr
    if "not embedded" in first.stdout:
        pytest.skip("the offline embedding model is not built here")
    assert "chunks/s" in first.stdout  # the first run embedded every chunk
    again = vp("index", "--rebuild", "--vault", str(example_vault))
    assert again.returncode == 0, again.stderr
    assert "chunks/s" not in again.stdout and "embedded 0 chunks" not in again.stdout
    assert "already embedded" in again.stdout
