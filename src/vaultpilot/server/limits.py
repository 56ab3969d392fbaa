"""Limits at the server's edge: how much a client may send, and that what it sends is text.

Contract:

* ``BodyLimitMiddleware(app, max_bytes=...)`` (pure ASGI) reads every HTTP request body itself,
  chunk by chunk, and hands the application the whole body only when it is at most
  ``max_bytes``. A body that declares a larger ``Content-Length``, or a chunked body that grows
  past the limit while it is read, is answered with HTTP 413 and the envelope
  (``payload_too_large``, "send at most N bytes") and never reaches a route: nothing is parsed,
  nothing is written, and memory grows by at most ``max_bytes`` whatever the client sends. The
  rest of a refused body is read and dropped (bounded in bytes and time) before the reply, so a
  client that writes its whole request before reading gets the 413 rather than a reset
  connection; the connection is then closed.
* The same middleware refuses a body that is not valid text (HTTP 400, ``invalid_argument``): not
  UTF-8 (including UTF-8-encoded surrogates), or a JSON string holding a lone surrogate escape
  such as ``"\\ud800"``. Python's JSON decoder accepts those, and the first write of such a
  string (a note, a reply, a WebSocket frame) would then fail.
* ``text_problem(raw)`` is that check for a decoded JSON document (a WebSocket frame, already
  UTF-8 by the WebSocket protocol): ``None`` when it is fine, else the message to answer with.
  ``read_frame(text)`` reads a frame with that check: the JSON value, or ``FrameError`` with the
  message (not valid text, not JSON, nested too deeply, a number too long).

``MAX_PENDING_SOCKETS`` caps the WebSockets that are open but not yet signed in (no key or
session in the handshake, waiting to send ``Authenticate``, at most ``ws.AUTH_TIMEOUT_S``): one
more is closed at once with ``CLOSE_TRY_AGAIN`` (1013) and a reason saying so. A socket signed in
by its handshake (``Authorization`` header, key subprotocol, session cookie) is never counted nor
refused, so a flood of keyless sockets cannot lock out the person's own clients.

The WebSocket message size is limited where uvicorn is started (``ws_max_size``), which closes a
socket sending a larger message with 1009 before buffering it, and again in ``ws`` for servers
started without it.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultpilot.server.envelope import ErrorCode, failure

__all__ = [
    "CLOSE_TRY_AGAIN",
    "MAX_PENDING_SOCKETS",
    "PENDING_REFUSED",
    "BodyLimitMiddleware",
    "FrameError",
    "body_problem",
    "read_frame",
    "replaying",
    "text_problem",
    "too_large_message",
]

# Sockets waiting to authenticate: a person's pages and programs need a handful at most.
MAX_PENDING_SOCKETS = 32
CLOSE_TRY_AGAIN = 1013
PENDING_REFUSED = (  # a close reason: at most 123 bytes
    f"too many sockets waiting to sign in (at most {MAX_PENDING_SOCKETS}); retry, or send the "
    "key in the handshake"
)
# How much of a refused body is read and dropped so the client sees the 413 (then the
# connection is closed instead): enough for any honest mistake, bounded for anything else.
_DRAIN_BYTES = 1024 * 1024 * 1024
_DRAIN_SECONDS = 10.0
# A surrogate written as a JSON escape: only then can a decoded string hold a lone surrogate
# (UTF-8-encoded surrogates are refused by the strict decode), so the full check runs only then.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def too_large_message(max_bytes: int, what: str = "request body") -> str:
    size = f" ({max_bytes / 1048576:.1f} MB)" if max_bytes >= 1048576 else ""
    return (
        f"The {what} is larger than this server accepts: send at most {max_bytes} bytes{size}. "
        "Split the content into several notes or appends, or raise max_body_size in the "
        "[server] table of the config file."
    )


def _lone_surrogate(value: Any) -> str | None:
    """The first string in a decoded JSON value holding a lone surrogate, else None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _surrogate_message(text: str) -> str:
    found = _LONE_SURROGATE.search(text)
    code = f"\\u{ord(found.group()):04x}" if found else "a surrogate"
    return (
        f"A JSON string holds a lone surrogate ({code}), which is not text. Send valid Unicode: "
        "a surrogate escape must be a high (\\ud800-\\udbff) and a low (\\udc00-\\udfff) one "
        "together, or send the character itself as UTF-8."
    )


def text_problem(raw: str) -> str | None:
    """Why the JSON document ``raw`` is not valid text, or None (see the module)."""
    if not _SURROGATE_ESCAPE.search(raw):
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None  # not JSON, or not readable: the parser that follows says so
    found = _lone_surrogate(data)
    return None if found is None else _surrogate_message(found)


def read_frame(text: str) -> Any:
    """The JSON value a WebSocket frame holds; ``FrameError`` saying what is wrong otherwise.

    The one reader of frames, before and after sign-in: a frame nested too deeply or holding a
    number too long to read (Python's limits) is a client's mistake like any other, never an
    exception past the handler.
    """
    problem = text_problem(text)
    if problem is not None:
        raise FrameError(problem)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FrameError(f"The frame is not valid JSON ({exc.msg} at {exc.pos}).") from None
    except (ValueError, RecursionError):  # a number too long to read, or nesting too deep
        raise FrameError(
            "The frame could not be read: a number is too long or it is nested too deeply; "
            "send one JSON object, nested at most a few levels."
        ) from None


class FrameError(ValueError):
    """A WebSocket frame that is not one readable JSON document; ``str()`` says why."""


def body_problem(body: bytes) -> str | None:
    """Why an HTTP body is not valid UTF-8 JSON text, or None (see the module)."""
    if not body:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"The body is not valid UTF-8 (byte {exc.start}: {exc.reason}). Send the JSON "
            "encoded as UTF-8."
        )
    if not _SURROGATE_ESCAPE_BYTES.search(body):
        return None
    return text_problem(text)


def _content_length(headers: Headers) -> int | None:
    value = headers.get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


async def _reply(send: Send, status: int, code: ErrorCode, message: str) -> None:
    body = json.dumps(failure(None, None, code, message)).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if status == 413:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _drain(receive: Receive, more: bool) -> None:
    """Read and drop the rest of a refused body, within ``_DRAIN_BYTES`` and ``_DRAIN_SECONDS``."""
    dropped = 0
    deadline = time.monotonic() + _DRAIN_SECONDS
    while more and dropped < _DRAIN_BYTES and time.monotonic() < deadline:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        more = bool(message.get("more_body", False))


def replaying(first: Message, receive: Receive) -> Receive:
    """A ``receive`` that gives ``first`` (a message already read) once, then the client's."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()  # after the body: wait for the disconnect, as before

    return replay


class BodyLimitMiddleware:
    """Refuses HTTP bodies over ``max_bytes`` (413) and bodies that are not text (400)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _content_length(headers)
        if declared is not None and declared > self.max_bytes:
            # A client waiting for "100 Continue" has sent nothing yet: answer at once (reading
            # would ask it to send the body).
            if headers.get("expect", "").lower() != "100-continue":
                await _drain(receive, True)
            await _reply(send, 413, "payload_too_large", too_large_message(self.max_bytes))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            more = bool(message.get("more_body", False))
            if size > self.max_bytes:
                chunks.clear()
                await _drain(receive, more)
                await _reply(send, 413, "payload_too_large", too_large_message(self.max_bytes))
                return
            chunks.append(chunk)
            if not more:
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        problem = body_problem(body)
        if problem is not None:
            await _reply(send, 400, "invalid_argument", problem)
            return
        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, replaying(whole, receive), send)
