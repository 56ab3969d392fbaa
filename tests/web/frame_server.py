"""A small real server speaking the agent view's wire format, for the browser tests.

It serves the committed page (``vaultpilot.web.STATIC_DIR``) at ``/``, ``GET /vaults`` and
``GET /conversations``, and a ``/ws`` WebSocket that sends ``hello`` and answers commands with
``reply`` envelopes shaped like ``vaultpilot.server``'s (``tests/server/snapshots`` pins those).
``StartAgent`` replays a scripted run: an async function given a ``Run`` that emits agent
events (``{kind, ...}`` as ``vaultpilot.agent.events.event_to_dict`` makes them), sleeps, and
waits for the page's ``ApproveToolCall``. ``InterruptAgent`` with ``force`` cancels the script and
finishes the run as interrupted, without it asks for a pause (``pauses`` counts them), as the
real server does; with no run going both it and ``ResumeAgent`` answer ``not_found``, as the
real server does. ``restart()`` stands for a server stopped and started again mid-run: the run
is gone without a ``run_finished``, ``seq`` counts from 1 again under a new ``server_id`` (none
when ``server_id`` is None, as a server that does not say it) and every socket is closed, so
the page reconnects. Every command the page sent is kept in ``commands`` for the test to check.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from vaultpilot.web import STATIC_DIR

VAULT = "vault"
COMMANDS = ["StartAgent", "InterruptAgent", "ResumeAgent", "ApproveToolCall"]  # said in hello


class Run:
    """What a script uses: emit events, sleep, wait for an approval."""

    def __init__(self, server: FrameServer, run_id: str) -> None:
        self.server = server
        self.run_id = run_id
        self.approvals: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def emit(self, kind: str, **fields: Any) -> None:
        await self.server.publish(
            {
                "type": "event",
                "runId": self.run_id,
                "vaultId": VAULT,
                "event": {"kind": kind, **fields},
            }
        )

    async def approval(self) -> dict[str, Any]:
        """The arguments of the next ApproveToolCall the page sends."""
        return await self.approvals.get()


Script = Callable[[Run], Awaitable[None]]


@dataclass
class FrameServer:
    script: Script | None = None
    model: str | None = "scripted"
    start_error: tuple[str, str] | None = None  # (code, message) StartAgent answers with
    notes: dict[str, str] = field(default_factory=dict)  # path -> content, for search and read
    commands: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    server_id: str | None = "start-1"
    pauses: int = 0
    connections: int = 0  # sockets greeted so far
    _loop: asyncio.AbstractEventLoop | None = None
    _sockets: set[WebSocket] = field(default_factory=set)
    _seq: int = 0
    _run: Run | None = None
    _task: asyncio.Task[None] | None = None

    async def publish(self, frame: dict[str, Any]) -> None:
        self._seq += 1
        text = json.dumps({**frame, "seq": self._seq})
        for ws in list(self._sockets):
            await ws.send_text(text)

    def sent(self, name: str) -> list[dict[str, Any]]:
        return [c["arguments"] for c in self.commands if c.get("commandName") == name]

    async def _answer(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command.get("commandName")
        args = command.get("arguments") or {}
        if name == "StartAgent":
            if self.start_error is not None:
                code, message = self.start_error
                return {
                    "success": False,
                    "result": None,
                    "error": {"code": code, "message": message},
                }
            if self._task is not None and not self._task.done():
                return _fail("request_refused", "A run is already going in this vault.")
            run_id = f"run{self._seq + 1}"
            self._run = Run(self, run_id)
            self._task = asyncio.create_task(self._play(self._run))
            return _ok(
                {"runId": run_id, "vaultId": VAULT, "goal": args.get("goal"), "agent": "builtin"}
            )
        if name == "ApproveToolCall":
            if self._run is not None:
                await self._run.approvals.put(args)
            return _ok({"callId": args.get("callId"), "approved": args.get("approved")})
        if name in ("InterruptAgent", "ResumeAgent"):
            return await self._control(name, bool(args.get("force")))
        if name == "obsidian_query_vault":
            query = str(args.get("query", "")).lower()
            rows = [
                {"path": p, "title": p.rsplit("/", 1)[-1].removesuffix(".md"), "relevance": 1.0,
                 "excerpt": text[:160]}
                for p, text in self.notes.items()
                if query in p.lower() or query in text.lower()
            ]  # fmt: skip
            return _ok({"results": rows, "totalFound": len(rows), "truncated": False})
        if name == "obsidian_get_context":
            path = str(args.get("target"))
            if path not in self.notes:
                return _fail("not_found", f"No note '{path}'.")
            note = {"path": path, "title": path, "content": self.notes[path], "version": "v1"}
            return _ok({"primaryNote": note})
        return _fail("invalid_argument", f"Unknown command {name!r}.")

    async def _control(self, name: str, force: bool) -> dict[str, Any]:
        """InterruptAgent (a stop with ``force``, else a pause) or ResumeAgent."""
        if self._task is None or self._task.done() or self._run is None:
            return _fail("not_found", "No matching agent run is active (active runs: none).")
        run_id = self._run.run_id
        if name == "ResumeAgent":
            return _ok({"resumed": [run_id]})
        if not force:
            self.pauses += 1
            return _ok({"interrupted": [run_id], "force": False})
        self._task.cancel()
        await self._run.emit(
            "run_finished", reason="interrupted", steps=1, prompt_tokens=0,
            completion_tokens=0, total_tokens=0, text="", message="Stopped.",
        )  # fmt: skip
        return _ok({"interrupted": [run_id], "force": True})

    async def _play(self, run: Run) -> None:
        assert self.script is not None
        await self.script(run)

    def restart(self) -> None:
        """Stop the run without a word and drop every socket under a new server start; return
        once a page has connected again (it saw the old socket close, so it is reconnecting)."""
        assert self._loop is not None, "no page connected yet"
        before = self.connections
        asyncio.run_coroutine_threadsafe(self._restart(), self._loop).result(10)
        deadline = time.monotonic() + 15
        while self.connections == before:
            if time.monotonic() > deadline:
                raise AssertionError("no page reconnected within 15 s of the restart")
            time.sleep(0.02)

    async def _restart(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._task = self._run = None
        self._seq = 0
        if self.server_id is not None:
            self.server_id = f"{self.server_id}+"
        for ws in list(self._sockets):
            self._sockets.discard(ws)
            await ws.close(code=1012)  # "service restart"

    async def _ws(self, ws: WebSocket) -> None:
        self._loop = asyncio.get_running_loop()
        # The page offers "vaultpilot" (and its page secret beside it): a browser drops a socket
        # whose server selects none of the subprotocols it offered.
        offered = ws.scope.get("subprotocols") or []
        await ws.accept(subprotocol="vaultpilot" if "vaultpilot" in offered else None)
        hello = {"type": "hello", "server": "vaultpilot", "version": "test", "vaults": [VAULT],
                 "role": "ui", "model": self.model, "commands": COMMANDS}  # fmt: skip
        if self.server_id is not None:
            hello["server_id"] = self.server_id
        await ws.send_text(json.dumps(hello))
        self._sockets.add(ws)
        self.connections += 1
        try:
            while True:
                command = json.loads(await ws.receive_text())
                self.commands.append(command)
                reply = await self._answer(command)
                await ws.send_text(
                    json.dumps({"type": "reply", "id": command.get("id"),
                                "commandName": command.get("commandName"), **reply})
                )  # fmt: skip
        except (WebSocketDisconnect, RuntimeError):
            pass  # the page went, or restart() closed the socket under the loop
        finally:
            self._sockets.discard(ws)

    def app(self) -> Starlette:
        async def vaults(_: Request) -> JSONResponse:
            coverage = {"state": "idle", "chunksEmbedded": 90, "chunks": 120, "notesPending": 2,
                        "model": "all-MiniLM-L6-v2", "rate": 0.0, "problem": None}  # fmt: skip
            return JSONResponse([{"vaultId": VAULT, "name": "Example", "embedding": coverage}])

        async def conversations(_: Request) -> JSONResponse:
            return JSONResponse(
                [
                    {
                        "id": "c1",
                        "title": "Tag last week's meetings",
                        "updated": time.time() * 1000 - 7.2e6,
                    }
                ]
            )

        return Starlette(
            routes=[
                Route("/vaults", vaults),
                Route("/conversations", conversations),
                WebSocketRoute("/ws", self._ws),
                Mount("/", StaticFiles(directory=STATIC_DIR, html=True)),
            ]
        )


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "result": result, "error": None}


def _fail(code: str, message: str) -> dict[str, Any]:
    return {"success": False, "result": None, "error": {"code": code, "message": message}}


@contextmanager
def serving(server: FrameServer) -> Iterator[FrameServer]:
    """Run ``server`` under uvicorn on a free loopback port until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        server.app(), log_level="warning", ws="websockets-sansio", lifespan="off"
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start within 10 s")
        time.sleep(0.02)
    server.url = f"http://127.0.0.1:{port}/"
    try:
        yield server
    finally:
        # At once, open WebSockets and all: a page still connected would otherwise keep the
        # server half-alive, and Chromium lets only one WebSocket per host be connecting at a
        # time, so the next test's page would wait behind its reconnects.
        uv.should_exit = uv.force_exit = True
        thread.join(10)
        sock.close()
