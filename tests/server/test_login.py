"""The agent view's page and sign-in, against a real server: the page's files without a key (GET
and HEAD), the one-time login link (once only, expiring), the session cookie's attributes and
the page secret in the redirect's fragment, the cookie counting only with its page secret (a
program on another port of this machine that caught the cookie cannot replay it: not on /vaults,
not on /rpc, not on the WebSocket) and only on the server's own pages (never from another
origin, another site on the same host, or a WebSocket without its own Origin)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from vaultpilot.server.auth import (
    CLOSE_SIGNED_OUT,
    PAGE_FRAGMENT,
    PAGE_HEADER,
    PAGE_SUBPROTOCOL_PREFIX,
    SUBPROTOCOL,
    signed_out_message,
)
from vaultpilot.server.sessions import Sessions, cookie_name
from vaultpilot.server.settings import ShellPolicy
from vaultpilot.web import STATIC_DIR

from .conftest import Live, command, recv_json


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault}, allowed_origins=("app://obsidian.md",))


def _client(server: Live, **headers: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, timeout=10, trust_env=False, headers=headers, follow_redirects=False
    )


def _with(
    server: Live, method: str, path: str, session: str, page: str | None = None, **headers: str
) -> int:
    """The status of one request carrying ``session`` as its cookie and, if given, ``page`` as
    its page secret (a fresh client: nothing else)."""
    sent = {"Cookie": f"{cookie_name(server.port)}={session}", **headers}
    if page is not None:
        sent[PAGE_HEADER] = page
    with _client(server, **sent) as c:
        body = command("GetVaultContext") if method == "POST" else None
        return c.request(method, path, json=body).status_code


def _link(server: Live) -> str:
    with server.http() as c:
        reply = c.post("/login-link")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["url"] == f"{server.url}{body['path']}" and body["expiresIn"] > 0
    path: str = body["path"]
    return path


def _page_secret(location: str) -> str:
    """The page secret in a /login redirect's fragment (``/#vaultpilot-page=<secret>``)."""
    parts = urlsplit(location)
    assert parts.path == "/" and not parts.query, location
    name, _, secret = parts.fragment.partition("=")
    assert name == PAGE_FRAGMENT and len(secret) >= 40, location
    return secret


def _sign_in(server: Live) -> tuple[str, str]:
    """What a browser gets from a login link: the cookie's session id and the page secret."""
    with _client(server) as c:
        reply = c.get(_link(server))
    assert reply.status_code == 303
    return str(reply.cookies[cookie_name(server.port)]), _page_secret(reply.headers["location"])


def test_the_page_is_served_without_a_key_and_says_who_may_frame_it(server: Live) -> None:
    with _client(server) as c:
        for path, name in [
            ("/", "index.html"),
            ("/index.html", "index.html"),
            ("/app.js", "app.js"),
        ]:
            reply = c.get(path)
            assert reply.status_code == 200, path
            assert reply.content == (STATIC_DIR / name).read_bytes()
            assert reply.headers["x-frame-options"] == "DENY"
            assert reply.headers["x-content-type-options"] == "nosniff"
            # HEAD answers as GET does, without the body (it was a 405 once).
            head = c.head(path)
            assert head.status_code == 200 and head.content == b"", path
            assert head.headers["content-length"] == str(len(reply.content))
            assert head.headers["content-type"] == reply.headers["content-type"]
            assert head.headers["x-frame-options"] == "DENY"
        assert c.head("/app.css").status_code == 200
        assert c.head("/vaults").status_code == 401  # HEAD of data is no way around the key
        assert c.get("/app.css").headers["content-type"].startswith("text/css")
        assert c.get("/vaults").status_code == 401  # data still needs the key or a session
        assert c.post("/").status_code == 401  # only GET is public
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 403


def test_a_login_link_works_once_and_sets_a_strict_http_only_cookie(server: Live) -> None:
    path = _link(server)
    with _client(server) as c:
        first = c.get(path)
        assert first.status_code == 303
        page = _page_secret(first.headers["location"])  # in the fragment: never sent to servers
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name(server.port)}=")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            assert attribute in cookie
        assert first.headers["cache-control"] == "no-store"
        session = first.cookies[cookie_name(server.port)]
        assert page not in cookie and session != page
        # Opened again in the browser it signed in: that browser goes on to the view.
        reopened = c.get(path)
        assert reopened.status_code == 303 and reopened.headers["location"] == "/"
        assert "set-cookie" not in reopened.headers
    with _client(server) as c:  # another browser: the link is spent
        again = c.get(path)
        assert again.status_code == 401 and cookie_name(server.port) not in again.cookies
        assert "already used" in again.text and "vaultpilot open" in again.text
        unknown = c.get("/login?token=nonsense")
        assert unknown.status_code == 401 and "not valid" in unknown.text
        assert c.get("/login").status_code == 401
    assert _with(server, "GET", "/vaults", session, page) == 200
    assert _with(server, "GET", "/vaults", "forged", page) == 401


def test_an_expired_login_link_is_refused(server: Live) -> None:
    sessions: Sessions = server.app.state.vaultpilot.sessions
    sessions.link_ttl = 0.2
    try:
        path = _link(server)
    finally:
        sessions.link_ttl = 300
    time.sleep(0.3)
    with _client(server) as c:
        reply = c.get(path)
    assert reply.status_code == 401 and "expired" in reply.text
    assert "set-cookie" not in reply.headers


def test_login_links_need_the_key_not_a_session(server: Live) -> None:
    session, page = _sign_in(server)
    assert _with(server, "POST", "/login-link", session, page) == 401


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 200),
        ({"Sec-Fetch-Site": "same-origin"}, 200),
        ({"Sec-Fetch-Site": "none"}, 200),
        ({"Origin": "{own}"}, 200),
        # Another page on this host (another port is the same site): the cookie does not count.
        ({"Sec-Fetch-Site": "same-site"}, 401),
        # A trusted origin may call with the key, never with the person's cookie.
        ({"Origin": "app://obsidian.md"}, 401),
        ({"Origin": "http://evil.example"}, 403),
        ({"Sec-Fetch-Site": "cross-site"}, 403),
    ],
)
def test_the_cookie_counts_only_on_the_servers_own_pages(
    server: Live, headers: dict[str, str], status: int
) -> None:
    session, page = _sign_in(server)
    sent = {k: v.replace("{own}", server.url) for k, v in headers.items()}
    assert _with(server, "GET", "/vaults", session, page, **sent) == status
    assert _with(server, "POST", "/rpc", session, page, **sent) == status


def test_a_websocket_takes_the_cookie_only_with_its_own_origin(server: Live) -> None:
    session, page = _sign_in(server)
    cookie = {"Cookie": f"{cookie_name(server.port)}={session}"}
    protocols = [SUBPROTOCOL, f"{PAGE_SUBPROTOCOL_PREFIX}{page}"]

    async def go() -> tuple[dict[str, Any], dict[str, Any], int | None]:
        own = {**cookie, "Origin": server.url}
        async with server.ws(additional_headers=own, subprotocols=protocols) as ws:
            assert ws.subprotocol == SUBPROTOCOL  # the page secret is never echoed
            hello = await recv_json(ws)
        # Without an Origin the cookie does not count: the socket must authenticate first.
        async with server.ws(additional_headers=cookie, subprotocols=protocols) as ws:
            await ws.send(json.dumps(command("GetVaultContext")))
            refused = await recv_json(ws)
            try:
                await asyncio.wait_for(ws.recv(), 5)
                code = None
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else None
        return hello, refused, code

    hello, refused, code = asyncio.run(go())
    assert hello["type"] == "hello" and hello["vaults"] == ["vault"]
    assert refused["error"]["code"] == "unauthorized" and code == 4401


def test_sessions_expire_and_stay_bounded() -> None:
    now = [1000.0]
    sessions = Sessions(clock=lambda: now[0])
    token, ttl = sessions.issue_link()
    assert ttl == 300
    now[0] += 301
    assert sessions.redeem(token) is None and sessions.refusal(token) == "expired"
    token, _ = sessions.issue_link()
    signed_in = sessions.redeem(token)
    assert signed_in is not None and sessions.check(signed_in.session)
    assert sessions.page_status(signed_in.session, signed_in.page) == "active"
    assert sessions.redeem(token) is None and sessions.refusal(token) == "used"
    now[0] += 8 * 24 * 3600
    assert not sessions.check(signed_in.session)
    assert sessions.page_status(signed_in.session, signed_in.page) == "expired"
    links = [sessions.issue_link()[0] for _ in range(100)]
    assert sessions.redeem(links[0]) is None  # the oldest links go first
    assert sessions.redeem(links[-1]) is not None


def test_two_servers_on_one_machine_keep_their_own_sign_in(
    live: Callable[..., Live], vault: Path, tmp_path: Path
) -> None:
    """Browsers keep cookies by host, not by port: each server names its cookie after its
    port, so signing in to one does not replace (and then clear) the other's."""
    from .conftest import make_settings

    first = live(make_settings({"vault": vault}, tmp_path / "data-a"))
    second = live(make_settings({"vault": vault}, tmp_path / "data-b"))
    pages: dict[int, str] = {}  # each origin's storage: its own page secret
    with httpx.Client(timeout=10, trust_env=False, follow_redirects=False) as browser:
        for server in (first, second):  # one cookie jar, as one browser has
            with server.http() as c:
                path = c.post("/login-link").json()["path"]
            reply = browser.get(server.url + path)
            assert reply.status_code == 303
            pages[server.port] = _page_secret(reply.headers["location"])
        for server in (first, second):
            mine = {PAGE_HEADER: pages[server.port]}
            reply = browser.get(server.url + "/vaults", headers=mine)
            assert reply.status_code == 200, server.port
        # And one server's page secret is nothing to the other.
        theirs = {PAGE_HEADER: pages[second.port]}
        assert browser.get(first.url + "/vaults", headers=theirs).status_code == 401


@pytest.fixture
def shell_server(live: Callable[..., Live], vault: Path) -> Live:
    """A server whose ExecuteShell runs ``touch <file>`` at once (allowlisted, no approval)."""
    return live(vaults={"vault": vault}, shell=ShellPolicy(enabled=True, allowlist=("touch *",)))


async def _socket(server: Live, headers: dict[str, str], protocols: list[str]) -> tuple[Any, ...]:
    """What a WebSocket handshake with ``headers`` and ``protocols`` gets: ``("hello",)``, or
    ``("closed", code, reason)`` when it is closed before any frame."""
    async with server.ws(additional_headers=headers, subprotocols=protocols) as ws:
        try:
            frame = await recv_json(ws, 5)
        except ConnectionClosed as closed:
            rcvd = closed.rcvd
            return ("closed", rcvd.code if rcvd else None, rcvd.reason if rcvd else "")
        return (frame["type"],)


def test_a_cookie_caught_on_another_port_is_no_credential_on_its_own(
    shell_server: Live, vault: Path
) -> None:
    """Browsers send 127.0.0.1's cookies to every port of it: a program listening on another
    port catches the cookie when the person's browser visits it and replays it with a plain
    client (no Origin, no Sec-Fetch-*). Without the page secret it gets nowhere."""
    server = shell_server
    session, page = _sign_in(server)
    other_session, other_page = _sign_in(server)
    cookie = {"Cookie": f"{cookie_name(server.port)}={session}"}
    marker = vault / "caught.txt"
    shell = command("ExecuteShell", {"Command": "touch caught.txt", "VaultID": "vault"})
    with _client(server, **cookie) as thief:
        replies = [
            thief.get("/vaults"),
            thief.post("/rpc", json=shell),
            thief.get("/vaults", headers={PAGE_HEADER: "x" * 43}),  # a guess
            thief.get("/vaults", headers={PAGE_HEADER: other_page}),  # another session's
            thief.post("/logout"),  # nor can it sign the person out
        ]
    assert [r.status_code for r in replies] == [401] * 5, [r.text for r in replies]
    message = replies[0].json()["error"]["message"]
    assert message.startswith(signed_out_message("no_page")) and "Bearer <key>" in message
    assert "vaultpilot open" in message
    assert not marker.exists()

    own = {**cookie, "Origin": server.url}  # a forged own-origin Origin, as a plain client can
    bare = [SUBPROTOCOL]
    guessed = [SUBPROTOCOL, f"{PAGE_SUBPROTOCOL_PREFIX}{'x' * 43}"]
    swapped = [SUBPROTOCOL, f"{PAGE_SUBPROTOCOL_PREFIX}{other_page}"]
    refused = ("closed", CLOSE_SIGNED_OUT, signed_out_message("no_page"))
    for protocols in (bare, guessed, swapped):
        assert asyncio.run(_socket(server, own, protocols)) == refused, protocols

    async def no_origin_approves() -> tuple[dict[str, Any], tuple[Any, ...]]:
        # Without an Origin the cookie does not count at all: Authenticate comes first.
        async with server.ws(additional_headers=cookie, subprotocols=bare) as ws:
            answer = {"callId": "call_1", "approved": True}
            await ws.send(json.dumps(command("ApproveToolCall", answer)))
            reply = await recv_json(ws)
            try:
                await asyncio.wait_for(ws.recv(), 5)
                return reply, ("open",)
            except ConnectionClosed as closed:
                return reply, ("closed", closed.rcvd.code if closed.rcvd else None)

    reply, after = asyncio.run(no_origin_approves())
    assert reply["error"]["code"] == "unauthorized" and after == ("closed", 4401)

    # The page itself (cookie and page secret) passes the same requests: the refusals above
    # are the missing secret's, nothing else's.
    with _client(server, **cookie, **{PAGE_HEADER: page}) as own_page:
        assert own_page.get("/vaults").status_code == 200
        ran = own_page.post("/rpc", json=shell).json()
    assert ran["success"] is True, ran
    assert marker.exists()
    mine = [SUBPROTOCOL, f"{PAGE_SUBPROTOCOL_PREFIX}{page}"]
    assert asyncio.run(_socket(server, own, mine)) == ("hello",)
    assert _with(server, "GET", "/vaults", other_session, other_page) == 200  # each its own


def test_the_page_secret_alone_is_no_credential_either(server: Live) -> None:
    _session, page = _sign_in(server)
    with _client(server, **{PAGE_HEADER: page}) as c:
        reply = c.get("/vaults")
    assert reply.status_code == 401 and "Missing API key" in reply.json()["error"]["message"]


def test_the_close_reason_for_a_missing_page_secret_fits_a_close_frame() -> None:
    message = signed_out_message("no_page")
    assert len(message.encode("utf-8")) <= 123 and "vaultpilot open" in message


def test_a_sessions_file_from_before_page_secrets_signs_browsers_in_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.json"
    old = {"format": 1, "key": "", "sessions": {"ab" * 32: time.time() + 3600}}
    path.write_text(json.dumps(old), encoding="utf-8")
    store = Sessions(path=path)
    assert len(store) == 0
    signed_in = store.redeem(store.issue_link()[0])
    assert signed_in is not None
    assert Sessions(path=path).page_status(signed_in.session, signed_in.page) == "active"
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == 2
