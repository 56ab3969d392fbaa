"""Helpers for the contract tests: run the real agent modules as child processes, a real git
repository isolated from the user's git configuration, and a sandbox around a vault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.contract.models import ActionResponse

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
SNAPSHOTS = HERE / "snapshots"
RESPONSE_KEYS = [
    "request_id",
    "api_version",
    "status",
    "code",
    "result",
    "error",
    "plan_id",
    "task_id",
    "correlation_id",
]
MODULES = {
    "obsidian_agent": "vaultpilot.contract.obsidian_agent",
    "git_agent": "vaultpilot.contract.git_agent",
}
IDS = {
    "request_id": "f5e93cc3-5d6f-4e9e-88a2-2f10e1bf7a21",
    "plan_id": "7a476b46-3b58-4b09-9afb-1b4c7d9642ce",
    "task_id": "aa0a3c3d-1b01-4df7-a96e-4081e2a0d765",
    "correlation_id": "8408fdd8-327a-4c26-9c79-8a8d51d8ab0e",
}


@dataclass(frozen=True)
class AgentRun:
    reply: dict[str, Any]
    stdout: bytes
    logs: list[dict[str, Any]]
    returncode: int


def check_reply(stdout: bytes) -> dict[str, Any]:
    """stdout must be exactly one JSON object on one line, a valid ActionResponse."""
    text = stdout.decode("utf-8")
    assert text.endswith("\n") and text.count("\n") == 1, text
    reply = json.loads(text)
    assert isinstance(reply, dict)
    assert list(reply) == RESPONSE_KEYS
    ActionResponse.model_validate(reply)
    if reply["result"] is not None:
        assert list(reply["result"]) == ["output_type", "data", "metadata"]
    assert reply["status"] == ("success" if reply["code"] == 0 else "error")
    return reply


def request(tool: str, action: str, payload: Any, **fields: Any) -> dict[str, Any]:
    """A full ActionRequest with the contract documents' example ids."""
    return {
        **IDS,
        "api_version": None,
        "tool": tool,
        "action": action,
        "context": "",
        "payload": payload,
        **fields,
    }


def run_agent(
    name: str,
    stdin: bytes | str | Mapping[str, Any],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> AgentRun:
    """Spawn the real agent module, feed it stdin, and check the process-level contract."""
    if isinstance(stdin, Mapping):
        stdin = json.dumps(stdin)
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-m", MODULES[name], *args],
        input=data,
        capture_output=True,
        cwd=cwd,
        env=None if env is None else dict(env),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    logs = [json.loads(line) for line in proc.stderr.decode("utf-8").splitlines()]
    assert all(log["agent"] == name and "correlation_id" in log for log in logs)
    return AgentRun(check_reply(proc.stdout), proc.stdout, logs, proc.returncode)


def tree(root: Path) -> dict[str, str]:
    """Every entry under root (not following symlinks) with its bytes or link target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                out[rel] = path.read_bytes().hex()
            else:
                out[rel] = "/"
    return out


@pytest.fixture(autouse=True)
def _private_data_dir(data_dir: Path) -> Path:
    """No contract test may touch the user's data folder (git_agent registers itself)."""
    return data_dir


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """sandbox/vault (notes, .obsidian, symlinks pointing out) and sandbox/outside."""
    box = tmp_path / "sandbox"
    vault = box / "vault"
    outside = box / "outside"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.md").write_text("{}\n", encoding="utf-8")
    (vault / "Projects").mkdir()
    (vault / "Projects" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    (vault / "link").symlink_to(outside, target_is_directory=True)
    (vault / "evil.md").symlink_to(outside / "secret.md")
    return box


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """An environment where git sees only the test repository's own configuration."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CEILING_DIRECTORIES=str(tmp_path),
        LC_ALL="C",
        LANG="C",
        VAULTPILOT_DATA_DIR=str(tmp_path / "data"),
    )
    return env


def git(repo: Path, env: Mapping[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=dict(env), capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path, git_env: dict[str, str]) -> Path:
    """A repository on branch main with one commit and a clean work tree."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, git_env, "init", "-q", "-b", "main")
    git(repo, git_env, "config", "user.name", "Test User")
    git(repo, git_env, "config", "user.email", "test@example.com")
    git(repo, git_env, "config", "commit.gpgsign", "false")
    (repo / "src").mkdir()
    (repo / "src" / "main.rs").write_text("fn main() {}\n", encoding="utf-8")
    (repo / "Cargo.toml").write_text('[package]\nname = "demo"\n', encoding="utf-8")
    (repo / "README.md").write_text("# Demo\n", encoding="utf-8")
    git(repo, git_env, "add", ".")
    git(repo, git_env, "commit", "-q", "-m", "initial commit")
    return repo
