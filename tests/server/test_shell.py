"""ExecuteShell: off by default; when on, an argument list in the vault's root, bounded in time and
output, with an allowlisted environment, and approved over the WebSocket unless the whole
command matches an allowlist entry; the client that asked cannot approve it itself."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from vaultpilot.errors import InvalidArgumentError, SetupError
from vaultpilot.server.settings import ShellPolicy, load_settings
from vaultpilot.server.shell import plan_command, run_plan, scrubbed_env

from .conftest import Live, command, is_event, is_reply, recv_json, recv_until

LONGEST_MATCHED = 4096  # shell.MAX_MATCHED_ARG, as documented

ON = ShellPolicy(
    enabled=True,
    allowlist=("git status", "git log --oneline -n *", "git diff **", "ls", sys.executable + " **"),
)


def run(policy: ShellPolicy, cmd: str | list[str], cwd: Path) -> Any:
    return asyncio.run(run_plan(plan_command(policy, cmd), cwd=cwd, policy=policy))


def test_off_unless_enabled() -> None:
    with pytest.raises(SetupError, match="ExecuteShell is off"):
        plan_command(ShellPolicy(), "ls")


def test_commands_are_argument_lists_matched_whole_against_the_allowlist() -> None:
    plan = plan_command(ON, "git status")
    assert plan.argv == ("git", "status") and not plan.via_shell and plan.allowlisted
    # An entry is the whole command, not a prefix: no extra argument slips through.
    assert not plan_command(ON, "git status --short 'a b'").allowlisted
    assert plan_command(ON, "git status --short 'a b'").argv == ("git", "status", "--short", "a b")
    assert plan_command(ON, "ls").allowlisted
    assert not plan_command(ON, "ls /etc").allowlisted
    assert not plan_command(ON, ["ls", "-la"]).allowlisted
    assert not plan_command(ON, "git push").allowlisted
    assert not plan_command(ON, "gitx status").allowlisted
    # '*' is one argument that is not an option; '**' (last) is any further arguments.
    assert plan_command(ON, "git log --oneline -n 5").allowlisted
    assert not plan_command(ON, "git log --oneline -n").allowlisted
    assert not plan_command(ON, "git log --oneline -n 5 extra").allowlisted
    assert not plan_command(ON, "git log --oneline -n --output=out.txt").allowlisted
    assert plan_command(ON, "git diff").allowlisted
    assert plan_command(ON, "git diff --stat HEAD~1").allowlisted
    # Neither matches a path outside the vault, as itself or as an option's value.
    assert not plan_command(ON, "git diff --no-index /etc/shadow /dev/null").allowlisted
    assert not plan_command(ON, "git diff --output=../x").allowlisted
    assert not plan_command(ON, "git log --oneline -n ../5").allowlisted
    assert not plan_command(ON, ["git", "log", "--oneline", "-n", "~root"]).allowlisted
    # Shell syntax is just arguments without a shell: nothing chains.
    assert plan_command(ON, "ls; rm -rf /").argv == ("ls;", "rm", "-rf", "/")
    with pytest.raises(InvalidArgumentError, match="quotes"):
        plan_command(ON, "echo 'unclosed")
    with pytest.raises(InvalidArgumentError):
        plan_command(ON, ["ls", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        plan_command(ON, "   ")


def test_a_short_options_attached_value_outside_the_vault_is_not_matched() -> None:
    assert not plan_command(ON, "git diff -O/etc/passwd").allowlisted
    assert not plan_command(ON, "git diff -vO/etc/passwd").allowlisted
    assert not plan_command(ON, "git diff -O..").allowlisted
    assert not plan_command(ON, "git diff -O~root/x").allowlisted
    assert plan_command(ON, "git diff -U3 --stat").allowlisted  # a value inside stays allowed


def test_a_link_in_the_vault_leading_out_of_it_is_not_matched(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "a.md").write_text("a\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("key\n", encoding="utf-8")
    (root / "leak.md").symlink_to(secret)
    (root / "out").symlink_to(tmp_path)
    (root / "inside.md").symlink_to(root / "Notes" / "a.md")
    cat = ShellPolicy(enabled=True, allowlist=("cat *", "git diff **"))
    assert plan_command(cat, "cat Notes/a.md", root).allowlisted
    assert plan_command(cat, "cat inside.md", root).allowlisted  # a link that stays inside
    assert not plan_command(cat, "cat leak.md", root).allowlisted
    assert not plan_command(cat, "cat out/secret.txt", root).allowlisted
    assert not plan_command(cat, "git diff --no-index leak.md Notes/a.md", root).allowlisted
    assert not plan_command(cat, "git diff --output=out/x", root).allowlisted
    assert not plan_command(cat, "git diff -Oleak.md", root).allowlisted  # attached
    assert not plan_command(cat, "git diff -vOleak.md", root).allowlisted
    assert plan_command(cat, "git diff -Oinside.md", root).allowlisted


def test_a_long_argument_is_planned_at_once_and_never_matched(tmp_path: Path) -> None:
    """Checking an argument costs time linear in its length (planning runs while the server
    waits), and one longer than shell.MAX_MATCHED_ARG must be approved."""
    root = tmp_path / "vault"
    root.mkdir()
    (root / "leak.md").symlink_to(tmp_path)
    policy = ShellPolicy(enabled=True, allowlist=("cat *", "git diff **"))
    huge = "a" * 1_000_000
    assert plan_command(policy, ["cat", "a" * LONGEST_MATCHED], root).allowlisted
    assert not plan_command(policy, ["cat", "a" * (LONGEST_MATCHED + 1)], root).allowlisted
    assert not plan_command(policy, ["cat", huge], root).allowlisted
    longest = "-O" + "a" * (LONGEST_MATCHED - 2)  # its last 255 suffixes may be names
    dots = "-O" + "." * (LONGEST_MATCHED - 3) + "a"  # nearly every suffix starts with "."
    began = time.process_time()
    assert not plan_command(policy, ["git", "diff", "-O" + huge], root).allowlisted
    assert not plan_command(policy, ["git", "diff", "-O" + huge + "leak.md"], root).allowlisted
    assert plan_command(policy, ["git", "diff", longest, dots], root).allowlisted
    assert not plan_command(policy, ["git", "diff", longest[:-7] + "leak.md"], root).allowlisted
    took = time.process_time() - began
    assert took < 0.5, f"planning took {took:.2f} s of CPU"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [("*", "must start with a program"), ("git ** log", "only be the last"), ("'x", "split")],
)
def test_bad_allowlist_entries_are_refused_when_read(entry: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ShellPolicy(enabled=True, allowlist=(entry,))


def test_a_shell_only_when_allowed_and_then_never_allowlisted() -> None:
    shell = ShellPolicy(enabled=True, allow_shell=True, allowlist=("ls",))
    plan = plan_command(shell, "ls | wc -l")
    assert plan.argv == ("/bin/sh", "-c", "ls | wc -l") and plan.via_shell
    assert not plan.allowlisted


def test_runs_in_the_vault_root_with_an_allowlisted_environment(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("VAULTPILOT_SERVER_KEY", "server-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/x")
    monkeypatch.setenv("HARMLESS", "1")
    code = "import os; print(os.getcwd()); print(sorted(os.environ))"
    out = run(ON, [sys.executable, "-c", code], vault)
    cwd, names = out.stdout.splitlines()
    assert Path(cwd) == vault.resolve() and out.exit_code == 0
    assert "OPENAI_API_KEY" not in names and "VAULTPILOT_SERVER_KEY" not in names
    assert "DATABASE_URL" not in names and "HARMLESS" not in names and "PATH" in names
    extra = ShellPolicy(enabled=True, env=("HARMLESS", "GIT_AUTHOR_NAME"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
    assert scrubbed_env(extra)["HARMLESS"] == "1"
    assert scrubbed_env(extra)["GIT_AUTHOR_NAME"] == "Ada"
    assert "DATABASE_URL" not in scrubbed_env(extra)


@pytest.mark.parametrize(
    "name",
    ["DATABASE_URL", "MY_TOKEN", "OPENAI_API_KEY", "PGPASSWORD", "SSH_AUTH_SOCK", "SENTRY_DSN",
     "VAULTPILOT_API_KEY"],
)  # fmt: skip
def test_listing_a_secret_looking_variable_is_refused_not_dropped(
    name: str, tmp_path: Path, vault: Path
) -> None:
    with pytest.raises(ValidationError, match="looks like a secret"):
        ShellPolicy(enabled=True, env=(name,))
    config = tmp_path / "config.toml"
    config.write_text(f'[server.shell]\nenabled = true\nenv = ["HARMLESS", "{name}"]\n')
    with pytest.raises(SetupError, match=f"'shell.env': {name} looks like a secret"):
        load_settings(vaults=[str(vault)], config=config, env={})


def test_exit_code_stderr_timeout_and_output_cap(vault: Path) -> None:
    failing = run(
        ON, [sys.executable, "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"], vault
    )
    assert (failing.exit_code, failing.stderr, failing.timed_out) == (3, "bad", False)

    slow = ShellPolicy(enabled=True, timeout=0.3)
    stuck = run(
        slow,
        [sys.executable, "-c", "import time; print('start', flush=True); time.sleep(30)"],
        vault,
    )
    assert stuck.timed_out and stuck.exit_code == 124 and stuck.stdout == "start\n"

    small = ShellPolicy(enabled=True, max_output=1024)
    loud = run(small, [sys.executable, "-c", "print('x' * 100000)"], vault)
    assert loud.truncated and len(loud.stdout) == 1024 and loud.exit_code == 0


def test_a_missing_program_is_a_clear_error(vault: Path) -> None:
    from vaultpilot.errors import NotFoundError

    with pytest.raises(NotFoundError, match="'no-such-program-x' was not found"):
        run(ON, "no-such-program-x --help", vault)


@pytest.fixture
def shell_server(live: Callable[..., Live], vault: Path) -> Live:
    policy = ShellPolicy(enabled=True, allowlist=("ls *",), approval_timeout=5)
    return live(vaults={"vault": vault}, shell=policy)


def test_allowlisted_commands_run_at_once(shell_server: Live) -> None:
    reply = shell_server.rpc("ExecuteShell", {"Command": "ls Projects", "VaultID": "vault"})
    assert reply["success"], reply
    assert reply["result"]["ExitCode"] == 0 and reply["result"]["Stdout"]
    assert set(reply["result"]) == {"Stdout", "Stderr", "ExitCode", "TimedOut", "Truncated"}
    context = shell_server.rpc("GetVaultContext")["result"]
    assert "ExecuteShell" in context["availableTools"]


def test_other_commands_wait_for_approval_over_the_socket(shell_server: Live) -> None:
    cmd = f"{sys.executable} -c \"print('approved run')\""

    async def go(approve: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with shell_server.ws() as ui, shell_server.ws() as agent:
            await recv_json(ui), await recv_json(agent)
            await agent.send(json.dumps(command("ExecuteShell", {"Command": cmd}, "x1")))
            asked = (await recv_until(ui, is_event("approval_required")))[-1]["event"]
            assert (
                asked["name"] == "ExecuteShell" and "approved run" in asked["arguments"]["Command"]
            )
            answer = {"callId": asked["call_id"], "approved": approve}
            await ui.send(json.dumps(command("ApproveToolCall", answer, "a1")))
            frames = await recv_until(ui, is_event("approval_resolved"))
            reply = (await recv_until(agent, is_reply("x1")))[-1]
            return reply, frames

    reply, frames = asyncio.run(go(True))
    assert reply["success"] and reply["result"]["Stdout"] == "approved run\n"
    assert frames[-1]["event"]["approved"] is True and frames[-1]["runId"] is None
    reply, _ = asyncio.run(go(False))
    assert reply["error"]["code"] == "request_refused"
    assert "was not approved (refused)" in reply["error"]["message"]


def test_nobody_to_approve_means_no(shell_server: Live) -> None:
    reply = shell_server.rpc("ExecuteShell", {"Command": "rm -rf Projects"})
    assert reply["error"]["code"] == "request_refused"
    assert "nobody is connected to approve it" in reply["error"]["message"]


def test_unanswered_approvals_time_out(live: Callable[..., Live], vault: Path) -> None:
    server = live(vaults={"vault": vault}, shell=ShellPolicy(enabled=True, approval_timeout=0.3))

    async def go() -> dict[str, Any]:
        async with server.ws() as asker, server.ws() as ui:
            await recv_json(asker), await recv_json(ui)
            await asker.send(json.dumps(command("ExecuteShell", {"Command": "touch x"}, "x1")))
            return (await recv_until(asker, is_reply("x1")))[-1]

    reply = asyncio.run(go())
    assert "nobody answered within 0.3 s" in reply["error"]["message"]
    assert not (vault / "x").exists()


def test_the_client_that_asked_cannot_approve_its_own_command(shell_server: Live) -> None:
    cmd = f"{sys.executable} -c \"print('ran')\""

    async def go() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with shell_server.ws() as asker, shell_server.ws() as ui:
            await recv_json(asker), await recv_json(ui)
            await asker.send(json.dumps(command("ExecuteShell", {"Command": cmd}, "x1")))
            call_id = (await recv_until(asker, is_event("approval_required")))[-1]["event"][
                "call_id"
            ]
            answers = []
            # The asker says yes over its own socket, then over HTTP: both refused.
            yes = {"callId": call_id, "approved": True}
            await asker.send(json.dumps(command("ApproveToolCall", yes, "self")))
            answers.append((await recv_until(asker, is_reply("self")))[-1])
            with shell_server.http() as http:
                answers.append(http.post("/rpc", json=command("ApproveToolCall", yes)).json())
            # Still pending: another client (the person's view) approves it, and it runs.
            await ui.send(json.dumps(command("ApproveToolCall", yes, "a1")))
            assert (await recv_until(ui, is_reply("a1")))[-1]["success"] is True
            return answers, (await recv_until(asker, is_reply("x1")))[-1]

    (own, over_http), reply = asyncio.run(go())
    assert own["success"] is False and own["error"]["code"] == "request_refused"
    assert "cannot approve its own request" in own["error"]["message"]
    assert over_http["error"]["code"] == "request_refused"
    assert "must be approved from the agent view" in over_http["error"]["message"]
    assert reply["success"] and reply["result"]["Stdout"] == "ran\n"


def test_the_asker_may_deny_its_own_command_and_alone_it_is_refused(
    shell_server: Live, vault: Path
) -> None:
    async def alone() -> dict[str, Any]:
        async with shell_server.ws() as asker:
            await recv_json(asker)
            await asker.send(json.dumps(command("ExecuteShell", {"Command": "touch y"}, "x1")))
            return (await recv_until(asker, is_reply("x1")))[-1]

    reply = asyncio.run(alone())
    assert "other than the one that asked" in reply["error"]["message"]

    async def deny() -> dict[str, Any]:
        async with shell_server.ws() as asker, shell_server.ws() as ui:
            await recv_json(asker), await recv_json(ui)
            await asker.send(json.dumps(command("ExecuteShell", {"Command": "touch y"}, "x1")))
            asked = (await recv_until(asker, is_event("approval_required")))[-1]["event"]
            no = {"callId": asked["call_id"], "approved": False, "reason": "changed my mind"}
            await asker.send(json.dumps(command("ApproveToolCall", no, "n1")))
            return (await recv_until(asker, is_reply("x1")))[-1]

    denied = asyncio.run(deny())
    assert "was not approved (changed my mind)" in denied["error"]["message"]
    assert not (vault / "y").exists()
