"""A real OpenAI-compatible HTTP server that plays back scripted turns and records every request.

``ScriptedModelServer(turns)`` listens on 127.0.0.1 (a free port by default) in a background
thread; use it as a context manager. Each POST to ``/v1/chat/completions`` (or
``/chat/completions``) consumes the next turn: streamed as Server-Sent Events when the request
says ``"stream": true`` (the chunks of ``script.openai_chunks``, then ``data: [DONE]``), else one
JSON completion. ``/v1/messages`` speaks Anthropic's Messages stream for the same turns.
``GET /v1/models`` lists the script's model. When the script is used up, the server answers
HTTP 500 saying so, so a test that makes one call too many fails loudly.

``requests`` holds every request received (path and JSON body) in order; ``disconnects`` the
indexes of turns whose client went away before the stream ended (an interrupt). ``before_turn``,
if given, is called with the turn index and the request body before the turn is answered (tests
use it to change the vault "in Obsidian" between two model calls).

Only the standard library is used; stop with ``stop()`` (or leaving the ``with`` block).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vaultpilot.agent.testing.script import (
    Script,
    ScriptedTurn,
    anthropic_events,
    completion_body,
    openai_chunks,
)

__all__ = ["RecordedRequest", "ScriptedModelServer"]

_POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    turn: int | None  # the turn that answered it (None: none left, or not a model call)


class _Gone(Exception):
    """The client closed the connection."""


class ScriptedModelServer:
    def __init__(
        self,
        turns: Sequence[ScriptedTurn] | Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        before_turn: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> None:
        script = turns if isinstance(turns, Script) else Script(turns=list(turns))
        self.model = script.model
        self.turns = list(script.turns)
        self.before_turn = before_turn
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[int] = []
        self._next = 0
        self._active = 0  # answers being sent
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ----- lifecycle
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def remaining(self) -> int:
        return len(self.turns) - self._next

    @property
    def finished(self) -> bool:
        """Every turn was asked for and every answer has been sent."""
        with self._lock:
            return self._next >= len(self.turns) and self._active == 0

    def start(self) -> ScriptedModelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": _POLL_S}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- turns
    def _take(self, path: str, body: dict[str, Any]) -> tuple[int, ScriptedTurn] | None:
        with self._lock:
            index = self._next if self._next < len(self.turns) else None
            if index is not None:
                self._next += 1
                self._active += 1
            self.requests.append(RecordedRequest(path, body, index))
        return None if index is None else (index, self.turns[index])

    def _wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopping.is_set() and time.monotonic() < end:
            time.sleep(min(_POLL_S, max(end - time.monotonic(), 0)))

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"scripted": self})


class _Handler(BaseHTTPRequestHandler):
    """Answers one request from the scripted server's turns (``scripted`` is set per server)."""

    scripted: ScriptedModelServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.scripted.model, "object": "model", "owned_by": "scripted"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._json(404, {"error": {"message": f"No route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "The body is not JSON."}})
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        anthropic = path.endswith("/messages")
        if not (anthropic or path.endswith("/chat/completions")):
            self._json(404, {"error": {"message": f"No route {self.path}"}})
            return
        taken = self.scripted._take(path, body)
        if taken is None:
            message = f"The scripted server has no turn left (it had {len(self.scripted.turns)})."
            self._json(500, {"error": {"message": message, "type": "server_error"}})
            return
        index, turn = taken
        try:
            if self.scripted.before_turn is not None:
                self.scripted.before_turn(index, body)
            self.scripted._wait(turn.delay)
            self._answer(index, turn, body, anthropic=anthropic)
        except _Gone:
            with self.scripted._lock:
                self.scripted.disconnects.append(index)
        finally:
            with self.scripted._lock:
                self.scripted._active -= 1

    def _answer(
        self, index: int, turn: ScriptedTurn, body: dict[str, Any], *, anthropic: bool
    ) -> None:
        if turn.status != 200:
            kind = "server_error" if turn.status >= 500 else "invalid_request_error"
            error = {"message": turn.error, "type": kind}
            self._json(turn.status, {"type": "error", "error": error})
            return
        if not body.get("stream"):
            self._json(200, completion_body(turn, index, body, self.scripted.model))
            return
        if anthropic:
            frames = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n"
                for name, data in anthropic_events(turn, index, body, self.scripted.model)
            ]
        else:
            chunks = openai_chunks(turn, index, body, self.scripted.model)
            frames = [f"data: {json.dumps(c)}\n\n" for c in chunks]
            frames.append("data: [DONE]\n\n")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for n, frame in enumerate(frames):
            if turn.stall_after is not None and n >= turn.stall_after:
                self._stall()
                return
            if n and turn.chunk_delay:
                self.scripted._wait(turn.chunk_delay)
            self._send(frame)

    def _stall(self) -> None:
        while not self.scripted._stopping.is_set():
            self._send(": waiting\n\n")  # an SSE comment: finds a closed socket
            self.scripted._wait(_POLL_S * 2)

    def _send(self, text: str) -> None:
        try:
            self.wfile.write(text.encode("utf-8"))
            self.wfile.flush()
        except OSError:  # the client left: not an error to report, the stream just ends
            raise _Gone from None

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        try:
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client left (e.g. timed out); nothing to tell it
            return
