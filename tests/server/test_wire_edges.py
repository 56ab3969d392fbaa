"""Small wire contracts at the socket's edge, on a real server under uvicorn:

* ``Subscribe`` changes only the fields it sends;
* ``Authenticate`` on a socket already signed in is an error and changes nothing;
* ``NaN``, ``Infinity`` and ``1e999`` are no JSON numbers: refused as a ``timestamp``;
* keyless sockets waiting to authenticate are capped; signed-in ones are never refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from tests.server.conftest import Live, command, is_reply, recv_json, recv_until
from vaultpilot.server.limits import MAX_PENDING_SOCKETS


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault})


def test_subscribe_keeps_the_fields_it_does_not_send(server: Live) -> None:
    async def go() -> list[dict[str, Any]]:
        async with server.ws() as ws:
            await recv_json(ws)
            replies = []
            for cid, args in (
                ("s1", {"role": "agent"}),
                ("s2", {"since": 0}),
                ("s3", {"format": "spec"}),
            ):
                await ws.send(json.dumps(command("Subscribe", args, cid)))
                replies.append((await recv_until(ws, is_reply(cid)))[-1]["result"])
            replies.append({"agents": server.app.state.vaultpilot.hub.count("agent")})
            return replies

    assert asyncio.run(go()) == [
        {"role": "agent", "format": "frames"},
        {"role": "agent", "format": "frames"},
        {"role": "agent", "format": "spec"},
        {"agents": 1},
    ]


def test_authenticate_on_a_signed_in_socket_is_an_error(server: Live) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with server.ws() as ws:  # signed in by its Authorization header
            await recv_json(ws)
            await ws.send(json.dumps(command("Authenticate", {"key": server.key}, "a1")))
            again = (await recv_until(ws, is_reply("a1")))[-1]
            await ws.send(json.dumps(command("Authenticate", {"key": "x" * 43}, "a2")))
            wrong = (await recv_until(ws, is_reply("a2")))[-1]
            await ws.send(json.dumps(command("GetVaultContext", {}, "g1")))
            return again, wrong, (await recv_until(ws, is_reply("g1")))[-1]

    again, wrong, after = asyncio.run(go())
    for reply in (again, wrong):
        assert reply["success"] is False and reply["error"]["code"] == "request_refused"
        assert "already signed in" in reply["error"]["message"]
    assert after["success"] is True  # still signed in: nothing changed


# A string naming one ("NaN") is read as a number by pydantic's lax mode, and refused the same.
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", '"NaN"', '"-inf"'])
def test_a_timestamp_that_is_no_json_number_is_refused(server: Live, number: str) -> None:
    def body(name: str, arguments: dict[str, Any]) -> str:
        fields = f'"id": "t1", "commandName": "{name}", "arguments": {json.dumps(arguments)}'
        return "{" + fields + f', "timestamp": {number}' + "}"

    read = {"contextType": "read_note", "target": "Home.md"}
    bodies = [body("obsidian_get_context", read), body("GetVaultContext", {})]
    with server.http() as http:
        headers = {"Content-Type": "application/json"}
        replies = [http.post("/rpc", content=b, headers=headers) for b in bodies]

    async def over_ws() -> dict[str, Any]:
        async with server.ws() as ws:
            await recv_json(ws)
            await ws.send(bodies[0])
            return await recv_json(ws)

    frame = asyncio.run(over_ws())
    for reply in [r.json() for r in replies] + [frame]:
        assert reply["success"] is False and reply["error"]["code"] == "invalid_argument"
        message = reply["error"]["message"]
        assert "'timestamp'" in message and "1764115200000" in message
        assert "not JSON numbers" in message


def test_keyless_sockets_waiting_to_sign_in_are_capped(server: Live) -> None:
    async def go() -> tuple[int, str, bool, bool]:
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(MAX_PENDING_SOCKETS):
                await stack.enter_async_context(server.ws(additional_headers={}))
            await asyncio.sleep(0.2)  # the server has taken each one in
            one_more = await stack.enter_async_context(server.ws(additional_headers={}))
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(one_more.recv(), 5)
            assert closed.value.rcvd is not None
            code, reason = closed.value.rcvd.code, closed.value.rcvd.reason
            # A socket signed in by its handshake is never refused.
            signed_in = await stack.enter_async_context(server.ws())
            hello = await recv_json(signed_in)
        # Once the waiting ones are gone, a keyless socket may sign in again.
        await asyncio.sleep(0.2)
        async with server.ws(additional_headers={}) as late:
            await late.send(json.dumps(command("Authenticate", {"key": server.key}, "a1")))
            signed = await recv_json(late)
        return code, reason, hello["type"] == "hello", signed["success"] is True

    code, reason, hello, signed = asyncio.run(go())
    assert code == 1013 and f"at most {MAX_PENDING_SOCKETS}" in reason
    assert "send the key in the handshake" in reason
    assert hello and signed
