"""Nothing is reachable without the key, and no foreign page can reach it: every HTTP route and
every WebSocket endpoint of the app, enumerated from the app itself, against a real server (the
agent view's own files and the login link excepted: they hold no data; see test_login). A
browser's session cookie replayed without its page secret is no key either, on every route."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import Route, WebSocketRoute
from websockets.exceptions import ConnectionClosed, InvalidStatus

from vaultpilot.server import ws as ws_module
from vaultpilot.server.auth import (
    KEY_SUBPROTOCOL_PREFIX,
    PAGE_HEADER,
    PUBLIC_PATHS,
    SUBPROTOCOL,
    signed_out_message,
)
from vaultpilot.server.sessions import cookie_name

from .conftest import Live, command, recv_json

WRONG = "x" * 43
FOREIGN_ORIGINS = [
    "http://evil.example",
    "null",
    "http://localhost:1",
    "http://127.0.0.1.evil.example",
]


def http_routes(app: Any) -> list[tuple[str, str]]:
    out = []
    for route in app.routes:
        if isinstance(route, APIRoute | Route) and not isinstance(route, WebSocketRoute):
            for method in sorted(route.methods or ()):
                if method != "HEAD":
                    out.append((method, route.path))
    return out


def ws_routes(app: Any) -> list[str]:
    return [r.path for r in app.routes if isinstance(r, APIWebSocketRoute | WebSocketRoute)]


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault})


def test_the_app_has_the_routes_we_check(server: Live) -> None:
    routes = http_routes(server.app)
    assert ("POST", "/rpc") in routes and ("GET", "/openapi.json") in routes
    assert ("POST", "/tools/ExecuteShell") in routes and ("POST", "/agent/StartAgent") in routes
    assert len(routes) >= 15
    assert ws_routes(server.app) == ["/ws"]


def _send(server: Live, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:
        return c.request(method, path, headers=headers, json={})


def keyed_routes(app: Any) -> list[tuple[str, str]]:
    """Every route but the page's own files and the login link (``auth.PUBLIC_PATHS``)."""
    return [(m, p) for m, p in http_routes(app) if not (m == "GET" and p in PUBLIC_PATHS)]


def test_every_http_route_refuses_a_missing_key(server: Live) -> None:
    assert {p for m, p in http_routes(server.app) if m == "GET"} >= PUBLIC_PATHS
    for method, path in [*keyed_routes(server.app), ("GET", "/no-such-route")]:
        reply = _send(server, method, path, {})
        assert reply.status_code == 401, (method, path)
        assert reply.json()["error"]["code"] == "unauthorized"
        assert reply.headers["www-authenticate"].startswith("Bearer")


def test_every_http_route_refuses_a_wrong_key(server: Live) -> None:
    for method, path in keyed_routes(server.app):
        for header in (f"Bearer {WRONG}", f"Bearer {server.key}x", f"Basic {server.key}", "Bearer"):
            reply = _send(server, method, path, {"Authorization": header})
            assert reply.status_code == 401, (method, path, header)
            assert reply.json() == {
                "id": None,
                "commandName": None,
                "success": False,
                "result": None,
                "error": {"code": "unauthorized", "message": reply.json()["error"]["message"]},
            }


def test_every_http_route_refuses_a_session_cookie_without_its_page_secret(server: Live) -> None:
    """What a program on another port of this machine catches (browsers send a host's cookies
    to every port of it), replayed by a plain client: refused everywhere, as no credential."""
    with server.http() as c:
        path = c.post("/login-link").json()["path"]
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as browser:
        signed_in = browser.get(path, follow_redirects=False)
    session = signed_in.cookies[cookie_name(server.port)]
    page = signed_in.headers["location"].partition("=")[2]
    caught = {"Cookie": f"{cookie_name(server.port)}={session}"}
    for method, path in keyed_routes(server.app):
        if path in ("/login-link", "/logout"):
            continue  # key only (test_login); signing out would end the session for the rest
        reply = _send(server, method, path, caught)
        assert reply.status_code == 401, (method, path)
        assert reply.json()["error"]["message"].startswith(signed_out_message("no_page"))
    assert _send(server, "GET", "/vaults", {**caught, PAGE_HEADER: page}).status_code == 200


def test_every_http_route_refuses_a_foreign_origin_even_with_the_key(server: Live) -> None:
    for method, path in http_routes(server.app):
        for origin in FOREIGN_ORIGINS:
            reply = _send(server, method, path, {**server.auth, "Origin": origin})
            assert reply.status_code == 403, (method, path, origin)
            assert reply.json()["error"]["code"] == "forbidden"
            assert "access-control-allow-origin" not in reply.headers


def test_every_http_route_refuses_a_foreign_host_dns_rebinding(server: Live) -> None:
    for method, path in http_routes(server.app):
        for host in (f"evil.example:{server.port}", "attacker.test", f"192.168.1.5:{server.port}"):
            reply = _send(server, method, path, {**server.auth, "Host": host})
            assert reply.status_code == 403, (method, path, host)
            assert "is not this server" in reply.json()["error"]["message"]


def test_preflight_and_cross_site_fetches_are_refused(server: Live) -> None:
    preflight = _send(
        server,
        "OPTIONS",
        "/rpc",
        {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 403
    cross = _send(server, "POST", "/rpc", {**server.auth, "Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403


def test_the_servers_own_origin_and_loopback_names_pass(server: Live) -> None:
    body = command("ReportStatus", {"Status": "ok"})
    with server.http() as c:
        for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}"):
            origin = f"http://{host}"
            reply = c.post("/rpc", json=body, headers={"Host": host, "Origin": origin})
            assert reply.status_code == 200 and reply.json()["success"], host


def test_a_key_in_the_url_is_refused_even_if_right(server: Live) -> None:
    with server.http() as c:
        for name in ("key", "token", "api_key"):
            reply = c.post(
                f"/rpc?{name}={server.key}", json=command("ReportStatus", {"Status": "x"})
            )
            assert reply.status_code == 401
            assert "never accepted in the URL" in reply.json()["error"]["message"]


def _handshake_status(server: Live, path: str, **kw: Any) -> int:
    async def go() -> int:
        try:
            async with server.ws(path=path, **kw):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(go())


def test_every_websocket_endpoint_refuses_a_wrong_key_in_the_handshake(server: Live) -> None:
    for path in ws_routes(server.app):
        # A refused handshake is closed before it is accepted: HTTP 403 whatever the reason.
        wrong = {"Authorization": f"Bearer {WRONG}"}
        assert _handshake_status(server, path, additional_headers=wrong) == 403
        protocols = [SUBPROTOCOL, f"{KEY_SUBPROTOCOL_PREFIX}{WRONG}"]
        assert _handshake_status(server, path, additional_headers={}, subprotocols=protocols) == 403
        assert _handshake_status(server, f"{path}?key={server.key}", additional_headers={}) == 403


def test_every_websocket_endpoint_refuses_a_foreign_origin(server: Live) -> None:
    for path in ws_routes(server.app):
        for origin in FOREIGN_ORIGINS:
            status = _handshake_status(server, path, origin=origin)
            assert status == 403, origin
        # DNS rebinding: the handshake names another host (the connection still goes to us).
        rebound = f"ws://evil.example:{server.port}{path}"
        status = _handshake_status(server, path, uri=rebound, host="127.0.0.1", port=server.port)
        assert status == 403


def test_every_websocket_endpoint_refuses_commands_without_a_key(server: Live) -> None:
    """No key in the handshake: the first frame must authenticate; anything else closes it."""

    async def go() -> tuple[dict[str, Any], int | None]:
        async with server.ws(additional_headers={}) as ws:
            await ws.send(json.dumps(command("GetVaultContext")))
            reply = await recv_json(ws)
            with pytest.raises(ConnectionClosed):
                await recv_json(ws)
            return reply, ws.close_code

    for _path in ws_routes(server.app):
        reply, code = asyncio.run(go())
        assert reply["success"] is False and reply["error"]["code"] == "unauthorized"
        assert reply["result"] is None
        assert code == ws_module.CLOSE_UNAUTHORIZED


def test_a_wrong_key_in_the_first_frame_closes_the_socket(server: Live) -> None:
    async def go() -> tuple[dict[str, Any], int | None]:
        async with server.ws(additional_headers={}) as ws:
            await ws.send(json.dumps(command("Authenticate", {"key": WRONG})))
            reply = await recv_json(ws)
            with pytest.raises(ConnectionClosed):
                await recv_json(ws)
            return reply, ws.close_code

    reply, code = asyncio.run(go())
    assert reply["error"] == {"code": "unauthorized", "message": "Wrong API key."}
    assert code == ws_module.CLOSE_UNAUTHORIZED


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"timestamp": ' + "9" * 5000 + "}", "a number is too long"),
        ('["\\ud800", ' + "[" * 100_000 + "]" * 100_000 + "]", "nested too deeply"),
        ('["\\ud800"]', "lone surrogate (\\ud800)"),
        ("Authenticate key", "not valid JSON"),
    ],
)
def test_an_unreadable_first_frame_is_refused_like_any_other(
    server: Live, frame: str, reason: str
) -> None:
    """Refused as unauthorized, saying first what is wrong with the frame, then how to sign in."""

    async def go() -> tuple[dict[str, Any], int | None]:
        async with server.ws(additional_headers={}) as ws:
            await ws.send(frame)
            reply = await recv_json(ws)
            with pytest.raises(ConnectionClosed):
                await recv_json(ws)
            return reply, ws.close_code

    reply, code = asyncio.run(go())
    message = reply["error"]["message"]
    assert reply["error"]["code"] == "unauthorized", reply
    assert reason in message and message.index(reason) < message.index("Authenticate first: send")
    assert code == ws_module.CLOSE_UNAUTHORIZED


def test_silence_instead_of_authenticating_closes_the_socket(
    server: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ws_module, "AUTH_TIMEOUT_S", 0.3)

    async def go() -> int | None:
        async with server.ws(additional_headers={}) as ws:
            await recv_json(ws)  # the refusal
            with pytest.raises(ConnectionClosed):
                await recv_json(ws)
            return ws.close_code

    assert asyncio.run(go()) == ws_module.CLOSE_UNAUTHORIZED


def test_the_three_ways_to_present_the_key_on_a_websocket(server: Live) -> None:
    async def by_header() -> dict[str, Any]:
        async with server.ws() as ws:
            return await recv_json(ws)

    async def by_subprotocol() -> tuple[dict[str, Any], str | None]:
        protocols = [SUBPROTOCOL, f"{KEY_SUBPROTOCOL_PREFIX}{server.key}"]
        async with server.ws(additional_headers={}, subprotocols=protocols) as ws:
            return await recv_json(ws), ws.subprotocol

    async def by_first_frame() -> list[dict[str, Any]]:
        async with server.ws(additional_headers={}) as ws:
            await ws.send(json.dumps(command("Authenticate", {"key": server.key}, "a1")))
            return [await recv_json(ws), await recv_json(ws)]

    assert asyncio.run(by_header())["type"] == "hello"
    hello, chosen = asyncio.run(by_subprotocol())
    assert hello["type"] == "hello" and chosen == SUBPROTOCOL  # the key is never echoed
    auth, hello = asyncio.run(by_first_frame())
    assert auth["success"] is True and auth["id"] == "a1" and hello["type"] == "hello"


def test_a_rotated_key_takes_effect_at_once(server: Live) -> None:
    from vaultpilot.server.keyfile import rotate_key

    state = server.app.state.vaultpilot
    new = rotate_key(state.settings.key_path)
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:
        body = command("ReportStatus", {"Status": "x"})
        old = c.post("/rpc", json=body, headers=server.auth)
        fresh = c.post("/rpc", json=body, headers={"Authorization": f"Bearer {new}"})
    assert old.status_code == 401 and fresh.status_code == 200
