"""Fixtures for the server tests: settings on a copy of the example vault, a real uvicorn server
on a free port, an in-process client, WebSocket helpers and snapshots.

``live(...)`` starts ``create_app(settings)`` under uvicorn in a background thread on a socket
bound to a free loopback port (stopped after the test). ``client`` is Starlette's TestClient on
the same application stack (lifespan included) for tests that need no real socket.
``snapshot(name, value)`` compares ``scrub(value)`` with ``snapshots/<name>.json``;
``UPDATE_SNAPSHOTS=1`` rewrites them after an intended change.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.testclient import TestClient
from websockets.asyncio.client import ClientConnection, connect

from tests.snapshot import check_snapshot
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.model import ModelClient
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.server import ServerSettings, create_app
from vaultpilot.server.keyfile import ensure_key
from vaultpilot.server.serving import HEADER_TIMEOUT_S, uvicorn_config
from vaultpilot.server.settings import ShellPolicy

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOW = datetime(2025, 11, 12, 18, 0, tzinfo=UTC)


def pin_times(root: Path) -> None:
    """Fixed, distinct mtimes a day apart in path order, so 'recent' lists are stable."""
    base = int(NOW.timestamp()) - 3600
    for i, path in enumerate(sorted(p for p in root.rglob("*") if p.is_file())):
        stamp = (base - 86400 * i) * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))


def make_settings(
    vaults: dict[str, Path], data_dir: Path, *, shell: ShellPolicy | None = None, **kw: Any
) -> ServerSettings:
    kw.setdefault("background_embedding", False)  # on in tests that check it (test_embedding)
    return ServerSettings(vaults=vaults, data_root=data_dir, shell=shell or ShellPolicy(), **kw)


@pytest.fixture(autouse=True)
def no_agent_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No model unless a test gives one: the developer's own agent config is not read."""
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "no-config.toml"))
    for name in (
        "VAULTPILOT_MODEL",
        "VAULTPILOT_BASE_URL",
        "OPENAI_BASE_URL",
        "VAULTPILOT_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(example_vault: Path) -> Path:
    pin_times(example_vault)
    return example_vault


@pytest.fixture
def settings(vault: Path, data_dir: Path) -> ServerSettings:
    return make_settings({"vault": vault}, data_dir)


@pytest.fixture
def api_key(settings: ServerSettings) -> str:
    return ensure_key(settings.key_path)[0]


@pytest.fixture
def client(settings: ServerSettings, api_key: str) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, base_url="http://127.0.0.1:34700") as c:
        c.headers["Authorization"] = f"Bearer {api_key}"
        yield c


def command(name: str, arguments: dict[str, Any] | None = None, cid: str = "c1") -> dict[str, Any]:
    return {"id": cid, "commandName": name, "arguments": arguments or {}, "timestamp": 1.0}


@dataclass
class Live:
    """A running server: its URL, key and application state."""

    app: Any
    port: int
    key: str
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.auth, timeout=10, trust_env=False)

    def rpc(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.http() as c:
            reply: dict[str, Any] = c.post("/rpc", json=command(name, arguments)).json()
            return reply

    def ws(self, path: str = "/ws", **kw: Any) -> connect:
        """A WebSocket client (``async with``); the key goes in the header unless overridden."""
        headers = kw.pop("additional_headers", self.auth)
        uri = kw.pop("uri", f"ws://127.0.0.1:{self.port}{path}")
        return connect(uri, additional_headers=headers, open_timeout=5, proxy=None, **kw)


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
def live(data_dir: Path) -> Iterator[Callable[..., Live]]:
    """``live(settings=None, vaults=..., model=None, embedder=None, ws_max_size=None,
    header_timeout=HEADER_TIMEOUT_S, **settings_fields)`` → a running ``Live``."""
    running: list[Live] = []

    def start(
        settings: ServerSettings | None = None,
        *,
        vaults: dict[str, Path] | None = None,
        model: ModelClient | None = None,
        agent_config: AgentConfig | None = None,
        embedder: Callable[[], Embedder] | None = None,
        ws_max_size: int | None = None,
        header_timeout: float = HEADER_TIMEOUT_S,
        **fields: Any,
    ) -> Live:
        sock = free_socket()
        port = sock.getsockname()[1]
        if settings is None:
            assert vaults is not None
            settings = make_settings(vaults, data_dir, **fields)
        settings = settings.model_copy(update={"port": port})
        extra = {"embedder": embedder} if embedder is not None else {}
        app = create_app(settings, model=model, agent_config=agent_config, **extra)
        # As `vaultpilot serve` starts it, unless a test checks the application's own limit or
        # a short header timeout.
        config = uvicorn_config(
            app, ws_max_size=ws_max_size or settings.max_body_size, header_timeout=header_timeout
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        key = ensure_key(settings.key_path)[0]
        live_ = Live(app, port, key, server, thread)
        running.append(live_)
        return live_

    yield start
    for item in running:
        item.server.should_exit = True
        item.thread.join(timeout=10)


async def recv_json(ws: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return frame


async def recv_until(
    ws: ClientConnection, pred: Callable[[dict[str, Any]], bool], timeout: float = 15.0
) -> list[dict[str, Any]]:
    """Frames received up to and including the first one ``pred`` accepts."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        frame = await recv_json(ws, max(0.1, deadline - time.monotonic()))
        frames.append(frame)
        if pred(frame):
            return frames


def is_event(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f.get("type") == "event" and f["event"]["kind"] == kind


def is_reply(cid: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f.get("type") == "reply" and f.get("id") == cid


def approved_by_another_client(
    server: Live, send: Callable[[], dict[str, Any]], waiting: Callable[[], None] = lambda: None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Make an HTTP call that waits for approval (``send``, in a thread) while a second client,
    a socket, approves what it asks; ``waiting`` runs while the call waits. The
    ``approval_required`` event and the call's reply."""
    replies: list[dict[str, Any]] = []

    async def go() -> dict[str, Any]:
        async with server.ws() as ui:
            await recv_json(ui)
            asker = threading.Thread(target=lambda: replies.append(send()))
            asker.start()
            asked = (await recv_until(ui, is_event("approval_required")))[-1]["event"]
            waiting()
            yes = {"callId": asked["call_id"], "approved": True}
            await ui.send(json.dumps(command("ApproveToolCall", yes, "a1")))
            await recv_until(ui, is_reply("a1"))
            await asyncio.to_thread(asker.join, 10)
            return dict(asked)

    asked = asyncio.run(go())
    return asked, replies


# Token counts depend on the prompt and tool schemas (the agent's and the tools' business).
_VOLATILE = {
    "runId",
    "conversationId",
    "run_id",
    "duration_ms",
    "time",
    "seq",
    "prompt_tokens",
    "total_tokens",
    "run_total_tokens",
}
_IDS = re.compile(r"(approval|run)-[0-9a-f]{12}")
_TODAY = re.compile(
    r"\d{4}-\d{2}-\d{2} \([A-Z][a-z]+day\)|Daily/\d{4}-\d{2}-\d{2}\.md"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[+-]\d{2}:\d{2}|Z)"  # file times: the zone varies
)


def scrub(value: Any) -> Any:
    """Replace what changes from run to run (ids, times, today's date) with placeholders."""
    if isinstance(value, dict):
        return {
            k: ("<volatile>" if k in _VOLATILE and v is not None else scrub(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return _TODAY.sub("<today>", _IDS.sub(r"\1-<id>", value))
    return value


def snapshot(name: str, value: Any) -> None:
    check_snapshot(SNAPSHOTS / f"{name}.json", scrub(value))
