"""The gate in front of every route: Host, Origin and the API key, as pure ASGI middleware.

``SecurityMiddleware`` wraps the whole application, so every HTTP request and every WebSocket
handshake passes it before any routing, including routes added later, unknown paths and
``/openapi.json``. In order:

1. **Host** must name this machine (``localhost``, ``127.0.0.0/8``, ``::1``) or, with
   ``allow_remote``, the address the server listens on. A web page reached through DNS
   rebinding carries its own host name here and is refused (403 ``forbidden``).
2. **Origin**, when present (browsers send it), must be the server's own origin (same scheme
   host and port as the Host header, on a loopback host) or one of ``allowed_origins``.
   ``Sec-Fetch-Site: cross-site`` is refused as well. No CORS headers are ever sent, so a
   foreign page cannot read a reply either (403 ``forbidden``).
3. **The key**: ``Authorization: Bearer <key>``, compared in constant time (401
   ``unauthorized``, with ``WWW-Authenticate: Bearer``). A key in the query string is refused
   outright: URLs end up in logs and histories. A WebSocket handshake may instead offer the key
   as a subprotocol ``vaultpilot.key.<key>`` (with ``vaultpilot`` beside it, which the server
   selects; the key itself is never echoed), or carry no key at all: it is then accepted in
   the ``pending`` state and the WebSocket endpoint must read an ``Authenticate`` command as
   its first message before anything else (``ws_auth_state``).
4. **Or a session cookie with its page secret** (``sessions``), for the agent view: a browser
   that traded a one-time login link for the ``HttpOnly; SameSite=Strict`` cookie and, in the
   redirect's URL fragment, a page secret that only the page's own origin can read. Browsers
   send a host's cookies to every port of it, so the cookie alone is no credential: an HTTP
   request must also carry the page secret in the ``X-Vaultpilot-Page`` header, a WebSocket
   handshake as a subprotocol ``vaultpilot.page.<secret>`` beside ``vaultpilot`` (which the
   server selects; the secret is never echoed). Even then the cookie counts only on a request
   from the server's own pages: with an ``Origin``, it must be the server's own origin (never
   one of ``allowed_origins``), ``Sec-Fetch-Site`` must be ``same-origin`` or ``none`` when sent
   (so another page on the same host, even on another port, cannot use it), and a WebSocket
   handshake must carry its own-origin ``Origin``. A request whose cookie does not count is
   treated as carrying none. ``POST /login-link`` takes the key only.
5. **A session cookie that does not sign in** (expired, signed out, made under a rotated key,
   or live but without its page secret: replayed by a program that caught it, or sent by a page
   that lost its storage), on a request from the server's own pages with no key: an HTTP
   request is refused (401) with a message saying the sign-in ended (or is incomplete) and
   where a new link comes from; a WebSocket handshake is accepted and closed at once with
   ``CLOSE_SIGNED_OUT`` (4401, as a refused ``Authenticate``) and that message as its reason,
   its response clearing the cookie, so the page can say why it asks to sign in, and its next
   socket (carrying no cookie) may still authenticate with a key.

Without any key: the page's own files (``GET`` or ``HEAD`` of ``/``, ``/index.html``,
``/app.js``, ``/app.css``, which hold no data) and ``GET /login?token=...`` (whose token is the
one-time link's, not the key) pass after the Host and Origin checks.

Refusals of HTTP requests are JSON envelopes (``envelope.failure``) with status 401 or 403; a
refused WebSocket handshake is closed before it is accepted, which the server answers with HTTP
403 whatever the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from vaultpilot.server.envelope import ErrorCode, failure
from vaultpilot.server.keyfile import KeyStore
from vaultpilot.server.sessions import (
    Sessions,
    clear_cookie_header,
    scope_port,
    session_cookie,
)
from vaultpilot.server.settings import is_loopback

__all__ = [
    "CLOSE_SIGNED_OUT",
    "KEY_ONLY_PATHS",
    "KEY_SUBPROTOCOL_PREFIX",
    "LOGIN_PATH",
    "PAGE_FRAGMENT",
    "PAGE_HEADER",
    "PAGE_SUBPROTOCOL_PREFIX",
    "PUBLIC_PATHS",
    "SUBPROTOCOL",
    "AuthState",
    "SecurityMiddleware",
    "bearer_key",
    "host_name",
    "signed_out_message",
    "ws_auth_state",
    "ws_credential",
    "ws_subprotocol",
]

SUBPROTOCOL = "vaultpilot"
KEY_SUBPROTOCOL_PREFIX = "vaultpilot.key."
PAGE_FRAGMENT = "vaultpilot-page"  # /login redirects to /#vaultpilot-page=<secret>
PAGE_HEADER = "X-Vaultpilot-Page"
PAGE_SUBPROTOCOL_PREFIX = "vaultpilot.page."
_URL_KEY_NAMES = frozenset({"key", "token", "api_key", "apikey", "access_token", "auth"})
_STATE_AUTH = "vaultpilot.auth"
_STATE_PROTOCOL = "vaultpilot.subprotocol"
_STATE_CREDENTIAL = "vaultpilot.credential"
AuthState = Literal["ok", "pending"]
LOGIN_PATH = "/login"
PUBLIC_PATHS = frozenset({"/", "/index.html", "/app.js", "/app.css", LOGIN_PATH})
KEY_ONLY_PATHS = frozenset({"/login-link"})
_COOKIE_SITES = frozenset({"same-origin", "none"})
CLOSE_SIGNED_OUT = 4401  # the code ws.py closes a refused Authenticate with; the page knows it
_NEW_LINK = "For a new link, run 'vaultpilot open' or see the server's terminal."
_Cookie = Literal["ok", "none", "expired", "unknown", "no_page"]
_SignedOut = Literal["expired", "unknown", "no_page"]


def signed_out_message(status: _SignedOut) -> str:
    """Why a browser's session cookie does not sign it in, and where a new link comes from
    (short enough for a WebSocket close reason: at most 123 bytes)."""
    if status == "expired":
        return f"Your sign-in expired. {_NEW_LINK}"
    if status == "no_page":
        return (
            "This page's sign-in is incomplete (its page secret is missing). "
            "Run 'vaultpilot open' for a new login link."
        )
    return f"This server no longer knows your sign-in. {_NEW_LINK}"


def bearer_key(value: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, else None."""
    if not value:
        return None
    scheme, _, key = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


def host_name(host: str) -> str:
    """The host part of a Host header or netloc (``[::1]:80`` → ``::1``), lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def ws_auth_state(scope: Scope) -> AuthState:
    """Whether a WebSocket handshake carried a good key (``ok``) or none (``pending``)."""
    state: AuthState = scope.get("state", {}).get(_STATE_AUTH, "pending")
    return state


def ws_credential(scope: Scope) -> tuple[str, str | None] | None:
    """What signed a WebSocket handshake in: ``("key", key)`` or ``("session", cookie)``; None
    when it carried neither (the socket must then send ``Authenticate``)."""
    value: tuple[str, str | None] | None = scope.get("state", {}).get(_STATE_CREDENTIAL)
    return value


def ws_subprotocol(scope: Scope) -> str | None:
    """The subprotocol to select when accepting (``vaultpilot`` if the client offered it)."""
    value: str | None = scope.get("state", {}).get(_STATE_PROTOCOL)
    return value


class SecurityMiddleware:
    """Refuses foreign hosts, foreign origins and missing or wrong keys (see the module)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: KeyStore,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        sessions: Sessions | None = None,
    ) -> None:
        self.app = app
        self.keys = keys
        self.sessions = sessions
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem = self._foreign(headers)
        if problem is not None:
            await _deny(scope, receive, send, 403, "forbidden", problem)
            return
        public = (
            scope["type"] == "http"
            and scope.get("method") in ("GET", "HEAD")
            and scope.get("path") in PUBLIC_PATHS
        )
        if public:
            await self.app(scope, receive, send)
            return
        if _key_in_url(scope):
            await _deny(
                scope,
                receive,
                send,
                401,
                "unauthorized",
                "The key is never accepted in the URL (URLs end up in logs and histories). "
                "Send it as 'Authorization: Bearer <key>'.",
            )
            return
        key = bearer_key(headers.get("authorization"))
        state = scope.setdefault("state", {})
        if scope["type"] == "websocket":
            offered = list(scope.get("subprotocols") or [])
            if SUBPROTOCOL in offered:
                state[_STATE_PROTOCOL] = SUBPROTOCOL
            if key is None:
                key = _offered(scope, KEY_SUBPROTOCOL_PREFIX)
            if key is None:
                cookie = self._cookie(scope, headers)
                if cookie in ("expired", "unknown", "no_page"):
                    await _close_signed_out(scope, receive, send, signed_out_message(cookie))
                    return
                state[_STATE_AUTH] = "ok" if cookie == "ok" else "pending"
                state[_STATE_CREDENTIAL] = (
                    "session",
                    session_cookie(headers.get("cookie"), scope_port(scope)),
                )
                await self.app(scope, receive, send)
                return
            cookie = "none"
        else:
            cookie = self._cookie(scope, headers) if key is None else "none"
            if cookie == "ok":
                state[_STATE_AUTH] = "ok"
                await self.app(scope, receive, send)
                return
        if not self.keys.check(key):
            message = _refusal(key, cookie)
            await _deny(scope, receive, send, 401, "unauthorized", message)
            return
        state[_STATE_AUTH] = "ok"
        state[_STATE_CREDENTIAL] = ("key", key)
        await self.app(scope, receive, send)

    def _foreign(self, headers: Headers) -> str | None:
        host = headers.get("host")
        if not host:
            return "The request has no Host header; send one naming this server."
        name = host_name(host)
        if not (is_loopback(name) or name in self.allowed_hosts or "*" in self.allowed_hosts):
            return (
                f"Host '{host}' is not this server: it answers only to localhost, 127.0.0.1 "
                "and ::1 (a page reached through another name is refused)."
            )
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return "Cross-site requests from web pages are refused."
        origin = headers.get("origin")
        if origin is None or origin.rstrip("/").lower() in self.allowed_origins:
            return None
        if _own_origin(origin, host):
            return None
        return (
            f"Origin '{origin}' is not allowed: only this server's own pages may call it. "
            "Add a trusted origin to [server] allowed_origins in the config file."
        )

    def _cookie(self, scope: Scope, headers: Headers) -> _Cookie:
        """What the request's session cookie is worth here (see module): ``ok`` when it
        signs the request in, ``expired`` or ``unknown`` when it is one of the server's own
        pages' but names no live session, ``no_page`` when it names one but the request lacks
        its page secret, ``none`` when there is none or it does not count."""
        session = session_cookie(headers.get("cookie"), scope_port(scope))
        if self.sessions is None or session is None or scope.get("path") in KEY_ONLY_PATHS:
            return "none"
        site = headers.get("sec-fetch-site")
        if site is not None and site.lower() not in _COOKIE_SITES:
            return "none"
        origin = headers.get("origin")
        if origin is None:
            if scope["type"] != "http":  # a browser's WebSocket always sends Origin
                return "none"
        elif not _own_origin(origin, headers.get("host", "")):
            return "none"
        status = self.sessions.page_status(session, _page_secret(scope, headers))
        return "ok" if status == "active" else status


def _page_secret(scope: Scope, headers: Headers) -> str | None:
    """The page secret a request carries beside its cookie (see module), else None."""
    if scope["type"] == "http":
        return headers.get(PAGE_HEADER) or None
    return _offered(scope, PAGE_SUBPROTOCOL_PREFIX)


def _offered(scope: Scope, prefix: str) -> str | None:
    """What follows ``prefix`` in the first WebSocket subprotocol the client offers with it."""
    offered = scope.get("subprotocols") or ()
    return next((p[len(prefix) :] for p in offered if p.startswith(prefix)), None)


def _own_origin(origin: str, host: str) -> bool:
    """``origin`` is this server's own: same scheme family, same host and port, loopback."""
    parts = urlsplit(origin.rstrip("/").lower())
    return (
        parts.scheme in ("http", "https", "ws", "wss")
        and parts.netloc == host.lower()
        and is_loopback(host_name(parts.netloc))
    )


def _refusal(key: str | None, cookie: _Cookie) -> str:
    """Why a request without a good key (nor a live session) is refused, and what to do."""
    if cookie in ("expired", "unknown"):
        return signed_out_message(cookie)
    if cookie == "no_page":
        return (
            f"{signed_out_message(cookie)} A program sends 'Authorization: Bearer <key>' instead."
        )
    if key is None:
        return (
            "Missing API key: send 'Authorization: Bearer <key>' (the key is in the server's "
            "key file; `vaultpilot serve` prints where)."
        )
    return (
        "Wrong API key. Use the key in the server's key file (it changes with "
        "`vaultpilot key rotate`)."
    )


async def _close_signed_out(scope: Scope, receive: Receive, send: Send, message: str) -> None:
    """Accept a WebSocket handshake only to close it with ``CLOSE_SIGNED_OUT`` and ``message``,
    clearing the session cookie (RFC 6455 has clients store the response's cookies)."""
    message_in = await receive()  # websocket.connect
    if message_in["type"] != "websocket.connect":
        return
    accept: dict[str, Any] = {
        "type": "websocket.accept",
        "headers": [(b"set-cookie", clear_cookie_header(scope_port(scope)).encode("ascii"))],
    }
    protocol = scope.get("state", {}).get(_STATE_PROTOCOL)
    if protocol is not None:
        accept["subprotocol"] = protocol
    await send(accept)
    await send({"type": "websocket.close", "code": CLOSE_SIGNED_OUT, "reason": message})


def _key_in_url(scope: Scope) -> bool:
    raw = scope.get("query_string", b"")
    if not raw:
        return False
    names = {k.lower() for k, _ in parse_qsl(raw.decode("latin-1"), keep_blank_values=True)}
    return bool(names & _URL_KEY_NAMES)


async def _deny(
    scope: Scope, receive: Receive, send: Send, status: int, code: ErrorCode, message: str
) -> None:
    body = json.dumps(failure(None, None, code, message)).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="vaultpilot"'))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    # A WebSocket handshake is refused by closing it before accepting: every ASGI server then
    # answers HTTP 403 (uvicorn's sans-I/O implementation mishandles denial response bodies).
    message_in = await receive()  # websocket.connect
    if message_in["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
