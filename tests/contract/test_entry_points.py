"""The console scripts' entry points, called the way pip's generated wrappers call them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import MODULES, check_reply, request


@pytest.mark.parametrize("name", sorted(MODULES))
def test_console_script_wrapper(name: str, tmp_path: Path) -> None:
    wrapper = f"import sys\nfrom {MODULES[name]} import main\nsys.exit(main())\n"
    sent = request(name, "no_such_action", {})
    proc = subprocess.run(
        [sys.executable, "-c", wrapper],
        input=json.dumps(sent).encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    reply = check_reply(proc.stdout)
    assert reply["request_id"] == sent["request_id"] and reply["code"] in (1, 2)


def test_a_reader_that_goes_away_is_not_a_crash() -> None:
    """stdout closed before the reply is written: no traceback, still exit 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", MODULES["obsidian_agent"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(b"not json", timeout=60)
    assert proc.returncode == 0
    assert b"Traceback" not in err
    assert all(json.loads(line) for line in err.decode().splitlines())


@pytest.mark.parametrize("name", sorted(MODULES))
def test_help_reads_nothing_and_says_how(name: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", MODULES[name], "--help"],
        stdin=subprocess.PIPE,  # left open: --help must not wait for it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out.decode().startswith(f"usage: {name}") and "schema" in out.decode()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_ctrl_c_while_reading_answers_without_a_traceback(name: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", MODULES[name]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    time.sleep(1.5)  # started and waiting on stdin
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "was interrupted before it answered" in json.dumps(check_reply(out))
    assert b"Traceback" not in err


def test_obsidian_agent_refuses_arguments(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", MODULES["obsidian_agent"], "--bogus"],
        input=b"{}",
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    reply = check_reply(proc.stdout)
    assert reply["code"] == 2 and "takes no arguments (got '--bogus')" in reply["error"]
