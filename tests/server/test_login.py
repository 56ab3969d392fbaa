"""The agent view's page and sign-in, against a real server: the page's files without a key, the
one-time login link (once only, expiring), the session cookie's attributes, and the cookie
counting only on the server's own pages (never from another origin, another site on the same
host, or a WebSocket without its own Origin)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from vaultpilot.server.sessions import Sessions, cookie_name
from vaultpilot.web import STATIC_DIR

from .conftest import Live, command, recv_json


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault}, allowed_origins=("app://obsidian.md",))


def _client(server: Live, **headers: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, timeout=10, trust_env=False, headers=headers, follow_redirects=False
    )


def _with(server: Live, method: str, path: str, session: str, **headers: str) -> int:
    """The status of one request carrying only ``session`` as its cookie (a fresh client)."""
    with _client(server, Cookie=f"{cookie_name(server.port)}={session}", **headers) as c:
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


def _session(server: Live) -> str:
    with _client(server) as c:
        reply = c.get(_link(server))
    assert reply.status_code == 303
    return str(reply.cookies[cookie_name(server.port)])


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
        assert c.get("/app.css").headers["content-type"].startswith("text/css")
        assert c.get("/vaults").status_code == 401  # data still needs the key or a session
        assert c.post("/").status_code == 401  # only GET is public
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 403


def test_a_login_link_works_once_and_sets_a_strict_http_only_cookie(server: Live) -> None:
    path = _link(server)
    with _client(server) as c:
        first = c.get(path)
        assert first.status_code == 303 and first.headers["location"] == "/"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name(server.port)}=")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            assert attribute in cookie
        assert first.headers["cache-control"] == "no-store"
        session = first.cookies[cookie_name(server.port)]
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
    assert _with(server, "GET", "/vaults", session) == 200
    assert _with(server, "GET", "/vaults", "forged") == 401


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
    session = _session(server)
    assert _with(server, "POST", "/login-link", session) == 401


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
    session = _session(server)
    sent = {k: v.replace("{own}", server.url) for k, v in headers.items()}
    assert _with(server, "GET", "/vaults", session, **sent) == status
    assert _with(server, "POST", "/rpc", session, **sent) == status


def test_a_websocket_takes_the_cookie_only_with_its_own_origin(server: Live) -> None:
    session = _session(server)
    cookie = {"Cookie": f"{cookie_name(server.port)}={session}"}

    async def go() -> tuple[dict[str, Any], dict[str, Any], int | None]:
        async with server.ws(additional_headers={**cookie, "Origin": server.url}) as ws:
            hello = await recv_json(ws)
        # Without an Origin the cookie does not count: the socket must authenticate first.
        async with server.ws(additional_headers=cookie) as ws:
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
    session = sessions.redeem(token)
    assert session is not None and sessions.check(session)
    assert sessions.redeem(token) is None and sessions.refusal(token) == "used"
    now[0] += 8 * 24 * 3600
    assert not sessions.check(session)
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
    with httpx.Client(timeout=10, trust_env=False, follow_redirects=False) as browser:
        for server in (first, second):  # one cookie jar, as one browser has
            with server.http() as c:
                path = c.post("/login-link").json()["path"]
            assert browser.get(server.url + path).status_code == 303
        for server in (first, second):
            assert browser.get(server.url + "/vaults").status_code == 200, server.port
