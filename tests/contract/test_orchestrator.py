"""The orchestrator against real children: our agents, a foreign program, and misbehaving ones."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.contract.catalog import register_shipped
from vaultpilot.contract.models import ActionResponse
from vaultpilot.contract.orchestrator import (
    Failed,
    Replied,
    call_tool,
    list_process_tools,
    new_request,
    run_process,
)
from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.memory.db import connect
from vaultpilot.memory.registry import BuiltinTool, ProcessTool, upsert_tool

from .conftest import IDS

REQUEST = new_request("fake_tool", "do", {"x": 1})


def child(code: str) -> list[str]:
    """A Python child process running ``code`` (it can read the request from stdin)."""
    return [sys.executable, "-c", code]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(tmp_path / "memory.db")
    register_shipped(connection)
    yield connection
    connection.close()


def test_new_request_is_v1_with_fresh_ids() -> None:
    a, b = (
        new_request("t", "a", {}),
        new_request("t", "a", {}, correlation_id=uuid.UUID(IDS["correlation_id"])),
    )
    assert a.api_version == "V1" and a.request_id != b.request_id
    assert a.correlation_id is not None and str(b.correlation_id) == IDS["correlation_id"]
    assert a.model_dump(mode="json")["payload"] == {}


def test_call_obsidian_agent_by_name(conn: sqlite3.Connection, tmp_path: Path) -> None:
    (tmp_path / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    corr = uuid.uuid4()
    outcome = call_tool(
        conn,
        "obsidian_agent",
        "read_note",
        {"vault_path": str(tmp_path), "note_name": "Plan"},
        correlation_id=corr,
    )
    assert isinstance(outcome, Replied)
    response = outcome.response
    assert isinstance(response, ActionResponse)
    assert (response.status, response.code, response.api_version) == ("success", 0, "V1")
    assert response.result is not None and response.result.data == "# Plan\n"
    assert response.correlation_id == corr
    assert str(corr) in outcome.stderr  # the child's logs carry the correlation id


def test_a_tool_error_is_a_reply_not_a_failure(
    conn: sqlite3.Connection, tmp_path: Path, git_env: dict[str, str]
) -> None:
    outcome = call_tool(conn, "git_agent", "git_status", {}, cwd=tmp_path, env=git_env)
    assert isinstance(outcome, Replied)
    assert (outcome.response.status, outcome.response.code) == ("error", 1)
    assert outcome.response.result is not None
    assert outcome.response.result.metadata == {"exit_code": 128}


def test_list_process_tools_with_schemas(conn: sqlite3.Connection) -> None:
    upsert_tool(conn, BuiltinTool("obsidian_query_vault", "Search.", {"type": "object"}))
    tools = list_process_tools(conn)
    assert [t.name for t in tools] == ["git_agent", "obsidian_agent"]
    obsidian = tools[1]
    assert set(obsidian.payload_schema["discriminator"]["mapping"]) == {
        "create_note",
        "read_note",
        "update_note",
    }
    with pytest.raises(InvalidArgumentError, match="built-in tool"):
        call_tool(conn, "obsidian_query_vault", "x", {})
    with pytest.raises(NotFoundError, match="No tool named 'nope'"):
        call_tool(conn, "nope", "x", {})


def test_a_foreign_program_speaking_the_contract(conn: sqlite3.Connection) -> None:
    """Any program that reads an ActionRequest and writes an ActionResponse is a tool."""
    echo = (
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "print(json.dumps({'request_id': req['request_id'], 'status': 'success', 'code': 0,\n"
        "  'result': {'output_type': 'text', 'data': json.dumps(req['payload'])},\n"
        "  'correlation_id': req['correlation_id'], 'extra': 'ignored'}))\n"
    )
    upsert_tool(conn, ProcessTool("echo_tool", "Echo.", {"type": "object"}, tuple(child(echo))))
    outcome = call_tool(conn, "echo_tool", "echo", {"hello": "wörld"})
    assert isinstance(outcome, Replied)
    assert outcome.response.result is not None
    assert json.loads(outcome.response.result.data) == {"hello": "wörld"}
    assert outcome.response.api_version is None and outcome.response.plan_id is None


def test_timeout_stops_the_child() -> None:
    started = time.monotonic()
    outcome = run_process(child("import time; time.sleep(60)"), REQUEST, timeout=0.5)
    assert isinstance(outcome, Failed) and outcome.reason == "timeout"
    assert outcome.message == "'fake_tool' did not answer within 0.5 s and was stopped."
    assert time.monotonic() - started < 10


def test_timeout_also_stops_grandchildren_holding_the_pipes() -> None:
    code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    outcome = run_process(child(code), REQUEST, timeout=0.5)
    assert isinstance(outcome, Failed) and outcome.reason == "timeout"
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        (
            "print('hello, I am not JSON')",
            "not_json",
            "'fake_tool' did not reply with one JSON object on stdout: invalid JSON: Expecting",
        ),
        ("pass", "not_json", "'fake_tool' exited without writing a reply on stdout."),
        ("print('{}'); print('{}')", "not_json", "Extra data"),
        ("import sys; sys.stdout.buffer.write(b'\\xff')", "not_json", "input is not UTF-8"),
        (
            "print('[1, 2]')",
            "schema",
            "'fake_tool' replied with a JSON array, not an ActionResponse",
        ),
        (
            'print(\'{"request_id": "x", "code": "0"}\')',
            "schema",
            "Invalid 'request_id' in the reply",
        ),
        ('print(\'{"request_id": "x", "code": "0"}\')', "schema", "Missing 'status' in the reply"),
        ('print(\'{"request_id": "x", "code": "0"}\')', "schema", "Invalid 'code' in the reply"),
    ],
)
def test_garbage_output(code: str, reason: str, message: str) -> None:
    outcome = run_process(child(code), REQUEST, timeout=30)
    assert isinstance(outcome, Failed)
    assert outcome.reason == reason and message in outcome.message, outcome.message


def test_a_crashing_child() -> None:
    outcome = run_process(child("raise RuntimeError('disk on fire')"), REQUEST, timeout=30)
    assert isinstance(outcome, Failed) and outcome.reason == "exit"
    assert outcome.exit_code == 1
    assert outcome.message.startswith("'fake_tool' exited with status 1; its stderr ends with:")
    assert outcome.message.endswith("RuntimeError: disk on fire")


def test_a_child_that_answers_then_fails_is_still_a_failure() -> None:
    reply = json.dumps({"request_id": str(uuid.uuid4()), "status": "success", "code": 0})
    outcome = run_process(child(f"print({reply!r}); raise SystemExit(3)"), REQUEST, timeout=30)
    assert isinstance(outcome, Failed) and outcome.reason == "exit" and outcome.exit_code == 3
    assert outcome.message == "'fake_tool' exited with status 3."
    assert json.loads(outcome.stdout)["code"] == 0  # kept for whoever wants to look


def test_a_child_killed_by_a_signal() -> None:
    outcome = run_process(
        child("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"), REQUEST, timeout=30
    )
    assert isinstance(outcome, Failed) and outcome.reason == "exit"
    assert outcome.message == "'fake_tool' was killed by signal 9."


def test_a_program_that_cannot_start(tmp_path: Path) -> None:
    outcome = run_process([str(tmp_path / "no-such-program")], REQUEST)
    assert isinstance(outcome, Failed) and outcome.reason == "spawn"
    assert outcome.message.startswith("Could not start 'fake_tool'")
    assert "No such file or directory" in outcome.message


def test_a_child_that_does_not_read_stdin() -> None:
    reply = json.dumps({"request_id": str(uuid.uuid4()), "status": "error", "code": 2})
    big = new_request("fake_tool", "do", {"blob": "x" * 2_000_000})
    outcome = run_process(child(f"print({reply!r})"), big, timeout=30)
    assert isinstance(outcome, Replied) and outcome.response.code == 2


ENV_DUMP = (
    "import json, os, sys\n"
    "req = json.load(sys.stdin)\n"
    "print(json.dumps({'request_id': req['request_id'], 'status': 'success', 'code': 0,\n"
    "  'result': {'output_type': 'text', 'data': json.dumps(dict(os.environ))},\n"
    "  'correlation_id': req['correlation_id']}))\n"
)
SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai-secret",
    "ANTHROPIC_API_KEY": "sk-ant-test-secret",
    "GITHUB_TOKEN": "ghp_test_secret",
    "DATABASE_URL": "postgres://user:pw@db/x",
    "AWS_ACCESS_KEY_ID": "AKIATEST",
    "VAULTPILOT_API_KEY": "vp-test-secret",
    "SOME_UNLISTED_SETTING": "x",
}


def child_environment(tool: str, env: dict[str, str] | None) -> dict[str, str]:
    outcome = run_process(child(ENV_DUMP), new_request(tool, "do", {}), timeout=30, env=env)
    assert isinstance(outcome, Replied), outcome
    assert outcome.response.result is not None
    seen = json.loads(outcome.response.result.data)
    assert isinstance(seen, dict)
    return seen


@pytest.mark.parametrize("tool", ["fake_tool", "obsidian_agent", "git_agent"])
def test_a_process_tool_gets_none_of_our_secrets(
    tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("VAULTPILOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LC_TIME", "C")
    given = {**dict(os.environ), "ANOTHER_TOKEN": "t0ken"}
    for env in (None, given):  # inherited from us, or handed over by the caller
        seen = child_environment(tool, env)
        assert not set(seen) & {*SECRETS, "ANOTHER_TOKEN"}, tool
        assert "PATH" in seen and seen["LC_TIME"] == "C"
        # Only vaultpilot's own agents learn where its data folder is (memory.db, the lock).
        shipped = tool in ("obsidian_agent", "git_agent")
        assert seen.get("VAULTPILOT_DATA_DIR") == (str(tmp_path / "data") if shipped else None)
        assert ("GIT_CONFIG_GLOBAL" in seen) == (
            tool == "git_agent" and "GIT_CONFIG_GLOBAL" in given
        )


def test_git_agent_called_by_name_keeps_the_users_git_settings(
    conn: sqlite3.Connection, git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    """The allowlist still carries what git_agent needs: its data folder and git's own config."""
    marker = tmp_path / "fsmonitor-env.txt"
    with open(git_repo / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f"[core]\n\tfsmonitor = env > '{marker}'; echo\n")
    env = {**git_env, **SECRETS}
    outcome = call_tool(conn, "git_agent", "git_status", {}, cwd=git_repo, env=env)
    assert isinstance(outcome, Replied) and outcome.response.result is not None
    assert outcome.response.result.data.startswith("On branch main\n")
    assert not marker.exists()
    assert (Path(git_env["VAULTPILOT_DATA_DIR"]) / "memory.db").exists()  # it registered there
