"""Every request and response example of the two contract documents, fed to the real agents.

The examples are transcribed in ``fixtures/`` with the documents' placeholders ("<same as
request>", "<propagated>", "<new random uuid>", "<file contents>", "...") kept; this module
resolves each placeholder and compares the reply field by field.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import FIXTURES, IDS, RESPONSE_KEYS, git, request, run_agent

OBSIDIAN = json.loads((FIXTURES / "obsidian_agent_examples.json").read_text(encoding="utf-8"))
GIT = json.loads((FIXTURES / "git_agent_examples.json").read_text(encoding="utf-8"))


def expect(reply: dict[str, Any], example: dict[str, Any], sent: dict[str, Any]) -> None:
    """Compare ``reply`` with a document example, field by field, resolving placeholders."""
    assert list(reply) == RESPONSE_KEYS
    for key, want in example.items():
        got = reply[key]
        if want == "<same as request>":
            assert got == sent[key], key
        elif want == "<propagated>":
            assert got == sent[key] and got is not None, key
        elif want == "<new random uuid>":
            assert uuid.UUID(got).version == 4 and got != sent.get(key), key
        elif isinstance(want, str) and want.endswith("..."):
            assert isinstance(got, str) and got.startswith(want[:-3]), (key, got)
        else:
            assert got == want, key


def with_vault(payload: dict[str, Any], vault: Path) -> dict[str, Any]:
    return {**payload, "vault_path": str(vault)} if "vault_path" in payload else payload


@pytest.mark.parametrize("action", ["create_note", "read_note", "update_note"])
def test_obsidian_success_examples(tmp_path: Path, action: str) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    existing = OBSIDIAN["payloads"]["create_note"]["content"]
    if action != "create_note":
        (vault / "ProjectPlan.md").write_text(existing, encoding="utf-8")
    sent = request("obsidian_agent", action, with_vault(OBSIDIAN["payloads"][action], vault))

    reply = run_agent("obsidian_agent", sent).reply

    result = dict(OBSIDIAN["results"][action])
    if result["data"] == "<file contents>":
        result["data"] = existing
    envelope = {**OBSIDIAN["success_envelope"], "result": result}
    expect(reply, envelope, sent)
    written = OBSIDIAN["payloads"][action].get("content", existing)
    assert (vault / "ProjectPlan.md").read_text(encoding="utf-8") == written


def test_obsidian_parse_error_example() -> None:
    reply = run_agent("obsidian_agent", b"{ this is not json").reply
    expect(reply, OBSIDIAN["parse_error"], {})


def test_obsidian_missing_vault_path_example() -> None:
    payload = {"note_name": "ProjectPlan"}
    sent = request("obsidian_agent", "read_note", payload)
    reply = run_agent("obsidian_agent", sent).reply
    expect(reply, OBSIDIAN["missing_field"], sent)
    assert (reply["plan_id"], reply["task_id"]) == (IDS["plan_id"], IDS["task_id"])


def test_obsidian_file_system_error_example(tmp_path: Path) -> None:
    """The document's example of a file-system error: update of a missing note."""
    vault = tmp_path / "vault"
    vault.mkdir()
    sent = request(
        "obsidian_agent", "update_note", with_vault(OBSIDIAN["payloads"]["update_note"], vault)
    )
    reply = run_agent("obsidian_agent", sent).reply
    expect(reply, OBSIDIAN["file_system_error"], sent)
    assert "ProjectPlan" in reply["error"] and "create_note" in reply["error"]
    assert list(vault.iterdir()) == []


def test_git_success_example(git_repo: Path, git_env: dict[str, str]) -> None:
    sent = request("git_agent", "git_status", GIT["payloads"]["git_status"])
    reply = run_agent("git_agent", sent, cwd=git_repo, env=git_env).reply
    assert reply == GIT["success_example"]


def test_git_error_example(tmp_path: Path, git_env: dict[str, str]) -> None:
    not_a_repo = tmp_path / "plain"
    not_a_repo.mkdir()
    sent = request("git_agent", "git_status", GIT["payloads"]["git_status"])
    reply = run_agent("git_agent", sent, cwd=not_a_repo, env=git_env).reply
    assert reply == GIT["error_example"]


def test_git_payload_examples_in_order(git_repo: Path, git_env: dict[str, str]) -> None:
    """git_diff, git_add, git_commit and git_log with the document's payloads."""
    (git_repo / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n', "utf-8")
    (git_repo / "README.md").write_text("# Demo\n\nMore.\n", encoding="utf-8")

    def call(action: str) -> dict[str, Any]:
        sent = request("git_agent", action, GIT["payloads"][action])
        reply = run_agent("git_agent", sent, cwd=git_repo, env=git_env).reply
        for key in ("request_id", "plan_id", "task_id", "correlation_id"):
            assert reply[key] == sent[key]
        assert (reply["status"], reply["code"], reply["error"]) == ("success", 0, None)
        assert reply["result"]["output_type"] == "text"
        assert reply["result"]["metadata"] is None
        return reply

    diff = call("git_diff")["result"]["data"]
    assert "diff --git a/src/main.rs b/src/main.rs" in diff and "README.md" not in diff

    assert call("git_add")["result"]["data"] == ""
    staged = git(git_repo, git_env, "diff", "--cached", "--name-only").split()
    assert staged == ["README.md", "src/main.rs"]

    assert "feat: add new planner" in call("git_commit")["result"]["data"]
    assert git(git_repo, git_env, "log", "-1", "--format=%s").strip() == "feat: add new planner"

    log = call("git_log")["result"]["data"]
    assert log.count("\ncommit ") + log.startswith("commit ") == 2
    assert "feat: add new planner" in log and "initial commit" in log
