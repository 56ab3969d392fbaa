"""Browser sessions outlive the server: a real uvicorn server is stopped and another started on
the same data folder, and the same cookie with the same page secret still signs the browser in
(and the cookie alone still does not). The file keeps hashes only (0600); rotating the key or
signing out ends sessions, page secrets with them; a cookie the server no longer knows is told
apart from no cookie at all, on HTTP and on the WebSocket, with where a new link comes from."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from vaultpilot.server.auth import (
    CLOSE_SIGNED_OUT,
    PAGE_HEADER,
    PAGE_SUBPROTOCOL_PREFIX,
    SUBPROTOCOL,
    signed_out_message,
)
from vaultpilot.server.keyfile import rotate_key
from vaultpilot.server.sessions import SESSION_TTL_S, Sessions, cookie_name, key_fingerprint
from vaultpilot.server.ws import CLOSE_UNAUTHORIZED, REVALIDATE_S

from .conftest import Live, command, recv_json


def _start(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault})


def _stop(server: Live) -> None:
    server.server.should_exit = True
    server.thread.join(timeout=20)
    assert not server.thread.is_alive(), "the server did not stop"


class Session(str):
    """A browser's sign-in: the cookie's session id (the string itself) and its page secret
    (what the page sends beside the cookie; empty: a client that caught only the cookie)."""

    page: str

    def __new__(cls, session: str, page: str = "") -> Session:
        made = super().__new__(cls, session)
        made.page = page
        return made


def _session(server: Live) -> Session:
    with server.http() as c:
        path = c.post("/login-link").json()["path"]
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:
        reply = c.get(path)
    assert reply.status_code == 303, reply.text
    page = urlsplit(reply.headers["location"]).fragment.partition("=")[2]
    assert len(page) >= 40, reply.headers["location"]
    return Session(reply.cookies[cookie_name(server.port)], page)


def _headers(server: Live, session: str) -> dict[str, str]:
    """What the page sends: the cookie, and its page secret when it has one."""
    headers = {"Cookie": f"{cookie_name(server.port)}={session}"}
    if isinstance(session, Session) and session.page:
        headers[PAGE_HEADER] = session.page
    return headers


def _protocols(session: str) -> list[str]:
    if isinstance(session, Session) and session.page:
        return [SUBPROTOCOL, f"{PAGE_SUBPROTOCOL_PREFIX}{session.page}"]
    return [SUBPROTOCOL]


def _get(server: Live, path: str, session: str) -> httpx.Response:
    headers = _headers(server, session)
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False, headers=headers) as c:
        return c.get(path)


def _post(server: Live, path: str, session: str, body: Any = None) -> httpx.Response:
    headers = {**_headers(server, session), "Origin": server.url}
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False, headers=headers) as c:
        return c.post(path, json=body)


def test_a_session_survives_a_restart_of_the_server(
    live: Callable[..., Live], vault: Path, data_dir: Path
) -> None:
    first = _start(live, vault)
    session = _session(first)
    assert _get(first, "/vaults", session).status_code == 200
    _stop(first)

    second = _start(live, vault)  # a new process would do the same: nothing is shared in memory
    assert second.app.state.vaultpilot.sessions is not first.app.state.vaultpilot.sessions
    reply = _get(second, "/vaults", session)
    assert reply.status_code == 200, reply.text
    assert [v["vaultId"] for v in reply.json()] == ["vault"]
    assert _post(second, "/rpc", session, command("GetVaultContext")).json()["success"] is True

    async def hello() -> dict[str, Any]:
        headers = {"Cookie": f"{cookie_name(second.port)}={session}", "Origin": second.url}
        async with second.ws(additional_headers=headers, subprotocols=_protocols(session)) as ws:
            return await recv_json(ws)

    assert asyncio.run(hello())["type"] == "hello"
    assert _get(second, "/vaults", Session("forged-" + session, session.page)).status_code == 401
    # The cookie alone stays refused after the restart as before it.
    assert _get(second, "/vaults", Session(session)).status_code == 401


def test_the_file_keeps_only_hashes_privately(
    live: Callable[..., Live], vault: Path, data_dir: Path
) -> None:
    server = _start(live, vault)
    session = _session(server)
    path = data_dir / "sessions.json"
    assert path == server.app.state.vaultpilot.settings.sessions_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    assert session not in text and session.page not in text
    data = json.loads(text)
    digest = hashlib.sha256(session.encode()).hexdigest()
    assert list(data["sessions"]) == [digest]
    assert data["sessions"][digest]["page"] == hashlib.sha256(session.page.encode()).hexdigest()
    assert data["key"] == key_fingerprint(server.key) and server.key not in text
    assert not [p.name for p in data_dir.iterdir() if p.name.endswith(".tmp")]


def test_rotating_the_key_signs_every_browser_out(
    live: Callable[..., Live], vault: Path, data_dir: Path
) -> None:
    server = _start(live, vault)
    one, two = _session(server), _session(server)
    assert _get(server, "/vaults", one).status_code == 200
    rotate_key(server.app.state.vaultpilot.settings.key_path)
    for session in (one, two):
        reply = _get(server, "/vaults", session)
        assert reply.status_code == 401
        assert reply.json()["error"]["message"] == signed_out_message("unknown")
    assert json.loads((data_dir / "sessions.json").read_text())["sessions"] == {}
    _stop(server)
    again = _start(live, vault)
    assert _get(again, "/vaults", one).status_code == 401
    assert _get(again, "/vaults", _session(again)).status_code == 200  # new key, new sign-in


def test_signing_out_ends_the_session_and_clears_the_cookie(
    live: Callable[..., Live], vault: Path
) -> None:
    server = _start(live, vault)
    session, other = _session(server), _session(server)
    reply = _post(server, "/logout", session)
    assert reply.status_code == 200 and reply.json() == {"signedOut": True}
    cleared = reply.headers["set-cookie"]
    assert cleared.startswith(f"{cookie_name(server.port)}=;") and "Max-Age=0" in cleared
    assert _get(server, "/vaults", session).status_code == 401
    assert _post(server, "/logout", session).status_code == 401  # already over
    _stop(server)
    again = _start(live, vault)
    assert _get(again, "/vaults", session).status_code == 401
    assert _get(again, "/vaults", other).status_code == 200  # only that browser signed out


def test_an_unknown_cookie_says_so_and_where_a_new_link_comes_from(
    live: Callable[..., Live], vault: Path
) -> None:
    server = _start(live, vault)
    reply = _get(server, "/vaults", "a-session-this-server-never-made")
    assert reply.status_code == 401
    message = reply.json()["error"]["message"]
    assert "no longer knows your sign-in" in message and "vaultpilot open" in message
    assert "terminal" in message
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as c:
        assert "Missing API key" in c.get("/vaults").json()["error"]["message"]  # no cookie


def test_a_websocket_with_a_stale_cookie_is_closed_saying_why_and_may_then_use_a_key(
    live: Callable[..., Live], vault: Path
) -> None:
    server = _start(live, vault)
    stale = {"Cookie": f"{cookie_name(server.port)}=gone", "Origin": server.url}

    async def go() -> tuple[int | None, str, str, dict[str, Any]]:
        async with server.ws(additional_headers=stale) as ws:
            assert ws.response is not None
            set_cookie = ws.response.headers.get("set-cookie", "")
            try:
                await asyncio.wait_for(ws.recv(), 5)
                code, reason = None, ""
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else None
                reason = closed.rcvd.reason if closed.rcvd else ""
        # The page's next socket carries no cookie (cleared above) and authenticates with a key.
        async with server.ws(additional_headers={"Origin": server.url}) as ws:
            auth = command("Authenticate", {"key": server.key})
            await ws.send(json.dumps(auth))
            reply = await recv_json(ws)
            assert reply["success"] is True, reply
            hello = await recv_json(ws)
        return code, reason, set_cookie, hello

    code, reason, set_cookie, hello = asyncio.run(go())
    assert code == CLOSE_SIGNED_OUT == CLOSE_UNAUTHORIZED
    assert reason == signed_out_message("unknown")
    assert set_cookie.startswith(f"{cookie_name(server.port)}=;") and "Max-Age=0" in set_cookie
    assert hello["type"] == "hello" and hello["vaults"] == ["vault"]


async def _closed_within(ws: Any, seconds: float) -> tuple[int | None, str]:
    """Read frames until the server closes the socket; its close code and reason."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                await ws.recv()
    except ConnectionClosed as closed:
        return (closed.rcvd.code, closed.rcvd.reason) if closed.rcvd else (None, "")
    except TimeoutError:
        return None, "still open"


def test_open_sockets_end_with_their_session_or_their_key(
    live: Callable[..., Live], vault: Path
) -> None:
    server = _start(live, vault)
    session, other = _session(server), _session(server)

    async def go() -> list[tuple[int | None, str]]:
        signed = {"Cookie": f"{cookie_name(server.port)}={session}", "Origin": server.url}
        kept = {"Cookie": f"{cookie_name(server.port)}={other}", "Origin": server.url}
        async with (
            server.ws(additional_headers=signed, subprotocols=_protocols(session)) as mine,
            server.ws(additional_headers=kept, subprotocols=_protocols(other)) as theirs,
        ):
            assert (await recv_json(mine))["type"] == "hello"
            assert (await recv_json(theirs))["type"] == "hello"
            # Signing out in one tab ends every socket of that session, not the others'.
            await asyncio.to_thread(_post, server, "/logout", session)
            first = await _closed_within(mine, REVALIDATE_S * 3)
            untouched = await _closed_within(theirs, REVALIDATE_S * 1.5)
        async with server.ws() as by_key:  # the key in the handshake (Authorization header)
            assert (await recv_json(by_key))["type"] == "hello"
            rotate_key(server.app.state.vaultpilot.settings.key_path)
            second = await _closed_within(by_key, REVALIDATE_S * 3)
        return [first, untouched, second]

    first, untouched, second = asyncio.run(go())
    assert first == (CLOSE_UNAUTHORIZED, signed_out_message("unknown"))
    assert untouched == (None, "still open")
    assert second[0] == CLOSE_UNAUTHORIZED and "key changed" in second[1]


def test_close_reasons_fit_a_websocket_close_frame() -> None:
    for status in ("expired", "unknown", "no_page"):
        message = signed_out_message(status)
        assert len(message.encode("utf-8")) <= 123
        assert "vaultpilot open" in message


def test_an_expired_session_is_told_apart_after_a_restart(tmp_path: Path) -> None:
    now = [1_000_000.0]
    path = tmp_path / "data" / "sessions.json"
    key = "k" * 43
    store = Sessions(path=path, key=lambda: key, clock=lambda: now[0])
    signed_in = store.redeem(store.issue_link()[0])
    assert signed_in is not None and store.status(signed_in.session) == "active"
    session = signed_in.session
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    now[0] += SESSION_TTL_S + 1
    reopened = Sessions(path=path, key=lambda: key, clock=lambda: now[0])
    assert reopened.status(session) == "expired"
    assert reopened.page_status(session, signed_in.page) == "expired"
    assert signed_out_message("expired").startswith("Your sign-in expired.")
    now[0] += SESSION_TTL_S  # long expired: forgotten at the next write
    reopened.redeem(reopened.issue_link()[0])
    assert reopened.status(session) == "unknown" and len(reopened) == 1


def test_two_servers_on_one_data_folder_share_sessions(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    one, two = Sessions(path=path), Sessions(path=path)
    a = one.redeem(one.issue_link()[0])
    b = two.redeem(two.issue_link()[0])  # reads one's file before writing: a is kept
    assert a is not None and b is not None
    assert one.page_status(b.session, b.page) == "active"
    assert two.page_status(a.session, a.page) == "active"
    assert one.page_status(b.session, a.page) == "no_page"  # a's secret is not b's
    assert Sessions(path=path).check(a.session) and Sessions(path=path).check(b.session)


def test_an_unreadable_file_means_signing_in_again_not_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "sessions.json"
    path.write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        store = Sessions(path=path)
    assert "cannot be read" in caplog.text and "sign in again" in caplog.text
    assert store.status("anything") == "unknown"
    signed_in = store.redeem(store.issue_link()[0])
    assert signed_in is not None and Sessions(path=path).check(signed_in.session)  # rewritten


def test_an_unwritable_folder_keeps_sessions_until_the_server_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    store = Sessions(path=blocker / "sessions.json")  # its folder cannot be made
    with caplog.at_level(logging.WARNING):
        signed_in = store.redeem(store.issue_link()[0])
    assert (
        signed_in is not None and store.page_status(signed_in.session, signed_in.page) == "active"
    )
    assert "could not write the browser sessions file" in caplog.text


def test_the_first_sign_in_after_a_key_rotation_holds(tmp_path: Path) -> None:
    key = ["k" * 43]
    store = Sessions(path=tmp_path / "sessions.json", key=lambda: key[0])
    old = store.redeem(store.issue_link()[0])
    assert old is not None
    key[0] = "r" * 43  # `vaultpilot key rotate` while the server runs
    link = store.issue_link()[0]
    signed_in = store.redeem(link)
    assert signed_in is not None and store.status(signed_in.session) == "active"
    assert store.status(signed_in.session) == "active"  # and on the next request too
    assert store.page_status(old.session, old.page) == "unknown"


def test_a_sign_out_through_one_server_holds_on_another(tmp_path: Path) -> None:
    path, key = tmp_path / "sessions.json", "k" * 43
    one = Sessions(path=path, key=lambda: key)
    two = Sessions(path=path, key=lambda: key)
    signed_in = one.redeem(one.issue_link()[0])
    assert signed_in is not None
    assert two.page_status(signed_in.session, signed_in.page) == "active"
    assert one.sign_out(signed_in.session)
    assert two.page_status(signed_in.session, signed_in.page) == "unknown"  # both ended
