"""git_agent as a process, against a real git repository isolated from the user's config."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.contract.git_agent import config_overrides
from vaultpilot.contract.models import GitAgentCommandV1
from vaultpilot.errors import SetupError

from .conftest import IDS, MODULES, check_reply, git, request, run_agent


def call(repo: Path, env: dict[str, str], action: str, payload: Any, **kw: Any) -> dict[str, Any]:
    return run_agent(
        "git_agent", request("git_agent", action, payload), cwd=repo, env=env, **kw
    ).reply


def failed(reply: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The failure shape of the document: code 1, error null, details in result."""
    assert (reply["status"], reply["code"], reply["error"]) == ("error", 1, None)
    assert reply["result"]["output_type"] == "error"
    return reply["result"]["data"], reply["result"]["metadata"]


def commits(repo: Path, env: dict[str, str], n: int) -> None:
    for i in range(n):
        (repo / "counter.txt").write_text(str(i), encoding="utf-8")
        git(repo, env, "add", "counter.txt")
        git(repo, env, "commit", "-q", "-m", f"change {i}")


@pytest.mark.parametrize(("limit", "shown"), [(2, 2), ("2", 2), ("0", 0), (None, 10)])
def test_log_limit_as_number_or_numeric_string(
    git_repo: Path, git_env: dict[str, str], limit: Any, shown: int
) -> None:
    commits(git_repo, git_env, 11)
    payload = {} if limit is None else {"limit": limit}
    data = call(git_repo, git_env, "git_log", payload)["result"]["data"]
    assert sum(line.startswith("commit ") for line in data.splitlines()) == shown


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("ten", 'must be a whole number such as 10 or "10", got "ten"'),
        ("-1", 'got "-1"'),
        (-1, "greater than or equal to 0"),
        (True, "valid integer"),
        (2.5, "valid integer"),
        ("99999999999", "less than or equal to 4294967295"),
    ],
)
def test_bad_limits_are_refused(
    git_repo: Path, git_env: dict[str, str], limit: Any, message: str
) -> None:
    data, metadata = failed(call(git_repo, git_env, "git_log", {"limit": limit}))
    assert data.startswith("Invalid 'limit' in parameters: ") and message in data
    assert metadata is None


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["-A"], "'-A' looks like an option"),
        (["README.md", "--all"], "'--all' looks like an option"),
        (["../outside.txt"], "File '../outside.txt' lies outside the repository"),
        (["src/../../outside.txt"], "lies outside the repository"),
        (["/etc/passwd"], "File '/etc/passwd' lies outside the repository"),
        ([""], "file names must not be empty"),
        (["a\x00b"], "must not contain NUL"),
        ([], "List should have at least 1 item"),
        ("README.md", "Input should be a valid list"),
        ([3], "Input should be a valid string"),
    ],
)
def test_git_add_refuses_bad_file_names_and_stages_nothing(
    git_repo: Path, git_env: dict[str, str], files: Any, message: str
) -> None:
    (git_repo / "README.md").write_text("changed\n", encoding="utf-8")
    (git_repo.parent / "outside.txt").write_text("x\n", encoding="utf-8")
    data, metadata = failed(call(git_repo, git_env, "git_add", {"files": files}))
    assert message in data and metadata is None
    assert git(git_repo, git_env, "diff", "--cached", "--name-only") == ""


def test_git_diff_refuses_outside_names_too(git_repo: Path, git_env: dict[str, str]) -> None:
    data, _ = failed(call(git_repo, git_env, "git_diff", {"files": ["../x"]}))
    assert "lies outside the repository" in data


def test_names_inside_the_repository_are_accepted(git_repo: Path, git_env: dict[str, str]) -> None:
    (git_repo / "-rf").write_text("odd name\n", encoding="utf-8")
    (git_repo / "src" / "main.rs").write_text("changed\n", encoding="utf-8")
    files = ["./-rf", str(git_repo / "src" / "main.rs"), "src/../README.md"]
    reply = call(git_repo, git_env, "git_add", {"files": files})
    assert reply["code"] == 0, reply
    assert git(git_repo, git_env, "diff", "--cached", "--name-only").split() == [
        "-rf",
        "src/main.rs",
    ]


def test_file_names_are_literal_not_pathspec_magic(git_repo: Path, git_env: dict[str, str]) -> None:
    (git_repo / "README.md").write_text("changed\n", encoding="utf-8")
    data, metadata = failed(call(git_repo, git_env, "git_add", {"files": ["*.md"]}))
    assert metadata == {"exit_code": 128} and "did not match any files" in data


def test_missing_and_blank_fields(git_repo: Path, git_env: dict[str, str]) -> None:
    assert failed(call(git_repo, git_env, "git_add", {}))[0] == "Missing 'files' in parameters"
    assert failed(call(git_repo, git_env, "git_commit", {}))[0] == (
        "Missing 'message' in parameters"
    )
    assert failed(call(git_repo, git_env, "git_commit", {"message": " \n"}))[0] == (
        "Invalid 'message' in parameters: the commit message must not be blank"
    )
    assert failed(call(git_repo, git_env, "git_commit", {"message": 5}))[0] == (
        "Invalid 'message' in parameters: Input should be a valid string"
    )


def test_git_failure_carries_exit_code_and_falls_back_to_stdout(
    git_repo: Path, git_env: dict[str, str]
) -> None:
    data, metadata = failed(call(git_repo, git_env, "git_commit", {"message": "nothing"}))
    assert metadata == {"exit_code": 1}
    assert "nothing to commit, working tree clean" in data


def test_a_message_that_looks_like_an_option_is_only_a_message(
    git_repo: Path, git_env: dict[str, str]
) -> None:
    (git_repo / "README.md").write_text("changed\n", encoding="utf-8")
    git(git_repo, git_env, "add", "README.md")
    message = "--amend\n\n# not a comment; $(rm -rf /)"
    assert call(git_repo, git_env, "git_commit", {"message": message})["code"] == 0
    assert git(git_repo, git_env, "log", "-1", "--format=%B").rstrip("\n") == message
    assert git(git_repo, git_env, "rev-list", "--count", "HEAD").strip() == "2"


def test_repo_path_names_the_repository(git_repo: Path, git_env: dict[str, str]) -> None:
    elsewhere = git_repo.parent / "elsewhere"
    elsewhere.mkdir()
    payload = {"repo_path": str(git_repo)}
    assert call(elsewhere, git_env, "git_status", payload)["result"]["data"].startswith(
        "On branch main"
    )
    relative = call(git_repo.parent, git_env, "git_status", {"repo_path": "repo"})
    assert relative["code"] == 0
    data, metadata = failed(call(elsewhere, git_env, "git_status", {"repo_path": "nope"}))
    assert data == "Repository folder 'nope' does not exist; set repo_path to the repository."
    assert metadata is None


def test_add_outside_a_repository_reports_gits_error(
    tmp_path: Path, git_env: dict[str, str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    data, metadata = failed(call(plain, git_env, "git_add", {"files": ["a.txt"]}))
    assert metadata == {"exit_code": 128} and "not a git repository" in data


@pytest.mark.parametrize(
    ("tool", "action", "message"),
    [
        (
            "git_agent",
            "git_push",
            "Unknown action 'git_push'. Use one of: git_status, git_diff, "
            "git_log, git_add, git_commit.",
        ),
        (
            "obsidian_agent",
            "git_status",
            "This is git_agent, but the request names tool "
            "'obsidian_agent'. Send it to 'obsidian_agent', or set tool to 'git_agent'.",
        ),
    ],
)
def test_wrong_tool_or_action(
    git_repo: Path, git_env: dict[str, str], tool: str, action: str, message: str
) -> None:
    reply = run_agent("git_agent", request(tool, action, {}), cwd=git_repo, env=git_env).reply
    assert failed(reply) == (message, None)
    assert reply["correlation_id"] == IDS["correlation_id"]


def test_unparseable_request(git_repo: Path, git_env: dict[str, str]) -> None:
    reply = run_agent("git_agent", b"git status please", cwd=git_repo, env=git_env).reply
    data, metadata = failed(reply)
    assert data.startswith("Failed to parse request: invalid JSON") and metadata is None
    assert reply["request_id"] != IDS["request_id"] and reply["correlation_id"] is None


# --- registration in memory.db ----------------------------------------------------------------


def registry_rows(data_dir: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data_dir / "memory.db") as conn:
        return conn.execute("SELECT * FROM tool_registry").fetchall()


def test_registers_itself_idempotently(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "flag-data"
    call(git_repo, git_env, "git_status", {}, args=("--data-dir", str(data_dir)))
    first = registry_rows(data_dir)
    call(git_repo, git_env, "git_status", {}, args=(f"--data-dir={data_dir}",))
    assert registry_rows(data_dir) == first  # not even updated_at changed
    name, kind, _description, schema, command, registered_at, updated_at = first[0]
    assert (name, kind, registered_at) == ("git_agent", "process", updated_at)
    assert json.loads(schema) == GitAgentCommandV1.model_json_schema()
    assert json.loads(command) == [sys.executable, "-m", MODULES["git_agent"]]
    assert not (tmp_path / "data").exists()  # the flag wins over VAULTPILOT_DATA_DIR


def test_registers_in_the_environments_data_dir(git_repo: Path, git_env: dict[str, str]) -> None:
    call(git_repo, git_env, "git_status", {})
    assert [r[0] for r in registry_rows(Path(git_env["VAULTPILOT_DATA_DIR"]))] == ["git_agent"]


def test_a_failed_registration_does_not_cost_the_reply(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    sent = request("git_agent", "git_status", {})
    run = run_agent("git_agent", sent, cwd=git_repo, env=git_env, args=("--data-dir", str(blocker)))
    assert run.reply["code"] == 0
    assert any(log["event"] == "registry.failed" for log in run.logs)


def test_a_wrong_argument_is_answered_on_stdout(git_repo: Path, git_env: dict[str, str]) -> None:
    sent = request("git_agent", "git_status", {})
    reply = run_agent("git_agent", sent, cwd=git_repo, env=git_env, args=("--verbose",)).reply
    data, _ = failed(reply)
    assert data == (
        "git_agent was started with a wrong argument '--verbose'; "
        "usage: git_agent [--data-dir DIR] < request.json"
    )
    assert reply["request_id"] == IDS["request_id"]


def test_concurrent_starts_register_once(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "fresh"
    body = json.dumps(request("git_agent", "git_status", {})).encode()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", MODULES["git_agent"], "--data-dir", str(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=git_repo,
            env=git_env,
        )
        for _ in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(body, timeout=60)
        assert check_reply(out)["code"] == 0
        assert b"registry.failed" not in err, err
    assert [r[0] for r in registry_rows(data_dir)] == ["git_agent"]


def test_config_overrides_switch_off_every_named_filter_and_hook() -> None:
    names = "filter.lfs.clean\0filter.lfs.smudge\0filter.My Name.process\0hook.lint.command\0"
    assert config_overrides(names) == [
        *("-c", "filter.lfs.clean=", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process="),
        *("-c", "filter.lfs.required=false"),
        *("-c", "filter.My Name.clean=", "-c", "filter.My Name.smudge="),
        *("-c", "filter.My Name.process=", "-c", "filter.My Name.required=false"),
        *("-c", "hook.lint.enabled=false", "-c", "hook.lint.command="),
    ]
    assert config_overrides("") == []
    with pytest.raises(SetupError, match=r"hook named 'a=b'.*\[hook \"a=b\"\]"):
        config_overrides("hook.a=b.command\0")


def test_config_hooks_are_switched_off_too(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    """Hooks defined in the config (git 2.54+) are not reached by core.hooksPath."""
    marker = tmp_path / "hook.txt"
    git(git_repo, git_env, "config", "hook.leak.event", "pre-commit")
    git(git_repo, git_env, "config", "hook.leak.command", f"touch '{marker}'")
    (git_repo / "README.md").write_text("# Changed\n", encoding="utf-8")
    assert call(git_repo, git_env, "git_add", {"files": ["README.md"]})["code"] == 0
    assert call(git_repo, git_env, "git_commit", {"message": "m"})["code"] == 0
    assert not marker.exists()


def test_the_vaults_rules_hold(git_repo: Path, git_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[rules]\ndeny = ["Secrets"]\nprivate = ["Diary.md"]\n', encoding="utf-8")
    env = {**git_env, "VAULTPILOT_CONFIG": str(config)}
    (git_repo / "Secrets").mkdir()
    (git_repo / "Secrets" / "pin.md").write_text("1111\n", encoding="utf-8")
    (git_repo / "Diary.md").write_text("dear diary\n", encoding="utf-8")
    git(git_repo, env, "add", ".")
    git(git_repo, env, "commit", "-q", "-m", "notes")
    (git_repo / "Secrets" / "pin.md").write_text("4242\n", encoding="utf-8")
    (git_repo / "Secrets" / "new.md").write_text("new secret\n", encoding="utf-8")
    (git_repo / "Diary.md").write_text("my secret day\n", encoding="utf-8")
    (git_repo / "README.md").write_text("# Demo, changed\n", encoding="utf-8")
    status = call(git_repo, env, "git_status", {})["result"]["data"]
    assert "README.md" in status and "Diary.md" in status and "Secrets" not in status
    diff = call(git_repo, env, "git_diff", {})["result"]["data"]
    assert "Demo, changed" in diff and "4242" not in diff and "secret day" not in diff
    data, _ = failed(call(git_repo, env, "git_diff", {"files": ["Secrets/pin.md"]}))
    assert "deny" in data and "4242" not in data
    data, _ = failed(call(git_repo, env, "git_add", {"files": ["Secrets/new.md"]}))
    assert "deny" in data
    assert call(git_repo, env, "git_add", {"files": ["."]})["code"] == 0
    staged = git(git_repo, env, "diff", "--cached", "--name-only").split()
    assert staged == ["Diary.md", "README.md"]  # the denied folder stays out of the commit
    # The person staged a denied file themselves: the commit's summary does not name it.
    git(git_repo, env, "add", "Secrets/new.md")
    done = call(git_repo, env, "git_commit", {"message": "day"})
    assert done["code"] == 0 and "Secrets" not in done["result"]["data"]
    assert "git_log" in done["result"]["data"]
    assert git(git_repo, env, "log", "-1", "--format=%s").strip() == "day"
    git(git_repo, env, "reset", "-q", "--soft", "HEAD~1")
    git(git_repo, env, "reset", "-q")
    assert "Secrets" in call(git_repo, git_env, "git_status", {})["result"]["data"]
    # Without rules, everything is as before.
    assert "Secrets" in call(git_repo, git_env, "git_status", {})["result"]["data"]
    # A sub-folder of the vault keeps to the vault's rules, not to rules of its own.
    (git_repo / ".obsidian").mkdir()
    git(git_repo, env, "reset", "-q")
    inside = call(git_repo, env, "git_diff", {"repo_path": "Secrets"})["result"]["data"]
    assert "4242" not in inside
    data, _ = failed(call(git_repo, env, "git_diff", {"repo_path": "Secrets", "files": ["pin.md"]}))
    assert "deny" in data
