"""Read tool calls answered by worker processes (``server.readers``), in a real server.

The children must give what the server process gives, see every write the moment it is
acknowledged, never take a write, and leave the server working when they die.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.server.readers import ReadWorkers
from vaultpilot.server.vaults import VaultHandle

from .conftest import Live

READS: list[tuple[str, dict[str, Any]]] = [
    (
        "obsidian_get_context",
        {"contextType": "read_note", "target": "Projects/Database Migration.md"},
    ),
    ("obsidian_get_context", {"contextType": "note_with_backlinks", "target": "Zettelkasten"}),
    ("obsidian_query_vault", {"queryType": "semantic_search", "query": "postgres migration"}),
    ("obsidian_query_vault", {"queryType": "search_by_metadata", "filters": {"tags": ["project"]}}),
    ("obsidian_get_context", {"contextType": "read_note", "target": "No Such Note"}),
    ("obsidian_query_vault", {"queryType": "list_structure"}),
]


def _readers(server: Live) -> ReadWorkers:
    handle: VaultHandle = server.app.state.vaultpilot.vaults.get(None)
    readers = handle.readers
    assert readers is not None, "the server was started without read workers"
    deadline = time.monotonic() + 30
    while readers.ready() < 2:
        assert time.monotonic() < deadline, "the read workers did not start"
        time.sleep(0.05)
    return readers


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault}, read_workers=2)


def test_workers_answer_as_the_server_process_would(server: Live) -> None:
    readers = _readers(server)
    handle = server.app.state.vaultpilot.vaults.get(None)
    before = readers.answered
    for name, arguments in READS:
        by_worker = server.rpc(name, arguments)
        by_server = handle.runtime.call_tool(name, arguments)
        if by_server.error is None:
            assert by_worker["success"] is True, by_worker
            assert by_worker["result"] == by_server.result
        else:  # the same refusal, as the same error code
            assert by_worker["success"] is False
            assert by_worker["error"]["message"] == by_server.error.message
    assert readers.answered - before == len(READS)


def test_a_write_is_seen_by_the_next_read(server: Live) -> None:
    readers = _readers(server)
    before = readers.answered
    for i in range(15):
        made = server.rpc(
            "obsidian_vault_manager",
            {"operation": "create_note", "target": f"Inbox/fresh {i}.md", "content": f"word{i}x"},
        )
        assert made["success"], made
        read = server.rpc(
            "obsidian_get_context", {"contextType": "read_note", "target": f"Inbox/fresh {i}.md"}
        )
        assert read["success"], read
        assert f"word{i}x" in read["result"]["primaryNote"]["content"]
        found = server.rpc(
            "obsidian_query_vault", {"queryType": "semantic_search", "query": f"word{i}x"}
        )
        assert [r["path"] for r in found["result"]["results"]] == [f"Inbox/fresh {i}.md"]
    # every read went to a worker; every write stayed in the server (a worker refuses writes)
    assert readers.answered - before == 30


def test_reads_go_on_when_the_workers_die(server: Live) -> None:
    readers = _readers(server)
    for pid in readers.pids():
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while readers.ready():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    answered = readers.answered
    for name, arguments in READS[:4]:
        reply = server.rpc(name, arguments)
        assert reply["success"], reply
    assert readers.answered == answered  # answered by the server process itself


def test_a_stuck_worker_is_not_waited_for(server: Live) -> None:
    readers = _readers(server)
    readers.deadline = 1.0
    stuck = readers.pids()[0]
    os.kill(stuck, signal.SIGSTOP)  # a worker that never answers
    try:
        started = time.monotonic()
        for name, arguments in READS[:4] * 2:  # some go to the stuck one
            reply = server.rpc(name, arguments)
            assert reply["success"], reply
        assert time.monotonic() - started < 8
        deadline = time.monotonic() + 5
        while _alive(stuck):  # killed, and left out
            assert time.monotonic() < deadline, "the stuck worker was not stopped"
            time.sleep(0.05)
        assert readers.ready() == 1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stuck, signal.SIGKILL)


def test_workers_end_with_the_server(server: Live) -> None:
    pids = _readers(server).pids()
    server.server.should_exit = True
    server.thread.join(timeout=20)
    deadline = time.monotonic() + 10
    for pid in pids:
        while _alive(pid):
            assert time.monotonic() < deadline, f"read worker {pid} outlived the server"
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a child the server has not reaped yet counts as ended
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
