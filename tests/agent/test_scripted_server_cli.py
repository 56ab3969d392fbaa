"""``python -m vaultpilot.agent.testing``: bad inputs end in one line and exit status 2.

Each case runs the real module in a child process, as `make demo` and the tests start it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = {"model": "scripted", "turns": [{"text": "hello"}]}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultpilot.agent.testing", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_a_port_in_use_is_one_line_and_exit_2(script: Path, busy_port: int) -> None:
    result = _run(str(script), "--port", str(busy_port))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {busy_port}" in lines[0] and "in use" in lines[0]
    assert "--port" in lines[0]  # says what to do instead
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--port", "70000"], "70000 is not a port number"),
        (["--port", "abc"], "'abc' is not a port number"),
        (["--host", "no-such-host.invalid"], "no such host name"),
    ],
)
def test_other_bad_listening_inputs_are_one_clear_line(
    script: Path, args: list[str], expected: str
) -> None:
    result = _run(str(script), *args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_a_script_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    result = _run(str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: cannot load the script {bad}")
    assert "Traceback" not in result.stderr


def test_a_record_file_that_cannot_be_written_is_one_line(script: Path, tmp_path: Path) -> None:
    record = tmp_path / "no-such-folder" / "record.json"
    child = subprocess.Popen(
        [sys.executable, "-m", "vaultpilot.agent.testing", str(script), "--record", str(record),
         "--exit-when-done"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]})
        host, port = base_url.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: "
                f"application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                f"{body}".encode()
            )
            assert conn.recv(65536).startswith(b"HTTP/1.")
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 2
    assert f"cannot write the record file {record}" in stderr
    assert "Traceback" not in stderr
