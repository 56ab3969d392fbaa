"""Limits and hygiene at the server's edge: request body and WebSocket message size, text that is
not text, internal errors and a busy vault, each against a real server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from vaultpilot.errors import InternalError, VaultBusyError
from vaultpilot.server.envelope import error_reply
from vaultpilot.server.settings import DEFAULT_MAX_BODY, load_settings
from vaultpilot.tools import ToolContext

from .conftest import Live, command, free_socket, is_reply, make_settings, recv_json, recv_until
from .test_cli import RUNNER, read_until

MB = 1024 * 1024
ENVELOPE_KEYS = ["id", "commandName", "success", "result", "error"]
JSON = {"Content-Type": "application/json"}


# A bare FilePath lands in the example vault's folder for new notes (app.json: Inbox).


def create_body(path: str, content_size: int, chunk: int = MB) -> Iterator[bytes]:
    """A CreateNote command whose content is ``content_size`` bytes, streamed in chunks."""
    yield b'{"id": "big", "commandName": "CreateNote", "arguments": {"FilePath": "'
    yield path.encode() + b'", "Content": "'
    left = content_size
    while left > 0:
        part = min(chunk, left)
        yield b"x" * part
        left -= part
    yield b'"}, "timestamp": 1}'


def assert_too_large(reply: httpx.Response, limit: int) -> None:
    assert reply.status_code == 413, reply.text[:300]
    envelope = reply.json()
    assert list(envelope) == ENVELOPE_KEYS and envelope["success"] is False
    assert envelope["error"]["code"] == "payload_too_large"
    assert f"send at most {limit} bytes" in envelope["error"]["message"]


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault}, max_body_size=64 * 1024)


# ----- request body size
def test_a_body_over_the_limit_is_refused_with_413_however_it_is_sent(
    server: Live, vault: Path
) -> None:
    limit = 64 * 1024
    with server.http() as c:
        body = b"".join(create_body("Declared.md", 100 * 1024))
        declared = c.post("/rpc", content=body, headers=JSON)
        assert_too_large(declared, limit)
        # Chunked, with no Content-Length: refused while it is read.
        chunked = c.post(
            "/rpc", content=create_body("Chunked.md", 200 * 1024, chunk=8192), headers=JSON
        )
        assert "content-length" not in chunked.request.headers
        assert_too_large(chunked, limit)
        rest = c.post("/tools/CreateNote", json={"FilePath": "Rest.md", "Content": "y" * limit})
        assert_too_large(rest, limit)
        # Just under the limit is fine, on a new connection and the same route.
        fits = c.post("/rpc", content=b"".join(create_body("Fits.md", limit - 200)), headers=JSON)
        assert fits.status_code == 200 and fits.json()["success"] is True, fits.text[:300]
    assert not any((vault / n).exists() for n in ("Declared.md", "Chunked.md", "Rest.md"))
    assert (vault / "Inbox/Fits.md").stat().st_size == limit - 200


def test_the_limit_comes_from_the_config_file_with_a_few_mb_by_default(
    vault: Path, data_dir: Path, tmp_path: Path
) -> None:
    assert make_settings({"v": vault}, data_dir).max_body_size == DEFAULT_MAX_BODY == 4 * MB
    config = tmp_path / "config.toml"
    config.write_text("[server]\nmax_body_size = 2048\n")
    assert load_settings(vaults=[str(vault)], config=config, env={}).max_body_size == 2048


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for the RSS")
def test_a_100_mb_create_note_is_refused_without_reading_it_into_memory(
    example_vault: Path, data_dir: Path, tmp_path: Path
) -> None:
    """``vaultpilot serve`` as a user starts it; its peak RSS is read from /proc."""
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "VAULTPILOT_CONFIG": str(tmp_path / "none.toml")}
    args = [sys.executable, "-c", RUNNER, "serve", "--vault", f"notes={example_vault}",
            "--port", str(port), "--data-dir", str(data_dir), "--no-embed"]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        read_until(proc, "Press Ctrl+C")
        key = (data_dir / "server.key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, headers=headers, trust_env=False, timeout=60) as c:
            deadline = time.monotonic() + 20
            while True:  # up, and warmed by one real write
                try:
                    warm = c.post("/rpc", json=command("CreateNote", {"FilePath": "W.md"}))
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            assert warm.json()["success"] is True
            before = _peak_rss_kb(proc.pid)
            started = time.monotonic()
            chunked = c.post("/rpc", content=create_body("Huge.md", 100 * MB), headers=JSON)
            size = sum(len(b) for b in create_body("Huge.md", 100 * MB))
            declared = c.post(
                "/rpc",
                content=create_body("Huge.md", 100 * MB),
                headers={**JSON, "Content-Length": str(size)},
            )
            elapsed = time.monotonic() - started
            after = _peak_rss_kb(proc.pid)
        assert_too_large(chunked, DEFAULT_MAX_BODY)
        assert_too_large(declared, DEFAULT_MAX_BODY)
        assert not (example_vault / "Huge.md").exists()
        assert (after - before) < 30 * 1024, f"peak RSS grew by {(after - before) // 1024} MB"
        assert elapsed < 30
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ----- WebSocket message size
def test_a_websocket_message_over_the_limit_closes_with_1009(server: Live) -> None:
    async def go() -> tuple[int | None, str | None]:
        async with server.ws() as ws:
            await recv_json(ws)
            await ws.send(json.dumps(command("ReportStatus", {"Status": "x" * (100 * 1024)})))
            try:
                while True:
                    await recv_json(ws)
            except ConnectionClosed as closed:
                assert closed.rcvd is not None
                return closed.rcvd.code, closed.rcvd.reason

    code, reason = asyncio.run(go())
    assert code == 1009 and reason and "exceeds limit of 65536 bytes" in reason


def test_the_handler_refuses_a_large_message_and_keeps_the_socket(
    live: Callable[..., Live], vault: Path
) -> None:
    """Behind an ASGI server that lets larger messages through, the handler still refuses
    them, with a reply, and the socket goes on."""
    server = live(vaults={"vault": vault}, max_body_size=4096, ws_max_size=MB)

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with server.ws() as ws:
            await recv_json(ws)
            await ws.send(json.dumps(command("ReportStatus", {"Status": "é" * 3000}, "big")))
            refused = (await recv_until(ws, lambda f: f.get("type") == "reply"))[-1]
            await ws.send(json.dumps(command("ReportStatus", {"Status": "ok"}, "small")))
            return refused, (await recv_until(ws, is_reply("small")))[-1]

    refused, after = asyncio.run(go())
    assert refused["error"]["code"] == "payload_too_large"
    assert "send at most 4096 bytes" in refused["error"]["message"]
    assert after["success"] is True


# ----- text that is not text
LONE = '{"id": "s1", "commandName": "CreateNote", "arguments": {"FilePath": "Sur.md", '
LONE_CONTENT = LONE + '"Content": "a\\ud800b"}, "timestamp": 1}'


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (LONE_CONTENT.encode(), "lone surrogate (\\ud800)"),
        (LONE.replace("Sur.md", "\\udfffSur.md").encode() + b'"Content": "x"}, "timestamp": 1}',
         "lone surrogate (\\udfff)"),
        (LONE.encode() + b'"Content": "a\\ud83d"}, "timestamp": 1}', "lone surrogate"),
        (LONE.encode() + b'"Content": "a\xed\xa0\x80b"}, "timestamp": 1}', "not valid UTF-8"),
        (LONE.encode() + b'"Content": "a\xffb"}, "timestamp": 1}', "not valid UTF-8 (byte"),
    ],
)  # fmt: skip
def test_invalid_text_in_a_body_is_a_400_with_a_message(
    server: Live, vault: Path, body: bytes, fragment: str
) -> None:
    with server.http() as c:
        for path in ("/rpc", "/tools/CreateNote"):
            sent = body if path == "/rpc" else _arguments_only(body)
            reply = c.post(path, content=sent, headers=JSON)
            assert reply.status_code == 400, (path, reply.text)
            envelope = reply.json()
            assert envelope["error"]["code"] == "invalid_argument"
            assert fragment in envelope["error"]["message"], envelope
            assert "Traceback" not in reply.text
    assert not (vault / "Inbox/Sur.md").exists()


def _arguments_only(body: bytes) -> bytes:
    """The ``arguments`` object of a command body, as bytes (for the REST route)."""
    start = body.index(b'"arguments": ') + len(b'"arguments": ')
    return body[start : body.rindex(b', "timestamp"')]


def test_surrogate_pairs_and_escaped_backslashes_are_fine(server: Live, vault: Path) -> None:
    with server.http() as c:
        pair = (
            LONE.replace("Sur.md", "Pair.md")
            + '"Content": "smile \\ud83d\\ude00"}, "timestamp": 1}'
        )
        literal = LONE.replace("Sur.md", "Lit.md") + '"Content": "\\\\ud800"}, "timestamp": 1}'
        for body in (pair, literal):
            reply = c.post("/rpc", content=body.encode(), headers=JSON)
            assert reply.json()["success"] is True, reply.text
    assert (vault / "Inbox/Pair.md").read_text(encoding="utf-8") == "smile \U0001f600"
    assert (vault / "Inbox/Lit.md").read_text(encoding="utf-8") == "\\ud800"


def test_a_lone_surrogate_on_the_websocket_is_an_error_frame_and_the_socket_stays(
    server: Live, vault: Path
) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with server.ws() as ws:
            await recv_json(ws)
            await ws.send(LONE_CONTENT)
            refused = (await recv_until(ws, lambda f: f.get("type") == "reply"))[-1]
            await ws.send(json.dumps(command("CreateNote", {"FilePath": "After.md"}, "ok")))
            return refused, (await recv_until(ws, is_reply("ok")))[-1]

    refused, after = asyncio.run(go())
    assert refused["success"] is False and refused["error"]["code"] == "invalid_argument"
    assert "lone surrogate (\\ud800)" in refused["error"]["message"]
    assert after["success"] is True
    assert not (vault / "Inbox/Sur.md").exists() and (vault / "Inbox/After.md").exists()


def test_a_lone_surrogate_as_the_websocket_key_is_a_wrong_key(server: Live) -> None:
    async def go() -> tuple[dict[str, Any], int | None]:
        async with server.ws(additional_headers={}) as ws:
            await ws.send(
                '{"id": "a", "commandName": "Authenticate", "arguments": {"key": "\\ud800"}, '
                '"timestamp": 1}'
            )
            reply = await recv_json(ws)
            try:
                await recv_json(ws)
            except ConnectionClosed as closed:
                return reply, closed.rcvd.code if closed.rcvd else None
            return reply, None

    reply, code = asyncio.run(go())
    assert reply["error"]["code"] == "unauthorized" and code == 4401


# ----- our own bugs, and a busy vault
def test_an_internal_error_is_a_500_without_traceback_and_logged_with_one(
    server: Live, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bug in vaultpilot, not the caller's: every tool call's index sync blows up.
    def broken(self: ToolContext, *, force: bool = False) -> None:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(ToolContext, "fresh", broken)
    query = {"queryType": "search_by_metadata", "filters": {"folder": "Projects"}}
    with caplog.at_level(logging.ERROR), server.http() as c:
        rest = c.post("/tools/obsidian_query_vault", json=query)
        rpc = c.post("/rpc", json=command("obsidian_query_vault", query)).json()
    assert rest.status_code == 500 and rest.json()["error"]["code"] == "internal_error"
    assert rpc["error"]["code"] == "internal_error"
    for message in (rest.json()["error"]["message"], rpc["error"]["message"]):
        assert "OverflowError" in message and "Traceback" not in message
        assert 'File "' not in message
    assert any(r.exc_info and "Traceback" not in r.getMessage() for r in caplog.records)


def test_error_reply_logs_internal_errors_and_tells_busy_clients_to_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise InternalError("The index answered a row it never stored; report this.")
    except InternalError as err:
        with caplog.at_level(logging.ERROR):
            envelope, status = error_reply("c1", "CreateNote", err)
    assert status == 500 and envelope["error"] == {
        "code": "internal_error",
        "message": "The index answered a row it never stored; report this.",
    }
    assert caplog.records and caplog.records[-1].exc_info is not None
    envelope, status = error_reply(None, "UpdateNote", VaultBusyError("The vault is locked."))
    assert status == 503 and envelope["error"]["code"] == "vault_busy"
    assert "retry in a moment" in envelope["error"]["message"]


HOLD_LOCK = """
import sys, time
from pathlib import Path
from vaultpilot.vault.lock import write_lock
with write_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_vault_locked_by_another_process_is_a_retryable_503(
    live: Callable[..., Live], vault: Path, data_dir: Path
) -> None:
    server = live(vaults={"vault": vault}, write_lock_wait=0.3)
    handle = server.app.state.vaultpilot.vaults.get("vault")
    lock_path = handle.call(lambda ctx: ctx.write_lock_path())
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path), "20"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with server.http() as c:
            rest = c.post("/tools/CreateNote", json={"FilePath": "Busy.md", "Content": "b"})
            rpc = c.post("/rpc", json=command("CreateNote", {"FilePath": "Busy.md"}))
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert rest.status_code == 503 and rest.headers["retry-after"] == "1"
    assert rest.json()["error"]["code"] == "vault_busy"
    assert "retry" in rest.json()["error"]["message"].lower()
    assert rpc.status_code == 200 and rpc.headers["retry-after"] == "1"
    assert rpc.json()["error"]["code"] == "vault_busy"
    assert not (vault / "Inbox/Busy.md").exists()
    with server.http() as c:  # the lock is free again: the same command now succeeds
        again = c.post("/tools/CreateNote", json={"FilePath": "Busy.md", "Content": "b"})
    assert again.status_code == 200 and (vault / "Inbox/Busy.md").read_text() == "b"
