"""Property tests: whatever arrives on stdin, the reply is exactly one valid ActionResponse.

Each agent gets two streams of input: well-formed requests with plausible and hostile payloads
(so the operations really run), and anything at all (bytes, JSON of any shape, truncated or
broken requests). In-process runs of ``handle`` explore many inputs quickly; runs of the real
modules check the process-level promises (exit 0, one JSON line on stdout, JSON lines on stderr).
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultpilot.contract import git_agent, obsidian_agent
from vaultpilot.contract.jsonlog import JsonLog
from vaultpilot.contract.wire import Reply

from .conftest import check_reply, run_agent, tree
from .strategies import broken_requests, git_payloads, note_payloads, requests, stdin_bytes


def note_inputs(vault: Path) -> tuple[st.SearchStrategy[bytes], st.SearchStrategy[bytes]]:
    payload = note_payloads(str(vault))
    args = ("obsidian_agent", obsidian_agent.ACTIONS, payload)
    return requests(*args).map(lambda r: json.dumps(r).encode()), stdin_bytes(
        broken_requests(*args)
    )


def git_inputs() -> tuple[st.SearchStrategy[bytes], st.SearchStrategy[bytes]]:
    args = ("git_agent", git_agent.ACTIONS, git_payloads())
    return requests(*args).map(lambda r: json.dumps(r).encode()), stdin_bytes(
        broken_requests(*args)
    )


def check_note_reply(answer: Reply, codes: Counter[int]) -> None:
    reply = check_reply(answer.to_bytes())
    assert reply["code"] in (0, 1, 2, 3)
    assert (reply["result"] is None) == (reply["code"] != 0)
    assert (reply["error"] is None) == (reply["code"] == 0)
    codes[reply["code"]] += 1


def test_obsidian_agent_always_answers_once_and_stays_in_the_vault(sandbox: Path) -> None:
    outside = tree(sandbox / "outside")
    logs = io.StringIO()
    codes: Counter[int] = Counter()
    well_formed, anything = note_inputs(sandbox / "vault")

    @settings(max_examples=300, deadline=None)
    @given(raw=well_formed)
    def well_formed_requests(raw: bytes) -> None:
        check_note_reply(obsidian_agent.handle(raw, cwd=sandbox, log=JsonLog("o", logs)), codes)

    @settings(max_examples=300, deadline=None)
    @given(raw=anything)
    def any_input(raw: bytes) -> None:
        check_note_reply(obsidian_agent.handle(raw, cwd=sandbox, log=JsonLog("o", logs)), codes)

    well_formed_requests()
    any_input()
    assert set(codes) == {0, 1, 2, 3}  # every outcome was exercised
    assert tree(sandbox / "outside") == outside
    assert sorted(os.listdir(sandbox)) == ["outside", "vault"]
    assert all(json.loads(line) for line in logs.getvalue().splitlines())


def test_obsidian_agent_process_fuzz(sandbox: Path) -> None:
    outside = tree(sandbox / "outside")
    well_formed, anything = note_inputs(sandbox / "vault")

    @settings(max_examples=30, deadline=None)
    @given(raw=st.one_of(well_formed, anything))
    def prop(raw: bytes) -> None:
        run_agent("obsidian_agent", raw, cwd=sandbox)  # checks exit 0, stdout, stderr

    prop()
    assert tree(sandbox / "outside") == outside


def test_git_agent_always_answers_once(git_repo: Path, git_env: dict[str, str]) -> None:
    codes: Counter[int] = Counter()
    well_formed, anything = git_inputs()

    def check(raw: bytes) -> None:
        answer = git_agent.handle(
            raw, cwd=git_repo, env=git_env, log=JsonLog("git_agent", io.StringIO())
        )
        reply = check_reply(answer.to_bytes())
        assert reply["code"] in (0, 1) and reply["error"] is None
        assert reply["result"]["output_type"] == ("text" if reply["code"] == 0 else "error")
        codes[reply["code"]] += 1

    settings(max_examples=150, deadline=None)(given(raw=well_formed)(check))()
    settings(max_examples=150, deadline=None)(given(raw=anything)(check))()
    assert set(codes) == {0, 1}


def test_git_agent_process_fuzz(git_repo: Path, git_env: dict[str, str]) -> None:
    well_formed, anything = git_inputs()

    @settings(max_examples=15, deadline=None)
    @given(raw=st.one_of(well_formed, anything))
    def prop(raw: bytes) -> None:
        run_agent("git_agent", raw, cwd=git_repo, env=git_env)

    prop()
