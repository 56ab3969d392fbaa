"""``vaultpilot ask`` / ``chat`` / ``config`` and stored conversations, against the scripted server.

The commands are mounted on a Typer app of our own with ``agent_cmds.register`` (as cli/main.py
does); the last test runs ``ask`` from a shell against the scripted server started with
``python -m vaultpilot.agent.testing``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.agent.conftest import model_for
from vaultpilot.agent import (
    Agent,
    FunctionTools,
    list_conversations,
    load_history,
    new_conversation,
    run_conversation,
)
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn
from vaultpilot.cli import agent_cmds
from vaultpilot.index.db import connect as index_connect
from vaultpilot.index.embedding.base import default_model_dir
from vaultpilot.index.semantic import embedding_coverage
from vaultpilot.locations import vault_data_dir
from vaultpilot.memory.db import connect

app = typer.Typer(pretty_exceptions_enable=False)
agent_cmds.register(app)


@pytest.fixture
def env(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "config.toml"))
    for name in ("VAULTPILOT_MODEL", "VAULTPILOT_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTPILOT_MAX_RETRIES", "0")
    return {"VAULTPILOT_DATA_DIR": str(data_dir)}


def test_no_model_configured_says_how_without_a_traceback(env: dict[str, str], vault: Path) -> None:
    result = CliRunner().invoke(app, ["ask", "hello", "--vault", str(vault)])
    assert result.exit_code == 2
    assert "No model is configured" in result.output and "ollama pull" in result.output
    assert "Traceback" not in result.output


def test_config_shows_values_and_sources(env: dict[str, str], monkeypatch: Any) -> None:
    monkeypatch.setenv("VAULTPILOT_MODEL", "qwen2.5:7b")
    result = CliRunner().invoke(app, ["config", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["settings"]["model"] == {"value": "qwen2.5:7b", "source": "env VAULTPILOT_MODEL"}
    assert data["settings"]["max_steps"]["source"] == "default"


def test_ask_shows_each_step_and_asks_before_a_delete(
    serve: Any, env: dict[str, str], vault: Path, monkeypatch: Any
) -> None:
    delete = {"operation": "delete_note", "target": "test.md", "confirmDestructive": True}
    server = serve(
        [
            ScriptedTurn(
                reasoning="Read it first.",
                tool_calls=[
                    ScriptedCall(
                        name="obsidian_get_context",
                        arguments={"contextType": "read_note", "target": "test.md"},
                    )
                ],
            ),
            ScriptedTurn(
                tool_calls=[ScriptedCall(name="obsidian_vault_manager", arguments=delete)]
            ),
            ScriptedTurn(text="I kept **test.md**, as you asked."),
        ]
    )
    monkeypatch.setenv("VAULTPILOT_MODEL", "scripted")
    monkeypatch.setenv("VAULTPILOT_BASE_URL", server.base_url)
    result = CliRunner().invoke(app, ["ask", "delete test.md", "--vault", str(vault)], input="n\n")
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in (
        "Read it first.",
        "● Read(test.md)",
        "-The second line.",  # the approval shows what the delete removes
        "3 No, and tell it why",
        "⊘ Delete(test.md)  declined by you",
        "I kept test.md, as you asked.",
        "3 steps ·",
    ):
        assert expected in out, out
    assert (vault / "test.md").exists()


def test_conversations_are_stored_and_resumed(serve: Any, tmp_path: Path) -> None:
    def echo(text: str) -> dict[str, Any]:
        """Echo."""
        return {"echo": text}

    server = serve(
        [
            ScriptedTurn(tool_calls=[ScriptedCall(name="echo", arguments={"text": "a"})]),
            ScriptedTurn(text="first answer"),
            ScriptedTurn(text="second answer"),
        ]
    )
    conn = connect(tmp_path / "memory.db")
    conv = new_conversation(conn, title="a first question", vault="/v", model="scripted")
    agent = Agent(model_for(server), FunctionTools([echo]), "system")

    async def go(message: str) -> list[Any]:
        return [e async for e in run_conversation(conn, conv.id, agent, message)]

    asyncio.run(go("a first question"))
    asyncio.run(go("and then?"))
    history = load_history(conn, conv.id)
    assert [m["role"] for m in history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    sent = server.requests[2].body["messages"]
    assert sent[1:] == [*history[:5]]  # the resumed run sent the whole stored history
    listed = list_conversations(conn, vault="/v")
    assert [(c.id, c.title, c.messages) for c in listed] == [(conv.id, "a first question", 2)]
    kinds = [r[0] for r in conn.execute("SELECT kind FROM conversation_events ORDER BY rowid")]
    assert kinds.count("run_finished") == 2 and "text_chunk" in kinds
    usage = conn.execute("SELECT COUNT(*), SUM(total_tokens) FROM conversation_usage").fetchone()
    assert usage[0] == 3 and usage[1] > 0
    conn.close()


SCRIPT = {
    "turns": [
        {
            "tool_calls": [
                {
                    "name": "obsidian_query_vault",
                    "arguments": {"queryType": "semantic_search", "query": "second line"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "obsidian_vault_manager",
                    "arguments": {
                        "operation": "append_note",
                        "target": "test.md",
                        "content": "Checked by the agent.",
                    },
                }
            ]
        },
        {"text": "I found **test.md** and added a line to it."},
    ]
}


def test_ask_from_the_shell_runs_a_two_step_task(tmp_path: Path, vault: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "vaultpilot.agent.testing", str(script), "--exit-when-done"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        env = {
            **os.environ,
            "VAULTPILOT_CONFIG": str(tmp_path / "none.toml"),
            "VAULTPILOT_DATA_DIR": str(tmp_path / "data"),
            "VAULTPILOT_MODEL": "scripted",
            "VAULTPILOT_BASE_URL": base_url,
            "VAULTPILOT_MAX_RETRIES": "0",
            "COLUMNS": "200",
        }
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "vaultpilot"),
                "ask",
                "Find the note with a second line and append 'Checked by the agent.'",
                "--vault",
                str(vault),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert '● Search("second line")' in done.stdout
        assert "● Append(test.md)" in done.stdout
        assert "I found test.md and added a line to it." in done.stdout
        assert (
            (vault / "test.md")
            .read_text(encoding="utf-8")
            .rstrip()
            .endswith("Checked by the agent.")
        )
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=5)


needs_model = pytest.mark.skipif(
    not (default_model_dir() / "manifest.json").exists(),
    reason="the embedding model is not built; run `make install-model`",
)


@needs_model
@pytest.mark.parametrize("embed", [True, False])
def test_chat_embeds_in_the_background_unless_told_not_to(
    serve: Any, env: dict[str, str], vault: Path, data_dir: Path, monkeypatch: Any, embed: bool
) -> None:
    monkeypatch.delenv("VAULTPILOT_EMBEDDINGS", raising=False)
    # The model takes its time to answer, as real ones do: the embedder works meanwhile.
    server = serve([ScriptedTurn(text="Noted.", delay=4.0)])
    monkeypatch.setenv("VAULTPILOT_MODEL", "scripted")
    monkeypatch.setenv("VAULTPILOT_BASE_URL", server.base_url)
    args = ["chat", "--vault", str(vault), *([] if embed else ["--no-embed"])]
    result = CliRunner().invoke(app, args, input="remember the pgloader run\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "Noted." in result.output
    conn = index_connect(vault_data_dir(vault, data_dir) / "index.db")
    embedded, chunks = embedding_coverage(conn)
    conn.close()
    if embed:
        assert 0 < embedded <= chunks
    else:
        assert embedded == 0
