"""An OS failure outside vault/ and index/ is one of our errors, naming the path and what to do.

Each case makes the failure for real (a folder where a file should be, a file where a folder
should be, a port already taken, a program that does not exist) and reads the message a person
or a model would see.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultpilot.cli.server_cmds import _listen
from vaultpilot.contract.git_agent import run_git
from vaultpilot.contract.orchestrator import Failed, new_request, run_process
from vaultpilot.errors import ExternalError, SetupError, StorageError, database_advice
from vaultpilot.index.db import connect as connect_index
from vaultpilot.memory.db import connect
from vaultpilot.server.keyfile import ensure_key, read_key, rotate_key
from vaultpilot.server.settings import ShellPolicy
from vaultpilot.server.shell import plan_command, run_plan
from vaultpilot.server.view import static_files


def test_a_key_file_that_is_a_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(SetupError) as err:
        read_key(tmp_path)
    assert err.value.message.startswith(f"Could not read the API key file '{tmp_path}': ")
    assert err.value.message.endswith("retry.")


def test_a_key_file_that_is_not_text_says_how_to_replace_it(tmp_path: Path) -> None:
    path = tmp_path / "server.key"
    path.write_bytes(b"\xff\xfe" * 30)
    with pytest.raises(SetupError, match=r"not hold a valid key\. Run `vaultpilot key rotate`"):
        read_key(path)


@pytest.mark.parametrize("write", [ensure_key, rotate_key])
def test_a_key_that_cannot_be_written_names_the_path(
    tmp_path: Path, write: Callable[[Path], object]
) -> None:
    (tmp_path / "data").write_text("a file where the data folder should be")
    path = tmp_path / "data" / "server.key"
    with pytest.raises(SetupError) as err:
        write(path)
    assert err.value.message.startswith(f"Could not write the API key to '{path}': ")
    assert not (tmp_path / "data").is_dir()


def test_a_memory_database_under_a_file_names_the_path_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")
    path = tmp_path / "data" / "memory.db"
    with pytest.raises(StorageError) as err:
        connect(path)
    assert err.value.message.startswith(f"Could not open the memory database '{path}': ")
    assert err.value.message.endswith("retry.")


def test_a_port_in_use_says_to_choose_another() -> None:
    taken = _listen("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(SetupError) as err:
            _listen("127.0.0.1", port)
        assert err.value.message == (
            f"Could not listen on '127.0.0.1:{port}': Address already in use. "
            "Choose another port with --port (or $VAULTPILOT_PORT)."
        )
    finally:
        taken.close()
    with socket.create_server(("127.0.0.1", 0)):  # the refused socket was closed, not leaked
        pass


def test_a_process_tool_that_cannot_start_says_what_to_check(tmp_path: Path) -> None:
    program = tmp_path / "not-a-program"
    program.write_text("plain text\n")  # exists, but may not be run
    outcome = run_process([str(program)], new_request("fake_tool", "do", {}))
    assert isinstance(outcome, Failed) and outcome.reason == "spawn"
    assert outcome.message.startswith(f"Could not start 'fake_tool' from '{program}': ")
    assert outcome.message.endswith("(`vaultpilot agents list` shows each tool's command).")


def test_git_not_on_path_says_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ExternalError) as err:
        run_git(["status"], repo=tmp_path, env={"PATH": str(tmp_path)})
    assert err.value.message == "git is not installed or not on PATH; install git to use git_agent."


def test_a_config_file_that_is_a_folder_says_what_to_do(tmp_path: Path) -> None:
    from vaultpilot.configfile import read_config

    with pytest.raises(SetupError) as err:
        read_config(tmp_path)
    assert str(tmp_path) in err.value.message
    assert "VAULTPILOT_CONFIG" in err.value.message and "readable file" in err.value.message


def test_a_shell_command_that_cannot_start_says_what_to_check(tmp_path: Path) -> None:
    program = tmp_path / "not-a-program"
    program.write_text("plain text\n")  # exists, but may not be run
    policy = ShellPolicy(enabled=True, allowlist=(str(program),))
    plan = plan_command(policy, [str(program)])
    with pytest.raises(ExternalError) as err:
        asyncio.run(run_plan(plan, cwd=tmp_path, policy=policy))
    assert err.value.message == (
        f"Could not start '{program}': Permission denied. "
        "Check that it is a program this user may run, or give another command."
    )


def test_a_missing_file_of_the_agent_view_says_to_reinstall(tmp_path: Path) -> None:
    with pytest.raises(SetupError) as err:
        static_files(tmp_path)
    assert err.value.message.startswith(
        f"Could not read the agent view's file '{tmp_path / 'index.html'}': "
    )
    assert err.value.message.endswith("Reinstall vaultpilot (or run `make web` in a checkout).")


def test_a_database_failure_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "data" / "index.db"
    full = sqlite3.OperationalError("database or disk is full")
    assert database_advice(full, db) == "The disk holding it is full: free some space and retry."
    # SQLite says a WAL that cannot grow is a "disk I/O error": the free space decides.
    io = sqlite3.OperationalError("disk I/O error")
    assert "input/output error" in database_advice(io, db)
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage._replace(free=4096))
    assert "is full" in database_advice(io, db)
    damaged = sqlite3.DatabaseError("file is not a database")
    assert database_advice(damaged, db, damaged="Delete it.") == "Delete it."
    assert "retry shortly" in database_advice(sqlite3.OperationalError("database is locked"), db)


def test_an_index_that_is_no_database_says_it_can_be_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_bytes(b"not a database, but long enough to be read as one" * 100)
    with pytest.raises(StorageError, match=r"Delete the file: vaultpilot rebuilds the index"):
        connect_index(path)
