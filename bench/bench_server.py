"""Agent Communication Server benchmark: tool-call latency, throughput, and WebSocket fan-out.

    .venv/bin/python bench/bench_server.py                      # defaults below
    .venv/bin/python bench/bench_server.py --latency 2000 --throughput 5000 --clients 50

The server is ``vaultpilot serve`` in its own process, on a free loopback port, over a copy of
the example vault (47 notes), exactly as a user starts it; this process is the client. Every
loop is bounded in count and in time (``--max-seconds`` per phase), traffic goes to 127.0.0.1
only, and the server is stopped at the end.

1. **Latency**: sequential ``POST /rpc`` calls on one keep-alive connection, after a warm-up:
   ``ReportStatus`` (the RPC path alone) and ``obsidian_query_vault`` (a keyword search with the
   index brought up to date first, as every read tool call does). Target p50 <= 3 ms and
   p99 <= 15 ms.
2. **Throughput**: ``--clients`` concurrent clients (one keep-alive connection each) sending
   ``obsidian_query_vault`` calls until ``--throughput`` requests are done. Target >= 500/s with
   50 clients.
3. **Writes**: ``append_note`` to one note, sequentially (latency), and ``create_note`` of new
   notes from ``--clients`` concurrent clients until ``--writes`` are done (throughput). Every
   write goes through the vault's write lock and the compare-before-rename check.
4. **Fan-out**: ``--subscribers`` WebSockets; one sends StartAgent; the built-in agent runs a
   scripted two-step conversation against the scripted model server; the time until every
   subscriber has received ``run_finished``, and whether each got every event.

Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn

REPO = Path(__file__).resolve().parents[1]
RUNNER = (
    "import typer; from vaultpilot.cli.server_cmds import register; "
    "app = typer.Typer(); register(app); app()"
)
SEARCH = {"queryType": "semantic_search", "query": "rollback plan", "limit": 5,
          "responseFormat": "concise"}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def body(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": str(n), "commandName": name, "arguments": arguments, "timestamp": time.time()}


def start_server(vault: Path, data: Path, port: int, model_url: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "VAULTPILOT_CONFIG": str(data / "none.toml"),
        "VAULTPILOT_BASE_URL": model_url,
        "VAULTPILOT_MODEL": "scripted",
    }
    args = [sys.executable, "-c", RUNNER, "serve", "--vault", f"bench={vault}",
            "--port", str(port), "--data-dir", str(data)]  # fmt: skip
    log = (data.parent / "server.log").open("wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 30
    while True:  # up when the key exists and the port answers
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(
                "the server did not start:\n" + (data.parent / "server.log").read_text()
            )
        if (data / "server.key").exists():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                return proc
        time.sleep(0.05)


# The client sets TCP_NODELAY, as browsers and curl do, so the figures measure the server rather
# than Nagle's algorithm meeting delayed ACKs on the client (~40 ms a request on Linux).
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(url: str, key: str, name: str, args: Any, n: int, limit: float) -> dict[str, float]:
    times: list[float] = []
    headers = {"Authorization": f"Bearer {key}"}
    transport = httpx.HTTPTransport(socket_options=NODELAY)
    with httpx.Client(
        base_url=url, headers=headers, trust_env=False, timeout=10, transport=transport
    ) as c:
        for i in range(50):  # warm-up
            c.post("/rpc", json=body(name, args(i) if callable(args) else args, i))
        stop = time.monotonic() + limit
        for i in range(n):
            started = time.perf_counter()
            reply = c.post("/rpc", json=body(name, args(i) if callable(args) else args, i))
            times.append((time.perf_counter() - started) * 1000)
            assert reply.json()["success"], reply.text
            if time.monotonic() > stop:
                break
    return {"n": len(times), "p50": statistics.median(times), "p99": percentile(times, 0.99)}


def append(n: int) -> dict[str, Any]:
    return {"operation": "append_note", "target": "Inbox.md", "content": f"- bench line {n}"}


def create(n: int) -> dict[str, Any]:
    return {"operation": "create_note", "target": f"Bench/note {n}.md", "content": f"# {n}\n"}


async def throughput(
    url: str,
    key: str,
    total: int,
    clients: int,
    limit: float,
    *,
    name: str = "obsidian_query_vault",
    arguments: Any = lambda _n: SEARCH,
) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {key}"}
    done = 0
    failures = 0
    stop = time.monotonic() + limit

    async def worker() -> None:
        nonlocal done, failures
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        transport = httpx.AsyncHTTPTransport(socket_options=NODELAY, limits=limits)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, trust_env=False, timeout=30, transport=transport
        ) as c:
            while done < total and time.monotonic() < stop:
                done += 1
                reply = await c.post("/rpc", json=body(name, arguments(done), done))
                if reply.status_code != 200 or not reply.json()["success"]:
                    failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    seconds = time.perf_counter() - started
    return {"n": done, "seconds": seconds, "rps": done / seconds, "failures": failures}


async def fan_out(ws_url: str, key: str, subscribers: int, limit: float) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {key}"}
    sockets = [await connect(ws_url, additional_headers=headers, proxy=None, max_queue=None)
               for _ in range(subscribers)]  # fmt: skip

    async def collect(ws: Any) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), limit))
            if frame.get("type") == "event":
                got.append(frame["event"])
                if frame["event"]["kind"] == "run_finished":
                    return got

    try:
        for ws in sockets:
            await ws.recv()  # hello
        started = time.perf_counter()
        await sockets[0].send(json.dumps(body("StartAgent", {"goal": "recent notes"}, 0)))
        received = await asyncio.gather(*(collect(ws) for ws in sockets))
        seconds = time.perf_counter() - started
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets))
    complete = sum(1 for r in received if r == received[0])
    return {"subscribers": subscribers, "events": len(received[0]), "complete": complete,
            "seconds": seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=int, default=2000, help="sequential calls per command")
    parser.add_argument("--throughput", type=int, default=5000, help="calls in the throughput run")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--writes", type=int, default=1000, help="calls in each write phase")
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--max-seconds", type=float, default=60.0, help="bound of each phase")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="vp-bench-server-"))
    vault, data = tmp / "vault", tmp / "data"
    shutil.copytree(REPO / "examples" / "vault", vault)
    turns = [
        ScriptedTurn(
            reasoning="Find the latest notes first.",
            tool_calls=[ScriptedCall(name="obsidian_query_vault",
                                     arguments={"queryType": "recent_changes", "limit": 5})],
        ),
        ScriptedTurn(text="These are the five notes changed most recently, newest first."),
    ]  # fmt: skip
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ScriptedModelServer(turns) as model:
        proc = start_server(vault, data, port, model.base_url)
        try:
            key = (data / "server.key").read_text().strip()
            status = latency(
                url, key, "ReportStatus", {"Status": "bench"}, args.latency, args.max_seconds
            )
            search = latency(
                url, key, "obsidian_query_vault", SEARCH, args.latency, args.max_seconds
            )
            rate = asyncio.run(
                throughput(url, key, args.throughput, args.clients, args.max_seconds)
            )
            appends = latency(
                url, key, "obsidian_vault_manager", append, args.writes, args.max_seconds
            )
            creates = asyncio.run(
                throughput(url, key, args.writes, args.clients, args.max_seconds,
                           name="obsidian_vault_manager", arguments=create)
            )  # fmt: skip
            fan = asyncio.run(
                fan_out(f"ws://127.0.0.1:{port}/ws", key, args.subscribers, args.max_seconds)
            )
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            shutil.rmtree(tmp, ignore_errors=True)

    print("| measurement | result | target |")
    print("|---|---|---|")
    print(
        f"| ReportStatus over HTTP, {status['n']:.0f} sequential calls | "
        f"p50 {status['p50']:.2f} ms, p99 {status['p99']:.2f} ms | p50 <= 3 ms, p99 <= 15 ms |"
    )
    print(
        f"| obsidian_query_vault over HTTP, {search['n']:.0f} sequential calls | p50 "
        f"{search['p50']:.2f} ms, p99 {search['p99']:.2f} ms | p50 <= 3 ms, p99 <= 15 ms |"
    )
    print(
        f"| obsidian_query_vault, {args.clients} concurrent clients, {rate['n']:.0f} calls | "
        f"{rate['rps']:.0f} requests/s ({rate['failures']:.0f} failed) | >= 500/s |"
    )
    print(
        f"| append_note over HTTP, {appends['n']:.0f} sequential calls | p50 "
        f"{appends['p50']:.2f} ms, p99 {appends['p99']:.2f} ms | |"
    )
    print(
        f"| create_note, {args.clients} concurrent clients, {creates['n']:.0f} calls | "
        f"{creates['rps']:.0f} writes/s ({creates['failures']:.0f} failed) | |"
    )
    print(
        f"| agent run to {fan['subscribers']:.0f} WebSocket subscribers | {fan['complete']:.0f}/"
        f"{fan['subscribers']:.0f} received all {fan['events']:.0f} events in "
        f"{fan['seconds']:.2f} s | all receive every event |"
    )


if __name__ == "__main__":
    main()
