"""The real ``vaultpilot`` server for the browser tests: ``create_app`` under uvicorn on a free
loopback port, over a copy of the example vault, with the scripted OpenAI-compatible model server
standing in for the model (or no model at all). ``login_link()`` asks the server for a one-time
link the way ``vaultpilot open`` does (``POST /login-link`` with the key)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import uvicorn

from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.openai_model import OpenAIChatModel
from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn
from vaultpilot.server import ServerSettings, create_app
from vaultpilot.server.keyfile import ensure_key
from vaultpilot.server.settings import ShellPolicy


@dataclass
class RealServer:
    url: str
    key: str
    app: Any
    model: ScriptedModelServer | None

    def login_link(self) -> str:
        with httpx.Client(base_url=self.url, timeout=10, trust_env=False) as c:
            reply = c.post("/login-link", headers={"Authorization": f"Bearer {self.key}"})
        reply.raise_for_status()
        return str(reply.json()["url"])


def settings_for(
    vault: Path, data: Path, *, port: int = 0, background_embedding: bool = False
) -> ServerSettings:
    """The settings ``real_server`` serves ``vault`` with (the vault's id is ``vault``)."""
    return ServerSettings(
        vaults={"vault": vault},
        data_root=data,
        shell=ShellPolicy(),
        background_embedding=background_embedding,
        port=port,
    )


@contextmanager
def real_server(
    vault: Path,
    data: Path,
    turns: list[ScriptedTurn] | None,
    *,
    ask: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    background_embedding: bool = False,
) -> Iterator[RealServer]:
    """Serve ``vault``; ``turns`` scripts the model (None: no model is configured); ``ask`` and
    ``deny`` add approval rules ("tool.operation") to the defaults. The background embedder is
    off unless ``background_embedding`` (its index is ``settings_for(vault, data).index_db``)."""
    scripted = ScriptedModelServer(turns).start() if turns is not None else None
    model = config = None
    if scripted is not None:
        client = openai.AsyncOpenAI(base_url=scripted.base_url, api_key="t", max_retries=0)
        model = OpenAIChatModel(client, "scripted")
        rules = {**dict.fromkeys(ask, "ask"), **dict.fromkeys(deny, "deny")}
        config = AgentConfig(model="scripted", max_steps=6, approvals=rules)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings = settings_for(vault, data, port=port, background_embedding=background_embedding)
    app = create_app(settings, model=model, agent_config=config)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", ws="websockets-sansio", lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start within 20 s")
        time.sleep(0.02)
    try:
        key = ensure_key(settings.key_path)[0]
        yield RealServer(f"http://127.0.0.1:{port}", key, app, scripted)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        if scripted is not None:
            scripted.stop()
