"""git_agent treats the repository as data: nothing its config or attributes name may run.

Each test is an attack by someone who controls ``.git/config``, ``.git/hooks`` and
``.gitattributes`` (a vault synced from elsewhere). The commands they plant write a marker file
(and the environment they see); the marker must never appear, and git's answer must still be right.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, request, run_agent

SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai-secret",
    "ANTHROPIC_API_KEY": "sk-ant-test-secret",
    "GITHUB_TOKEN": "ghp_test_secret",
    "DATABASE_URL": "postgres://user:pw@db/x",
    "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
}


def call(repo: Path, env: dict[str, str], action: str, payload: Any) -> dict[str, Any]:
    return run_agent("git_agent", request("git_agent", action, payload), cwd=repo, env=env).reply


def ok(reply: dict[str, Any]) -> str:
    assert (reply["status"], reply["code"]) == ("success", 0), reply
    data = reply["result"]["data"]
    assert isinstance(data, str)
    return data


def leak_command(marker: Path, then: str = "true") -> str:
    """A shell command that dumps its environment into ``marker`` and then runs ``then``."""
    return f"env > {shlex.quote(str(marker))}; {then}"


def script(path: Path, marker: Path) -> Path:
    """An executable that dumps its environment into ``marker`` (a hook, a gpg program)."""
    path.write_text(f"#!/bin/sh\n{leak_command(marker)}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def env(git_env: dict[str, str]) -> dict[str, str]:
    """The test repository's environment plus the secrets a vaultpilot process holds."""
    return {**git_env, **SECRETS}


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="hooks and markers use /bin/sh")


def test_fsmonitor_does_not_run_on_status(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-env.txt"
    git(git_repo, env, "config", "core.fsmonitor", leak_command(marker, "echo"))
    (git_repo / "README.md").write_text("# Changed\n", encoding="utf-8")
    data = ok(call(git_repo, env, "git_status", {}))
    assert not marker.exists(), marker.read_text()
    assert data.startswith("On branch main\n")
    assert "modified:   README.md" in data
    for action, payload in (("git_diff", {}), ("git_add", {"files": ["README.md"]})):
        ok(call(git_repo, env, action, payload))
        assert not marker.exists(), action


def test_hooks_do_not_run_on_commit(git_repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    hooks = git_repo / ".git" / "hooks"
    planted = tmp_path / "planted-hooks"
    planted.mkdir()
    names = ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "post-index-change")
    for name in names:
        script(hooks / name, tmp_path / f"{name}.txt")
        script(planted / name, tmp_path / f"planted-{name}.txt")
    (git_repo / "README.md").write_text("# Changed\n", encoding="utf-8")
    ok(call(git_repo, env, "git_add", {"files": ["README.md"]}))
    ok(call(git_repo, env, "git_commit", {"message": "change the readme"}))
    # The same with the hooks folder moved by the repository's config.
    git(git_repo, env, "config", "core.hooksPath", str(planted))
    (git_repo / "README.md").write_text("# Changed again\n", encoding="utf-8")
    ok(call(git_repo, env, "git_add", {"files": ["README.md"]}))
    ok(call(git_repo, env, "git_commit", {"message": "change it again"}))
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == []
    log = git(git_repo, env, "log", "--format=%s")
    assert log.splitlines() == ["change it again", "change the readme", "initial commit"]


def test_a_filter_driver_does_not_run_on_add(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "filter-env.txt"
    git(git_repo, env, "config", "filter.evil.clean", leak_command(marker, "cat"))
    git(git_repo, env, "config", "filter.evil.smudge", leak_command(marker, "cat"))
    git(git_repo, env, "config", "filter.evil.process", leak_command(marker))
    git(git_repo, env, "config", "filter.evil.required", "true")
    git(git_repo, env, "config", "filter.Other.clean", leak_command(marker, "cat"))
    (git_repo / ".gitattributes").write_text("*.md filter=evil\n*.txt filter=Other\n")
    (git_repo / "Note.md").write_text("# Note\n", encoding="utf-8")
    (git_repo / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    files = [".gitattributes", "Note.md", "todo.txt"]
    ok(call(git_repo, env, "git_add", {"files": files}))
    ok(call(git_repo, env, "git_status", {}))
    ok(call(git_repo, env, "git_commit", {"message": "add a note"}))
    assert not marker.exists(), marker.read_text()
    assert git(git_repo, env, "show", "HEAD:Note.md") == "# Note\n"  # stored as written
    assert git(git_repo, env, "show", "HEAD:todo.txt") == "buy milk\n"


def test_a_filter_name_that_cannot_be_switched_off_is_refused(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "filter-env.txt"
    git(git_repo, env, "config", "filter.a=b.clean", leak_command(marker, "cat"))
    (git_repo / ".gitattributes").write_text("*.md filter=a=b\n", encoding="utf-8")
    (git_repo / "Note.md").write_text("# Note\n", encoding="utf-8")
    reply = call(git_repo, env, "git_add", {"files": ["Note.md"]})
    assert (reply["status"], reply["code"], reply["result"]["metadata"]) == ("error", 1, None)
    assert "filter driver named 'a=b'" in reply["result"]["data"]
    assert not marker.exists()
    assert git(git_repo, env, "diff", "--cached", "--name-only") == ""


def test_external_diff_and_textconv_do_not_run(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "diff-env.txt"
    git(git_repo, env, "config", "diff.external", leak_command(marker))
    git(git_repo, env, "config", "diff.evil.command", leak_command(marker))
    git(git_repo, env, "config", "diff.conv.textconv", leak_command(marker, "cat"))
    (git_repo / ".gitattributes").write_text("*.md diff=evil\n*.toml diff=conv\n")
    (git_repo / "README.md").write_text("# Changed\n", encoding="utf-8")
    (git_repo / "Cargo.toml").write_text('[package]\nname = "other"\n', encoding="utf-8")
    data = ok(call(git_repo, env, "git_diff", {}))
    assert not marker.exists(), marker.read_text()
    assert "-# Demo\n+# Changed\n" in data and '-name = "demo"\n+name = "other"\n' in data
    ok(call(git_repo, env, "git_log", {"limit": 1}))
    assert not marker.exists()


def test_commit_signing_program_does_not_run(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "gpg-env.txt"
    gpg = script(tmp_path / "fake-gpg", marker)
    git(git_repo, env, "config", "commit.gpgSign", "true")
    git(git_repo, env, "config", "gpg.program", str(gpg))
    git(git_repo, env, "config", "log.showSignature", "true")
    git(git_repo, env, "config", "core.editor", leak_command(marker))
    git(git_repo, env, "config", "core.pager", leak_command(marker, "cat"))
    (git_repo / "README.md").write_text("# Changed\n", encoding="utf-8")
    ok(call(git_repo, env, "git_add", {"files": ["README.md"]}))
    ok(call(git_repo, env, "git_commit", {"message": "unsigned"}))
    assert "unsigned" in ok(call(git_repo, env, "git_log", {"limit": 1}))
    assert not marker.exists(), marker.read_text()


def test_git_gets_no_secret_from_the_environment(
    git_repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """What git and anything it might start can see: the allowlist, never the secrets."""
    seen = tmp_path / "seen-env.txt"
    # An alias is the repository's own way to run a command; git_agent never calls one, so the
    # environment is read through a wrapper on PATH that stands in for git itself.
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    real_git = next(
        Path(d, "git") for d in env["PATH"].split(":") if d and Path(d, "git").is_file()
    )
    wrapper = wrapper_dir / "git"
    wrapper.write_text(
        f'#!/bin/sh\nenv >> {shlex.quote(str(seen))}\nexec {shlex.quote(str(real_git))} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    shadowed = {**env, "PATH": f"{wrapper_dir}:{env['PATH']}", "UNLISTED_SETTING": "x"}
    ok(call(git_repo, shadowed, "git_status", {}))
    names = {line.partition("=")[0] for line in seen.read_text().splitlines() if "=" in line}
    assert names, "the wrapper did not run"
    assert not names & {*SECRETS, "UNLISTED_SETTING"}
    assert {"PATH", "HOME", "GIT_TERMINAL_PROMPT"} <= names


def test_core_worktree_cannot_point_git_at_files_outside_the_repository(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    """A synced .git/config naming another work tree: its files would be read as the vault's."""
    outside = tmp_path / "outside"
    (outside / ".ssh").mkdir(parents=True)
    (outside / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MATERIAL\n", encoding="utf-8")
    git(git_repo, git_env, "config", "core.worktree", str(outside))
    for action in ("git_diff", "git_status"):
        reply = call(git_repo, git_env, action, {})
        assert "PRIVATE-KEY-MATERIAL" not in json.dumps(reply)
        assert "id_rsa" not in json.dumps(reply) and ".ssh" not in json.dumps(reply)


def test_a_git_file_pointing_at_another_repository_is_refused(
    git_repo: Path, git_env: dict[str, str], tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / ".git").write_text(f"gitdir: {git_repo / '.git'}\n", encoding="utf-8")
    reply = call(vault, git_env, "git_log", {})
    assert reply["status"] == "error" and "Cargo" not in json.dumps(reply)
    assert "not in a .git folder of its own" in json.dumps(reply), reply
