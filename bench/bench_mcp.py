"""MCP benchmark: handshake to tools listed on synthetic vaults, and a tool call's stdio overhead.

    .venv/bin/python bench/bench_mcp.py --sizes 1000 10000 --runs 3 --calls 200

1. **Handshake.** For each size, a synthetic vault (``bench/synth_vault.py``) and, per run, a
   fresh data folder, so the server has never indexed it and starts its first sync in the
   background while the client lists the tools. A raw client spawns ``vaultpilot mcp --no-embed``
   and writes ``ping`` first: its (pre-initialize) error reply marks the process as ready. Then
   ``initialize``, ``notifications/initialized`` and ``tools/list``. Reported: ready → tools
   listed (target <= 300 ms) and spawn → tools listed (adds Python start-up and imports). The
   server is killed with its process group afterwards (the first sync would take a while).
2. **Tool call.** On the smallest vault with its index built, the same ``obsidian_get_context``
   ``read_note`` call ``--calls`` times through the SDK's client over stdio, and in-process with
   ``run_tool`` on a ``ToolContext``. Reported: medians and the difference (target <= 2 ms),
   and the round trip of ``prompts/list``, which does no work: the SDK's own floor.

Prints markdown tables to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_vault import generate
from vaultpilot.locations import vault_data_dir
from vaultpilot.tools import open_context, run_tool

VAULTPILOT = Path(sys.executable).parent / "vaultpilot"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench"}}
CALL = {"contextType": "read_note", "target": ""}


def _env(data: Path, home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "VAULTPILOT_DATA_DIR": str(data),
        "VAULTPILOT_CONFIG": str(home / "none.toml"),
    }


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


def _reply(proc: subprocess.Popen[bytes], wanted: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == wanted:
            return message


def handshake(vault: Path, work: Path) -> tuple[float, float]:
    """(ready → tools listed, spawn → tools listed) in seconds, on a never-indexed vault."""
    data = Path(tempfile.mkdtemp(dir=work))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(VAULTPILOT), "mcp", "--no-embed", "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(data, work),
        start_new_session=True,  # the server and its sync's worker processes, killed together
    )
    try:
        _send(proc, {"id": 0, "method": "ping"})
        _reply(proc, 0)
        ready = time.perf_counter()
        _send(proc, {"id": 1, "method": "initialize", "params": INIT})
        _reply(proc, 1)
        _send(proc, {"method": "notifications/initialized"})
        _send(proc, {"id": 2, "method": "tools/list"})
        tools = _reply(proc, 2)["result"]["tools"]
        listed = time.perf_counter()
        assert len(tools) == 3
        return listed - ready, listed - started
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def _stdio_calls(
    vault: Path, data: Path, work: Path, target: str, n: int
) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(
        command=str(VAULTPILOT),
        args=["mcp", "--no-embed", "--vault", str(vault)],
        env=_env(data, work),
    )
    times, floor = [], []
    async with Client(params, mode="legacy") as client:
        for _ in range(n):  # a request that does no work: the SDK's own round trip
            t = time.perf_counter()
            await client.list_prompts()
            floor.append(time.perf_counter() - t)
        arguments = {**CALL, "target": target}
        await client.call_tool("obsidian_get_context", arguments)  # warm-up
        for _ in range(n):
            t = time.perf_counter()
            result = await client.call_tool("obsidian_get_context", arguments)
            times.append(time.perf_counter() - t)
            assert not result.is_error
    return times, floor


def tool_call(vault: Path, work: Path, n: int) -> tuple[float, float, float]:
    """Medians in seconds: read_note over stdio, in-process, and prompts/list over stdio."""
    data = work / "call-data"
    db = vault_data_dir(vault, data) / "index.db"
    ctx = open_context(vault, db)
    try:
        ctx.fresh(force=True)
        target = str(sorted(vault.rglob("*.md"))[0].relative_to(vault))
        arguments = {**CALL, "target": target}
        run_tool(ctx, "obsidian_get_context", arguments)
        local = []
        for _ in range(n):
            t = time.perf_counter()
            outcome = run_tool(ctx, "obsidian_get_context", arguments)
            local.append(time.perf_counter() - t)
            assert outcome.error is None
    finally:
        ctx.conn.close()
    remote, floor = anyio.run(_stdio_calls, vault, data, work, target, n)
    return statistics.median(remote), statistics.median(local), statistics.median(floor)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        work = Path(tmp)
        vaults = {}
        for size in args.sizes:
            vaults[size] = work / f"vault-{size}"
            generate(vaults[size], size)
        print("| notes | ready → tools listed (median, max) | spawn → tools listed (median) |")
        print("|---:|---:|---:|")
        for size, vault in vaults.items():
            runs = [handshake(vault, work) for _ in range(args.runs)]
            listed = [r[0] * 1000 for r in runs]
            spawned = [r[1] * 1000 for r in runs]
            print(
                f"| {size:,} | {statistics.median(listed):.0f} ms, {max(listed):.0f} ms "
                f"| {statistics.median(spawned):.0f} ms |"
            )
        smallest = vaults[min(vaults)]
        remote, local, floor = tool_call(smallest, work, args.calls)
        print()
        print(f"| median of {args.calls} | stdio | in-process | difference |")
        print("|---|---:|---:|---:|")
        print(
            f"| read_note, {min(vaults):,} notes | {remote * 1000:.2f} ms "
            f"| {local * 1000:.2f} ms | {(remote - local) * 1000:.2f} ms |"
        )
        print(f"| prompts/list (no work) | {floor * 1000:.2f} ms | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
