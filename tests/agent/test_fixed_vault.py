"""The model never chooses the vault: the attacks of a prompt-injected model, through ``ask``.

A scripted model, driven through ``vaultpilot ask --json`` with the shipped process tools (real
subprocesses, real git), tries to leave the vault: obsidian_agent with a ``vault_path`` of a folder
outside it (to create ``AGENT_PWN.md`` and to read a secret note), or of the vault's
``.obsidian/``; git_agent with a ``repo_path`` of another repository; ``git_add``/``git_commit``
without the person's approval. Each gets a readable tool error or an approval question (answered
no), and nothing is written outside the vault, in ``.obsidian/`` or in either repository.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.agent.conftest import snapshot
from vaultpilot.agent import ApprovalPolicy, ProcessTools
from vaultpilot.agent.build import run_process_tool
from vaultpilot.agent.schemas import tool_entry
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn
from vaultpilot.agent.toolset import CombinedTools
from vaultpilot.cli import agent_cmds
from vaultpilot.contract.catalog import shipped_tools

app = typer.Typer(pretty_exceptions_enable=False)
agent_cmds.register(app)

SECRET = "TOP SECRET 4242"
FIXED = "is set by vaultpilot to this run's vault and cannot be changed"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout


def _repo(path: Path, *, note: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    (path / "readme.md").write_text(note, encoding="utf-8")
    _git(path, "add", "readme.md")
    _git(path, "commit", "-q", "-m", note)
    return path


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def setting(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, vault: Path
) -> dict[str, Path]:
    monkeypatch.chdir(tmp_path)  # a tool that ignored the vault would work here, not in a checkout
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "config.toml"))
    for name in ("VAULTPILOT_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTPILOT_MODEL", "scripted")
    monkeypatch.setenv("VAULTPILOT_MAX_RETRIES", "0")
    # git_agent commits with the user's identity; give the test one, and no global config.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "Test")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "test@example.com")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    other = _repo(tmp_path / "other", note="other repository commit")
    _repo(vault, note="vault first commit")
    return {"vault": vault, "outside": outside, "other": other}


def _call(call_id: str, name: str, **arguments: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedCall(id=call_id, name=name, arguments=arguments)])


def _events(output: str) -> list[dict[str, Any]]:
    out = []
    for line in output.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_a_scripted_attacker_cannot_leave_the_vault_nor_write_without_asking(
    serve: Any, setting: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, outside, other = setting["vault"], setting["outside"], setting["other"]
    (vault / "new.md").write_text("to stage\n", encoding="utf-8")
    obsidian_before = _tree(vault / ".obsidian")
    other_head = _git(other, "rev-parse", "HEAD")
    vault_head = _git(vault, "rev-parse", "HEAD")
    agent = "obsidian_agent"
    turns = [
        _call(
            "pwn_create",
            agent,
            type="create_note",
            vault_path=str(outside),
            note_name="AGENT_PWN",
            content="pwned",
        ),
        _call("pwn_read", agent, type="read_note", vault_path=str(outside), note_name="secret"),
        _call("pwn_climb", agent, type="read_note", note_name="../outside/secret"),
        _call(
            "pwn_dot_vault",
            agent,
            type="create_note",
            vault_path=str(vault / ".obsidian"),
            note_name="x",
            content="pwned",
        ),
        _call("pwn_dot_name", agent, type="create_note", note_name=".obsidian/y", content="x"),
        _call("pwn_extra", agent, type="read_note", note_name="test", path=str(outside)),
        _call("pwn_repo", "git_agent", type="git_log", repo_path=str(other)),
        _call("own_status", "git_agent", type="git_status"),
        _call("pwn_add", "git_agent", type="git_add", files=["new.md"]),
        _call("pwn_commit", "git_agent", type="git_commit", message="pwned"),
        ScriptedTurn(text="done"),
    ]
    server = serve(turns)
    monkeypatch.setenv("VAULTPILOT_BASE_URL", server.base_url)
    result = CliRunner().invoke(
        app, ["ask", "tidy up", "--vault", str(vault), "--json"], input="n\n\nn\n\n"
    )
    assert result.exit_code == 0, result.output
    events = _events(result.output)
    results = {e["call_id"]: e for e in events if e["kind"] == "tool_result"}
    asked = {e["call_id"]: e for e in events if e["kind"] == "approval_required"}
    text = {cid: json.dumps(r["result"]) for cid, r in results.items()}

    # Nothing escaped, nothing was written where it must not be.
    assert not (outside / "AGENT_PWN.md").exists() and not (vault / "AGENT_PWN.md").exists()
    assert _tree(outside) == ["secret.md"]
    assert _tree(vault / ".obsidian") == obsidian_before
    assert not (vault / "x.md").exists() and not (vault / "y.md").exists()
    assert SECRET not in result.output
    assert "other repository commit" not in result.output
    assert _git(other, "rev-parse", "HEAD") == other_head
    assert _git(vault, "rev-parse", "HEAD") == vault_head
    assert _git(vault, "diff", "--cached", "--name-only") == ""  # git_add did not run

    # obsidian_agent is not offered to the built-in agent (the vault tools do its actions with
    # versions, diffs and the journal): each attempt is refused as an unknown tool.
    for call_id in ("pwn_create", "pwn_read", "pwn_climb", "pwn_dot_vault", "pwn_dot_name"):
        assert not results[call_id]["success"], text[call_id]
        assert "Unknown tool 'obsidian_agent'" in text[call_id], text[call_id]
    # git_agent's repository is the vault's, whatever the model sends.
    assert not results["pwn_repo"]["success"], text["pwn_repo"]
    assert f"repo_path {FIXED}" in text["pwn_repo"] and "call it again without" in text["pwn_repo"]
    assert not results["pwn_extra"]["success"]
    # The run's own repository is the vault's.
    assert results["own_status"]["success"], text["own_status"]
    assert "new.md" in text["own_status"]
    # The writes of git_agent asked first, and the answer was no.
    for call_id, operation in (("pwn_add", "git_add"), ("pwn_commit", "git_commit")):
        assert asked[call_id]["operation"] == operation
        assert results[call_id]["source"] == "denied" and not results[call_id]["success"]
    assert set(asked) == {"pwn_add", "pwn_commit"}  # the reads and refusals asked nothing

    # What the model was offered never lets it choose.
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
    assert agent not in tools and "obsidian_vault_manager" in tools
    params = tools["git_agent"]["parameters"]
    assert "repo_path" not in params["properties"] and "repo_path" not in params["required"]
    assert "repo_path," not in params["properties"]["type"]["description"]  # "Needs: …"
    assert "repo_path is set by vaultpilot" in tools["git_agent"]["description"]


def test_git_agent_refuses_a_vault_that_is_not_its_own_repository(
    tmp_path: Path, data_dir: Path
) -> None:
    """A vault inside a larger repository: git would find that one; the call says why not."""
    outer = _repo(tmp_path / "outer", note="outer commit")
    vault = outer / "notes"
    vault.mkdir()
    tools = ProcessTools.for_vault(shipped_tools(), run_process_tool, vault)
    result = tools.call("git_agent", {"type": "git_log"})
    assert "error" in result and "not a git repository" in result["error"]
    assert "git init" in result["error"] and "outer commit" not in json.dumps(result)


def test_git_agent_is_offered_only_once_the_vault_is_a_repository(tmp_path: Path) -> None:
    """Without a .git folder every git_agent call could only fail: the model is not offered it
    (its calls still say why); after 'git init' the next run offers it."""
    vault = tmp_path / "vault"
    vault.mkdir()
    tools = CombinedTools(ProcessTools.for_vault(shipped_tools(), run_process_tool, vault))
    assert "git_agent" not in [s.name for s in tools.for_run("r1").specs()]
    _git(vault, "init", "-q")
    assert "git_agent" in [s.name for s in tools.for_run("r2").specs()]


def test_fixed_and_unknown_arguments_are_refused_before_any_tool_runs(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []

    def runner(tool: Any, action: str, payload: dict[str, Any]) -> dict[str, Any]:
        ran.append((action, payload))
        return {"success": True}

    vault = tmp_path / "vault"
    (vault / ".git").mkdir(parents=True)
    tools = ProcessTools.for_vault(shipped_tools(), runner, vault)
    both = tools.call("git_agent", {"type": "git_status", "repo_path": "/", "vault_path": "/"})
    assert "error" in both and "vault_path" not in both["error"]  # git_agent takes no vault_path
    same = tools.call("obsidian_agent", {"type": "read_note", "note_name": "a", "vault_path": "."})
    assert same["error"].startswith(f"vault_path {FIXED}")
    wrong = tools.call("git_agent", {"type": "git_push"})
    assert "no action 'git_push'" in wrong["error"] and "git_status" in wrong["error"]
    extra = tools.call("git_agent", {"type": "git_log", "limit": 3, "cwd": "/"})
    assert "does not take 'cwd'" in extra["error"] and "limit" in extra["error"]
    assert "repo_path" not in extra["error"]  # not offered as a way out
    assert ran == []
    assert tools.call("git_agent", {"type": "git_log", "limit": 3})["success"]
    assert tools.call("obsidian_agent", {"type": "read_note", "note_name": "a"})["success"]
    assert ran == [
        ("git_log", {"limit": 3, "repo_path": str(vault)}),
        ("read_note", {"note_name": "a", "vault_path": str(vault)}),
    ]


def test_process_tool_writes_follow_the_policy() -> None:
    policy = ApprovalPolicy()
    assert policy.decide("git_agent", "git_add") == "ask"
    assert policy.decide("git_agent", "git_commit") == "ask"
    assert policy.decide("git_agent", "git_status") == "allow"
    # obsidian_agent's writes are decided as the vault manager's create and update are.
    assert policy.decide("obsidian_agent", "create_note") == "allow"
    asking = policy.with_rules({"obsidian_vault_manager.update_note": "ask"})
    assert asking.decide("obsidian_agent", "update_note") == "ask"
    assert asking.decide("obsidian_agent", "read_note") == "allow"
    own = asking.with_rules({"obsidian_agent": "allow"})
    assert own.decide("obsidian_agent", "update_note") == "allow"
    # A rule laid over the defaults wins over a more specific default.
    assert policy.with_rules({"git_agent": "deny"}).decide("git_agent", "git_commit") == "deny"
    assert policy.with_rules({"git_agent": "allow"}).decide("git_agent", "git_add") == "allow"
    strict = policy.with_rules({"obsidian_vault_manager": "deny"})
    assert strict.decide("obsidian_agent", "create_note") == "deny"


def test_process_tool_schemas_the_model_sees(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")  # git_agent is offered in a repository only
    tools = ProcessTools.for_vault(shipped_tools(), run_process_tool, tmp_path)
    entries = [tool_entry(s.name, s.description, s.parameters) for s in tools.specs()]
    assert "vault_path is set by vaultpilot" in json.dumps(entries)
    for entry in entries:
        assert not {"vault_path", "repo_path"} & set(entry["function"]["parameters"]["properties"])
    snapshot("process_tools", entries)
