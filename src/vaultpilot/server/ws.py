"""WebSocket ``/ws``: the hub that fans frames out to subscribers, and the socket's life.

Frames from the server are JSON text, each with a ``type``:

* ``hello``: first frame after authentication (vaults, commands, the subscriber's role);
* ``reply``: the envelope answering one of this socket's commands (``{type, id, commandName,
  success, result, error}``), in the order the commands finish;
* ``event``: an agent event ``{type, seq, runId, vaultId, event: {kind, ...}}`` (approval
  requests of ExecuteShell come the same way, with ``runId`` null);
* ``status``: a ``ReportStatus`` push ``{type, seq, vaultId, status, message, source, time}``;
* ``command``: sent to ``agent`` subscribers only: a UI command for an external agent
  (``{type, seq, id, commandName, arguments}``).

``hello`` also carries ``model`` (the built-in agent's model, or null when none is configured),
``commands`` (the command names this server takes) and ``server_id`` (random per server start:
``seq`` numbers restart with it).

Frames to the server are ``IToolCommand`` objects (the same as ``POST /rpc``). Every socket is a
subscriber (role ``ui``) once authenticated; ``Subscribe {role: "agent"}`` also makes it
receive UI commands, and ``Subscribe {format: "spec"}`` switches its agent events to the
specification's ``{type, data}`` shape (see ``spec_events``). A socket whose handshake carried
no key (and no session cookie, see ``auth``) must send ``Authenticate {key}`` first; anything
else, a wrong key or nothing within ``AUTH_TIMEOUT_S`` closes it with 4401, after an
``unauthorized`` reply saying how to sign in (and first, for a frame that cannot be read as
JSON, why: ``limits.read_frame``'s reason); at most
``limits.MAX_PENDING_SOCKETS`` such sockets wait at once, one more is closed with 1013 and the
reason (sockets signed in by their handshake are never refused). ``Authenticate`` on a socket
already signed in is answered with a ``request_refused`` error and changes nothing. ``Subscribe``
changes only the fields it sends. What signed a socket in is checked again every
``REVALIDATE_S``: a session signed out (in any tab) or expired, or a key rotated since
(``vaultpilot key rotate``), closes the socket with 4401 and the reason.

**Resuming.** The hub keeps every frame of each active run (``open_run`` / ``close_run``, at
most ``MAX_BACKLOG`` frames a run). A new socket receives, right after ``hello``, the stored
frames of the runs still going, unchanged (same ``seq``), so a page that reloads mid-run shows
the run so far and follows it; ``Subscribe {since: seq}`` sends again the stored frames after
``seq`` (in the socket's format), for a client that reconnects and knows what it has seen.

A text message over ``max_message`` bytes (the ``max_body_size`` setting) is answered with a
``payload_too_large`` reply and not run; uvicorn, started with ``ws_max_size`` at the same
limit, closes a socket sending one with 1009 ("message too big") before buffering it. A frame
that is not valid text (a lone surrogate escape) gets an ``invalid_argument`` reply; in every
case the socket stays open for the next command.

Each subscriber has a bounded queue. ``Hub.publish`` serialises a frame once and offers it to
every queue without waiting; a subscriber whose queue is full is dropped and its socket closed
with 1013 ("too slow"), so one stalled client never holds up the rest or grows memory, and a
client never silently misses an event (``seq`` numbers have no gaps while it is connected).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from starlette.websockets import WebSocket, WebSocketDisconnect

from vaultpilot.server.auth import (
    signed_out_message,
    ws_auth_state,
    ws_credential,
    ws_subprotocol,
)
from vaultpilot.server.envelope import ErrorCode, failure
from vaultpilot.server.keyfile import KeyStore
from vaultpilot.server.limits import (
    CLOSE_TRY_AGAIN,
    MAX_PENDING_SOCKETS,
    PENDING_REFUSED,
    FrameError,
    read_frame,
    too_large_message,
)
from vaultpilot.server.spec_events import SpecStream, translate_all

__all__ = [
    "AUTH_TIMEOUT_S",
    "CLOSE_TOO_SLOW",
    "CLOSE_UNAUTHORIZED",
    "MAX_BACKLOG",
    "REVALIDATE_S",
    "Format",
    "Hub",
    "Subscriber",
    "serve",
]

log = logging.getLogger(__name__)
AUTH_TIMEOUT_S = 10.0
REVALIDATE_S = 2.0  # how often an open socket's key or session is checked again
CLOSE_UNAUTHORIZED = 4401
CLOSE_TOO_SLOW = 1013
_MAX_IN_FLIGHT = 64
# Frames kept per active run for clients that connect mid-run: a 1,000-step run with streamed
# text stays well under it (about 10 frames a step plus the chunks).
MAX_BACKLOG = 50_000
Role = Literal["ui", "agent"]
Format = Literal["frames", "spec"]


_client_ids = itertools.count(1)


class Subscriber:
    """One connected socket's outgoing queue and role; the object itself is the client's
    identity (``client_id`` names it in logs and messages), so approvals can tell clients apart."""

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue(maxsize)
        self.role: Role = "ui"
        self.format: Format = "frames"
        self.dropped = asyncio.Event()
        self.client_id = f"ws-{next(_client_ids)}"

    def offer(self, text: str) -> bool:
        """Queue a frame; False (and ``dropped`` set) when the queue is full."""
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            self.dropped.set()
            return False
        return True

    def send(self, frame: dict[str, Any]) -> None:
        self.offer(json.dumps(frame, ensure_ascii=False))

    def render(self, frames: list[dict[str, Any]]) -> list[str]:
        """Stored frames as this subscriber's format wants them, serialised."""
        shaped = translate_all(frames) if self.format == "spec" else frames
        return [json.dumps(f, ensure_ascii=False) for f in shaped]


class Hub:
    """Every subscriber of one server; ``publish`` never blocks."""

    def __init__(self) -> None:
        self._subscribers: set[Subscriber] = set()
        self._seq = itertools.count(1)
        self._spec = SpecStream()
        self._backlog: dict[str, list[dict[str, Any]]] = {}  # active run id -> its frames
        self.pending = 0  # sockets open and waiting to authenticate (``serve``)

    def open_run(self, run_id: str) -> None:
        """Keep the frames of ``run_id`` for clients that connect while it goes."""
        self._backlog.setdefault(run_id, [])

    def close_run(self, run_id: str) -> None:
        self._backlog.pop(run_id, None)

    def backlog(self, since: int = 0) -> list[dict[str, Any]]:
        """The stored frames of the active runs with a ``seq`` after ``since``, in order."""
        frames = [f for run in self._backlog.values() for f in run if f["seq"] > since]
        return sorted(frames, key=lambda f: int(f["seq"]))

    def add(self, sub: Subscriber) -> None:
        self._subscribers.add(sub)

    def remove(self, sub: Subscriber) -> None:
        self._subscribers.discard(sub)

    def count(self, role: Role | None = None, *, besides: Subscriber | None = None) -> int:
        """How many subscribers (of ``role``) there are, not counting ``besides``."""
        return sum(
            1 for s in self._subscribers if (role is None or s.role == role) and s is not besides
        )

    def publish(self, frame: dict[str, Any], *, role: Role | None = None) -> int:
        """Send ``frame`` (given a ``seq``) to every subscriber (of ``role``); returns how many."""
        framed = {**frame, "seq": next(self._seq)}
        text = json.dumps(framed, ensure_ascii=False)
        stored = self._backlog.get(str(framed.get("runId")))
        if stored is not None and len(stored) < MAX_BACKLOG:
            stored.append(framed)
        # Every frame goes through the translator (it follows each run's turns), but is
        # serialised in the spec format only when a socket asked for it.
        spec = self._spec.translate(framed)
        spec_texts: list[str] | None = None
        sent = 0
        for sub in list(self._subscribers):
            if role is not None and sub.role != role:
                continue
            if sub.format == "spec":
                if spec_texts is None:
                    spec_texts = [json.dumps(f, ensure_ascii=False) for f in spec]
                ok = all(sub.offer(t) for t in spec_texts)
            else:
                ok = sub.offer(text)
            if ok:
                sent += 1
            else:
                self._subscribers.discard(sub)
                log.warning("dropped a WebSocket subscriber whose queue was full")
        return sent


Dispatch = Callable[[str, Subscriber], Awaitable[dict[str, Any]]]


async def _authenticate(ws: WebSocket, check: Callable[[str | None], bool]) -> str | None:
    """Read the first frame as ``Authenticate {key}``; reply, and close on failure. The key
    that signed the socket in, or None."""
    command_id: str | None = None
    name: str | None = None
    key: str | None = None
    unreadable = ""  # what was wrong with a first frame that could not be read
    try:
        data = read_frame(await asyncio.wait_for(ws.receive_text(), AUTH_TIMEOUT_S))
        if isinstance(data, dict):
            raw_id = data.get("id")
            command_id = raw_id if isinstance(raw_id, str) else None
            name = data.get("commandName") if isinstance(data.get("commandName"), str) else None
            args = data.get("arguments")
            if name == "Authenticate" and isinstance(args, dict):
                key = args.get("key") if isinstance(args.get("key"), str) else None
    except FrameError as exc:
        unreadable = f"{exc} "
    except (TimeoutError, KeyError, RuntimeError):
        pass
    except WebSocketDisconnect:
        return None
    if name == "Authenticate" and key is not None and check(key):
        reply = {"type": "reply", "id": command_id, "commandName": name, "success": True}
        await ws.send_text(json.dumps({**reply, "result": {"authenticated": True}, "error": None}))
        return key
    message = (
        "Wrong API key."
        if name == "Authenticate" and key
        else unreadable + 'Authenticate first: send {"id": "1", "commandName": "Authenticate", '
        '"arguments": {"key": "<key>"}, "timestamp": 0} as the first frame, or connect '
        "with 'Authorization: Bearer <key>'."
    )
    with contextlib.suppress(Exception):
        frame = {"type": "reply", **failure(command_id, name, "unauthorized", message)}
        await ws.send_text(json.dumps(frame))
        await ws.close(CLOSE_UNAUTHORIZED, "unauthorized")
    return None


_KEY_CHANGED = "The API key changed (vaultpilot key rotate): sign in again with the new one."


async def _until_signed_out(still_signed_in: Callable[[], str | None]) -> str:
    """Wait until the socket's credential no longer holds; why (a close reason)."""
    while True:
        await asyncio.sleep(REVALIDATE_S)
        reason = still_signed_in()
        if reason is not None:
            return reason


def _credential_check(
    credential: tuple[str, str | None],
    keys: KeyStore,
    session_status: Callable[[str | None], str],
) -> Callable[[], str | None]:
    """A check of what signed the socket in: None while it holds, else why it no longer does
    (a rotated key, a session signed out or expired)."""
    kind, secret = credential
    if kind == "session":

        def session_holds() -> str | None:
            status = session_status(secret)
            if status == "active":
                return None
            return signed_out_message("expired" if status == "expired" else "unknown")

        return session_holds
    return lambda: None if keys.check(secret) else _KEY_CHANGED


async def _send_loop(ws: WebSocket, sub: Subscriber) -> None:
    while True:
        text = await sub.queue.get()
        await ws.send_text(text)


def _refuse(sub: Subscriber, code: ErrorCode, message: str) -> None:
    sub.send({"type": "reply", **failure(None, None, code, message)})


async def _read_loop(ws: WebSocket, sub: Subscriber, dispatch: Dispatch, max_message: int) -> None:
    in_flight: set[asyncio.Task[None]] = set()

    async def handle(text: str) -> None:
        try:
            reply = await dispatch(text, sub)
        except Exception as exc:  # dispatch answers every failure itself; this is a bug
            log.exception("WebSocket command failed")
            reply = failure(None, None, "internal_error", f"Internal error ({type(exc).__name__}).")
        sub.send({"type": "reply", **reply})

    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                _refuse(sub, "invalid_argument", "Send commands as JSON text frames, not binary.")
                continue
            # Characters before bytes: a UTF-8 character is at most 4 bytes, so most frames
            # never need encoding to be measured.
            if len(text) * 4 > max_message and len(text.encode("utf-8")) > max_message:
                _refuse(sub, "payload_too_large", too_large_message(max_message, "message"))
                continue
            if len(in_flight) >= _MAX_IN_FLIGHT:
                _refuse(
                    sub,
                    "request_refused",
                    f"Too many commands in flight on this socket (at most {_MAX_IN_FLIGHT}); "
                    "wait for replies before sending more.",
                )
                continue
            task = asyncio.create_task(handle(text))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
    finally:
        for task in in_flight:
            task.cancel()


async def serve(
    ws: WebSocket,
    *,
    hub: Hub,
    keys: KeyStore,
    dispatch: Dispatch,
    hello: Callable[[Subscriber], dict[str, Any]],
    queue_size: int,
    max_message: int,
    session_status: Callable[[str | None], str],
) -> None:
    """Run one WebSocket connection to its end (see the module for the protocol)."""
    await ws.accept(subprotocol=ws_subprotocol(ws.scope))
    credential = ws_credential(ws.scope)
    if ws_auth_state(ws.scope) != "ok" or credential is None:
        if hub.pending >= MAX_PENDING_SOCKETS:
            with contextlib.suppress(Exception):
                await ws.close(CLOSE_TRY_AGAIN, PENDING_REFUSED)
            return
        hub.pending += 1
        try:
            key = await _authenticate(ws, keys.check)
        finally:
            hub.pending -= 1
        if key is None:
            return
        credential = ("key", key)
    still_signed_in = _credential_check(credential, keys, session_status)
    sub = Subscriber(queue_size)
    # Added and the backlog taken in one step (no await between): every frame published from
    # now on is queued, every earlier frame of an active run is in the backlog.
    hub.add(sub)
    backlog = hub.backlog()
    try:
        await ws.send_text(json.dumps({"type": "hello", **hello(sub)}, ensure_ascii=False))
        for text in sub.render(backlog):
            await ws.send_text(text)
    except Exception:  # the client went away while it was greeted (the error type varies)
        hub.remove(sub)
        return
    signed_out = asyncio.create_task(_until_signed_out(still_signed_in))
    tasks = [
        asyncio.create_task(_read_loop(ws, sub, dispatch, max_message)),
        asyncio.create_task(_send_loop(ws, sub)),
        asyncio.create_task(sub.dropped.wait()),
        signed_out,
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hub.remove(sub)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if signed_out in done and not signed_out.cancelled():
        with contextlib.suppress(Exception):
            await ws.close(CLOSE_UNAUTHORIZED, signed_out.result()[:120])
    elif tasks[2] in done:
        with contextlib.suppress(Exception):
            await ws.close(CLOSE_TOO_SLOW, "too slow: the event queue overflowed")
    elif tasks[1] in done or tasks[0] in done:
        with contextlib.suppress(Exception):
            await ws.close()
