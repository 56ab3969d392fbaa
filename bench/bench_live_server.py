"""The live index end to end over HTTP: ``vaultpilot serve`` with its file watcher vs without.

    .venv/bin/python bench/bench_live_server.py --sizes 1000 10000 [50000]

For each size, a copy of the seeded synthetic vault (``bench/synth_vault.py``; pristine copies
are kept in ``bench/out/``) is served twice, one after the other, on one data folder (so the
index is built once): **live** is ``vaultpilot serve`` as shipped (the watcher keeps the index
fresh, read tool calls do not walk the vault and run in parallel); **scan** is the same server
with the watcher off (``Vaults(watch=False)``), so every read tool call syncs first, as before
the live index; **threads** (``--modes live threads``) is the live server with
``read_workers = 0``, every read in the server process instead of its read worker processes.
All run with ``--no-embed`` (keyword ranking; no vectors), in their own process; this process
is the client (TCP_NODELAY, keep-alive), on 127.0.0.1 only.

1. **Latency**: ``--requests`` (watcher off: ``--scan-requests``) sequential ``POST /rpc``
   calls per tool call after a warm-up:
   read_note, search_by_metadata, semantic_search, note_with_backlinks, over varied notes and
   queries. p50 / p99 in ms.
2. **Load**: ``--clients`` concurrent clients (one keep-alive connection each) for ``--seconds``:
   ``--writers`` of them write without pause (``append_note`` to the client's own note), the rest
   read without pause (the four calls above, in turn). Reads/s, writes/s and read p50 / p99, and
   the server's CPU time per request (its process and its read workers; user + system, from
   ``/proc``; on a machine shared with other work it varies far less than the rates do) and how
   many CPUs it kept busy.
3. **Saved to found**: ``--saves`` times, a note gets a new, unique word appended on disk (an
   in-place write, as Obsidian saves); one client runs semantic_search for it every 5 ms until
   it is found. p50 / p99 / max in ms.

Prints markdown tables for docs/benchmarks.md; ``--json PATH`` also writes the raw figures.

``--semantic-threads T`` runs a different, in-process check instead: semantic_search through
``VaultRuntime.call_tool`` from ``T`` threads (each on its own read connection, as the server's
workers) with vectors in the index, made by a hashed-words stand-in embedder (384 dimensions, no
model needed), so the vector cache is exercised: p50 / p99 in ms over ``--requests`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth_vault import generate, sample_queries  # noqa: E402

RUNNERS = {
    "live": "import typer; from vaultpilot.cli.server_cmds import register; "
    "app = typer.Typer(); register(app); app()",
    # As shipped, but every read runs in the server process (``read_workers = 0``).
    "threads": "import typer; from vaultpilot.cli.server_cmds import register; "
    "app = typer.Typer(); register(app); app()",
    # The same server with the watcher off: every read tool call syncs the index first.
    "scan": "import functools, typer; import vaultpilot.server.app as a; "
    "a.Vaults = functools.partial(a.Vaults, watch=False); "
    "from vaultpilot.cli.server_cmds import register; app = typer.Typer(); register(app); app()",
}
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
TAGS = ["project", "idea", "meeting", "review", "todo", "area/health", "type/book"]
Args = Callable[[int], tuple[str, dict[str, Any]]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(mode: str, vault: Path, data: Path, port: int) -> subprocess.Popen[bytes]:
    config = data / f"{mode}.toml"
    data.mkdir(parents=True, exist_ok=True)
    config.write_text("[server]\nread_workers = 0\n" if mode == "threads" else "")
    env = {**os.environ, "VAULTPILOT_CONFIG": str(config)}
    args = [sys.executable, "-c", RUNNERS[mode], "serve", "--vault", f"bench={vault}",
            "--port", str(port), "--data-dir", str(data), "--no-embed"]  # fmt: skip
    log = (data.parent / f"server-{mode}.log").open("wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 900
    while True:  # up when the port answers (after the index is synced and the watcher is live)
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the server did not start:\n" + log.name)
        if (data / "server.key").exists():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                return proc
        time.sleep(0.05)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process and its live children (the read workers) have used
    so far; None where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(child)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()
        ]
    except OSError:
        return None
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(child) or 0.0 for child in children)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def body(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": str(n), "commandName": name, "arguments": arguments, "timestamp": time.time()}


def calls(paths: list[str], seed: int) -> dict[str, Args]:
    rng = random.Random(seed)
    notes = rng.sample(paths, min(200, len(paths)))
    queries = sample_queries(200, seed=seed)

    def read_note(i: int) -> tuple[str, dict[str, Any]]:
        return "obsidian_get_context", {"contextType": "read_note", "target": notes[i % 200]}

    def backlinks(i: int) -> tuple[str, dict[str, Any]]:
        args = {"contextType": "note_with_backlinks", "target": notes[(i * 7) % len(notes)]}
        return "obsidian_get_context", args

    def metadata(i: int) -> tuple[str, dict[str, Any]]:
        filters = {"tags": [TAGS[i % len(TAGS)]]}
        return "obsidian_query_vault", {"queryType": "search_by_metadata", "filters": filters}

    def semantic(i: int) -> tuple[str, dict[str, Any]]:
        args = {"queryType": "semantic_search", "query": queries[i % len(queries)], "limit": 10}
        return "obsidian_query_vault", args

    return {
        "read_note": read_note,
        "search_by_metadata": metadata,
        "semantic_search": semantic,
        "note_with_backlinks": backlinks,
    }


def client(url: str, key: str) -> httpx.Client:
    transport = httpx.HTTPTransport(socket_options=NODELAY)
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.Client(
        base_url=url, headers=headers, trust_env=False, timeout=60, transport=transport
    )


def latency(url: str, key: str, make: Args, n: int) -> dict[str, float]:
    times: list[float] = []
    with client(url, key) as c:
        for i in range(20):  # warm-up
            c.post("/rpc", json=body(*make(i), i))
        for i in range(n):
            started = time.perf_counter()
            reply = c.post("/rpc", json=body(*make(i), i))
            times.append((time.perf_counter() - started) * 1000)
            assert reply.json()["success"], reply.text[:300]
    return {"p50": statistics.median(times), "p99": pct(times, 0.99)}


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on one connection, for the load phase only.

    httpx's async client costs ~1 ms of CPU per request in this process, so 50 of them cap the
    load near 150 requests/s on 2 cores whatever the server does; this one costs a few tens of
    µs: it reads the reply's head in one call and decodes the JSON body only when the envelope
    does not start with ``"success":true`` (a failure, to report its error). The load client
    shares the machine's CPUs with the server, so what it spends is taken from the server.
    """

    def __init__(self, port: int, key: str) -> None:
        self._port, self._key = port, key
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None
        self._head = (
            f"POST {{path}} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
            "Content-Length: {length}\r\n\r\n"
        )

    async def open(self) -> None:
        self._r, self._w = await asyncio.open_connection("127.0.0.1", self._port)
        self._w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def post(self, path: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, the envelope); for a success the envelope is ``{"success": True}``
        only (its result is not decoded)."""
        assert self._r is not None and self._w is not None
        data = json.dumps(obj).encode()
        request = self._head.format(path=path, length=len(data)).encode() + data
        self._w.write(request)
        try:
            head = await self._r.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            # the server closed an idle keep-alive connection: reconnect once
            self.close()
            await self.open()
            assert self._r is not None and self._w is not None
            self._w.write(request)
            head = await self._r.readuntil(b"\r\n\r\n")
        status_line, _, fields = head.partition(b"\r\n")
        length, chunked = 0, False
        for line in fields.lower().split(b"\r\n"):
            if line.startswith(b"content-length:"):
                length = int(line[15:])
            elif line.startswith(b"transfer-encoding:"):
                chunked = b"chunked" in line
        raw = await self._chunks() if chunked else await self._r.readexactly(length)
        if b'"success":true' in raw[:400]:  # the envelope: id, commandName, then success
            return int(status_line.split()[1]), {"success": True}
        try:
            reply: dict[str, Any] = json.loads(raw)
        except ValueError:
            reply = {"success": False, "error": raw[:200].decode(errors="replace")}
        return int(status_line.split()[1]), reply

    async def _chunks(self) -> bytes:
        assert self._r is not None
        out = b""
        while size := int((await self._r.readline()).strip() or b"0", 16):
            out += await self._r.readexactly(size)
            await self._r.readline()
        await self._r.readline()
        return out

    def close(self) -> None:
        if self._w is not None:
            self._w.close()


async def load(
    port: int, key: str, reads: list[Args], clients: int, seconds: float, writers: int
) -> dict[str, float]:
    read_ms: list[float] = []
    counts = {"reads": 0, "writes": 0, "errors": 0}
    problems: list[str] = []
    stop = 0.0

    async def make(cid: int, c: RawClient) -> None:
        made = {"operation": "create_note", "target": f"Bench/client {cid}.md", "content": "# c"}
        await c.post("/rpc", body("obsidian_vault_manager", made, 0))

    async def one(cid: int, c: RawClient) -> None:
        note = f"Bench/client {cid}.md"
        i = 0
        while time.monotonic() < stop:
            i += 1
            if cid < writers:
                args = {"operation": "append_note", "target": note, "content": f"- line {i}"}
                name, kind = "obsidian_vault_manager", "writes"
            else:
                name, args = reads[(cid + i) % len(reads)](cid * 1000 + i)
                kind = "reads"
            started = time.perf_counter()
            status, reply = await c.post("/rpc", body(name, args, i))
            if kind == "reads":
                read_ms.append((time.perf_counter() - started) * 1000)
            ok = status == 200 and reply.get("success")
            counts[kind if ok else "errors"] += 1
            if not ok and len(problems) < 5:
                problems.append(f"{status} {name}: {str(reply.get('error'))[:200]}")

    conns = [RawClient(port, key) for _ in range(clients)]
    try:
        for c in conns:
            await c.open()
        # Each writer's note, made before the clock starts.
        await asyncio.gather(*(make(i, c) for i, c in enumerate(conns[:writers])))
        started = time.monotonic()
        stop = started + seconds
        await asyncio.gather(*(one(i, c) for i, c in enumerate(conns)))
        took = time.monotonic() - started
    finally:
        for c in conns:
            c.close()
    for problem in problems:
        print("error:", problem, file=sys.stderr)
    return {
        "reads_per_s": counts["reads"] / took,
        "writes_per_s": counts["writes"] / took,
        "errors": counts["errors"],
        "p50": statistics.median(read_ms),
        "p99": pct(read_ms, 0.99),
    }


def run_load(
    proc: subprocess.Popen[bytes], port: int, key: str, reads: list[Args], args: argparse.Namespace
) -> dict[str, float]:
    """The load phase (``--seconds`` 0: skipped), with the server's CPU time per request."""
    if args.seconds <= 0:
        return {}
    cpu0, started = cpu_seconds(proc.pid), time.monotonic()
    loaded = asyncio.run(load(port, key, reads, args.clients, args.seconds, args.writers))
    cpu1, took = cpu_seconds(proc.pid), time.monotonic() - started
    if cpu0 is not None and cpu1 is not None:
        done = (loaded["reads_per_s"] + loaded["writes_per_s"]) * args.seconds
        loaded["cpu_ms_per_request"] = (cpu1 - cpu0) * 1000 / max(done, 1)
        loaded["cpus_busy"] = (cpu1 - cpu0) / took
    return loaded


def saved_to_found(url: str, key: str, vault: Path, paths: list[str], saves: int) -> list[float]:
    rng = random.Random(7)
    out: list[float] = []
    with client(url, key) as c:
        for i in range(saves):
            note = vault / rng.choice(paths)
            word = f"zqsaved{i}x{rng.randrange(10**9)}"
            args = {"queryType": "semantic_search", "query": word, "limit": 3}
            t0 = time.perf_counter()
            with note.open("a", encoding="utf-8") as f:  # in place, as Obsidian saves
                f.write(f"\nA new line with {word}.\n")
            while True:
                reply = c.post("/rpc", json=body("obsidian_query_vault", args, i)).json()
                if reply["result"]["results"]:
                    break
                if time.perf_counter() - t0 > 30:
                    raise SystemExit(f"{word} not found 30 s after the save")
                time.sleep(0.005)
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.2)
    return out


class HashVectors:
    """A stand-in embedder: each word hashed (crc32) into one of 384 dimensions, unit rows."""

    model_name = "bench/hashed-words-384"
    dimension = 384

    def embed(self, texts: list[str]) -> Any:
        import re
        import zlib

        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dimension] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def semantic_inprocess(n: int, args: argparse.Namespace) -> dict[str, float]:
    """semantic_search p50 / p99 (ms) in process, from ``--semantic-threads`` threads."""
    from concurrent.futures import ThreadPoolExecutor

    from vaultpilot.index.db import connect
    from vaultpilot.index.semantic import embed_pending
    from vaultpilot.index.sync import sync_vault
    from vaultpilot.tools.semantic import Semantic
    from vaultpilot.tools.session import VaultRuntime

    tmp = Path(tempfile.mkdtemp(prefix=f"vp-sem-{n}-"))
    try:
        vault = tmp / "vault"
        shutil.copytree(pristine(args.out, n, args.seed), vault)
        db = tmp / "data" / "vaults" / "bench" / "index.db"
        conn = connect(db)
        sync_vault(conn, vault)
        embed_pending(conn, HashVectors(), batch_size=256)  # type: ignore[arg-type]
        conn.close()
        semantic = Semantic(load=HashVectors)  # type: ignore[arg-type]
        rt = VaultRuntime(vault, db, source="bench", semantic=semantic, watch=True)
        rt.open()
        queries = sample_queries(200, seed=args.seed)

        def one(i: int) -> float:
            t0 = time.perf_counter()
            args_ = {"queryType": "semantic_search", "query": queries[i % 200], "limit": 10}
            assert rt.call_tool("obsidian_query_vault", args_).error is None
            return (time.perf_counter() - t0) * 1000

        try:
            with ThreadPoolExecutor(args.semantic_threads) as pool:
                list(pool.map(one, range(20)))  # warm-up: the embedder and the snapshot load
                times = list(pool.map(one, range(args.requests)))
        finally:
            rt.close()
        loads = semantic.cache.loads
        return {"p50": pct(times, 0.5), "p99": pct(times, 0.99), "loads": loads}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def pristine(out: Path, n: int, seed: int) -> Path:
    vault = out / f"vault-{n}-{seed}"
    if not vault.exists():
        generate(vault, n, seed=seed)
    return vault


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"vp-live-{n}-"))
    try:
        vault = tmp / "vault"
        shutil.copytree(pristine(args.out, n, args.seed), vault)
        paths = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
        make = calls(paths, args.seed)
        data = tmp / "data"
        result: dict[str, Any] = {}
        for mode in args.modes:
            port = free_port()
            t0 = time.monotonic()
            proc = start_server(mode, vault, data, port)
            started = time.monotonic() - t0
            try:
                url = f"http://127.0.0.1:{port}"
                key = (data / "server.key").read_text().strip()
                n_req = args.requests if mode == "live" else args.scan_requests
                lat = {name: latency(url, key, f, n_req) for name, f in make.items()}
                loaded = run_load(proc, port, key, list(make.values()), args)
                saves = saved_to_found(url, key, vault, paths, args.saves) if args.saves else []
            finally:
                stop_server(proc)
                log = data.parent / f"server-{mode}.log"
                shutil.copy(log, args.out / f"live-server-{n}-{mode}.log")
            result[mode] = {"start_s": started, "latency": lat, "load": loaded, "saves": saves}
            print(f"{n} {mode}: done", file=sys.stderr)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(results: dict[int, dict[str, Any]]) -> str:
    ops = ["read_note", "search_by_metadata", "semantic_search", "note_with_backlinks"]
    lines = [
        "| notes | server | " + " | ".join(f"{o} p50 / p99" for o in ops) + " |",
        "|---|---|" + "---|" * len(ops),
    ]
    for n, res in results.items():
        for mode, r in res.items():
            cells = [f"{r['latency'][o]['p50']:.1f} / {r['latency'][o]['p99']:.1f}" for o in ops]
            lines.append(f"| {n:,} | {mode} | " + " | ".join(cells) + " |")
    if not any(r["load"] for res in results.values() for r in res.values()):
        return "\n".join(lines)  # --seconds 0: latency only
    lines += [
        "",
        "| notes | server | reads/s | writes/s | read p50 / p99 (ms) | errors "
        "| server CPU per request (ms) / CPUs busy | saved to found p50 / p99 / max (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, res in results.items():
        for mode, r in res.items():
            ld, sv = r["load"], r["saves"] or [float("nan")]
            if not ld:
                continue
            cpu = (
                f"{ld['cpu_ms_per_request']:.2f} / {ld['cpus_busy']:.2f}"
                if "cpu_ms_per_request" in ld
                else "–"
            )
            lines.append(
                f"| {n:,} | {mode} | {ld['reads_per_s']:.0f} | {ld['writes_per_s']:.1f} | "
                f"{ld['p50']:.1f} / {ld['p99']:.1f} | {ld['errors']} | {cpu} | "
                f"{pct(sv, 0.5):.0f} / {pct(sv, 0.99):.0f} / {max(sv):.0f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--modes", nargs="+", default=["live", "scan"], choices=sorted(RUNNERS))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--scan-requests", type=int, default=100, help="per call, watcher off")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0, help="of load (0: no load phase)")
    ap.add_argument("--saves", type=int, default=20, help="0: no saved-to-found phase")
    ap.add_argument("--writers", type=int, default=5, help="of the clients, those that write")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--semantic-threads", type=int, default=0, help="the in-process check")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}", file=sys.stderr)
    if args.semantic_threads:
        for n in args.sizes:
            r = semantic_inprocess(n, args)
            print(f"| {n:,} | {args.semantic_threads} | {r['p50']:.1f} / {r['p99']:.1f} |")
        return
    results = {n: run_size(n, args) for n in args.sizes}
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
