"""``vaultpilot serve`` and ``vaultpilot key rotate`` as a user runs them (a real process).

The commands are mounted on a bare typer app here, as ``cli/main.py`` mounts them."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import typer
from typer.testing import CliRunner

from vaultpilot.cli.server_cmds import register

from .conftest import command, free_socket

RUNNER = (
    "import typer; from vaultpilot.cli.server_cmds import register; "
    "app = typer.Typer(); register(app); app()"
)


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float = 20) -> str:
    """The process's output up to ``marker`` (read unbuffered: select sees every byte)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while marker.encode() not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} in {seen!r}"
        if select.select([fd], [], [], 0.1)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"exited: {seen!r}"
            seen += chunk
    return seen.decode()


def test_serve_prints_address_and_new_key_once_and_answers(
    example_vault: Path, data_dir: Path, tmp_path: Path
) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "VAULTPILOT_CONFIG": str(tmp_path / "none.toml"), "COLUMNS": "200"}
    args = [sys.executable, "-c", RUNNER, "serve", "--vault", f"notes={example_vault}",
            "--port", str(port), "--data-dir", str(data_dir)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        out = read_until(proc, "Press Ctrl+C")
        assert f"http://127.0.0.1:{port}" in out and f'vault "notes": {example_vault}' in out
        key_file = data_dir / "server.key"
        key = key_file.read_text().strip()
        assert f"New API key: {key}" in out and str(key_file) in out
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=10) as c:
            deadline = time.monotonic() + 10
            while True:
                try:
                    reply = c.post(
                        "/rpc",
                        json=command("GetVaultContext"),
                        headers={"Authorization": f"Bearer {key}"},
                    )
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            assert reply.json()["result"]["vaultId"] == "notes"
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    again = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        out = read_until(again, "Press Ctrl+C")
        assert "New API key" not in out and key not in out and str(key_file) in out
    finally:
        again.terminate()
        again.wait(timeout=10)


def test_serve_refuses_a_remote_host_without_allow_remote(
    example_vault: Path, data_dir: Path
) -> None:
    result = CliRunner().invoke(
        cli(),
        ["serve", "--vault", str(example_vault), "--host", "0.0.0.0", "--data-dir", str(data_dir)],
    )
    assert result.exit_code == 2
    assert "--allow-remote" in result.output


def test_serve_reports_a_busy_port(example_vault: Path, data_dir: Path) -> None:
    sock = free_socket()
    sock.listen()
    try:
        port = str(sock.getsockname()[1])
        result = CliRunner().invoke(
            cli(),
            ["serve", "--vault", str(example_vault), "--port", port, "--data-dir", str(data_dir)],
        )
    finally:
        sock.close()
    assert result.exit_code == 2 and "Choose another port" in result.output


def test_key_rotate_writes_a_new_key_and_says_how_to_see_it_again(data_dir: Path) -> None:
    first = CliRunner().invoke(cli(), ["key", "rotate", "--data-dir", str(data_dir)])
    assert first.exit_code == 0
    key = (data_dir / "server.key").read_text().strip()
    assert key in first.output and "vaultpilot key show" in first.output
    assert "Browsers signed in to the agent view are signed out" in first.output
    assert (data_dir / "server.key").stat().st_mode & 0o777 == 0o600
    second = CliRunner().invoke(cli(), ["key", "rotate", "--data-dir", str(data_dir)])
    assert (data_dir / "server.key").read_text().strip() != key and key not in second.output
