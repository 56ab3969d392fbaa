"""Index benchmark: full index, re-sync, keyword search and backlinks on synthetic vaults.

    .venv/bin/python bench/run_index_bench.py --sizes 1000 10000 50000

For each size, a seeded synthetic vault (``bench/synth_vault.py``) is generated once into
``bench/out/`` and reused. Each measurement runs in a fresh child process so import and start-up
costs count, and the peak RSS is the sum over that process and its worker processes, sampled
every 20 ms from /proc. Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth_vault import generate, sample_queries  # noqa: E402

NAIVE = r"""
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from naive_index import index
out = index(Path(sys.argv[1]), Path(sys.argv[2]))
out["seconds"] = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
out["cpu"] = ru.ru_utime + ru.ru_stime
print(json.dumps(out))
"""

CHILD = r"""
import json, sys, time, random
from pathlib import Path
t0 = time.perf_counter()
from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_vault
mode, vault, db = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
conn = connect(db)
out = {}
if mode == "full":
    r = sync_vault(conn, vault, rebuild=True, counts=True)
    import resource
    cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF,
              resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    out = {"seconds": time.perf_counter() - t0, "notes": r.notes, "links": r.links,
           "unresolved": r.unresolved_links, "skipped": len(r.skipped), "cpu": cpu}
elif mode == "nochange":
    t1 = time.perf_counter(); r = sync_vault(conn, vault)
    out = {"seconds": time.perf_counter() - t1, "parsed": r.parsed}
elif mode == "onechange":
    paths = [p for (p,) in conn.execute("SELECT path FROM files WHERE is_note = 1 ORDER BY path")]
    target = vault / random.Random(7).choice(paths)
    text = target.read_text(encoding="utf-8")
    target.write_text(text + "\nEdited line with [[New Link]] #edited\n", encoding="utf-8")
    try:
        t1 = time.perf_counter(); r = sync_vault(conn, vault)
        out = {"seconds": time.perf_counter() - t1, "parsed": r.parsed}
    finally:
        target.write_text(text, encoding="utf-8")
        sync_vault(conn, vault)
elif mode == "queries":
    from vaultpilot.index.queries import backlinks
    from vaultpilot.index.search import search
    queries = json.loads(sys.argv[4])
    lat = []
    for q in queries:
        t1 = time.perf_counter(); search(conn, q, limit=10); lat.append(time.perf_counter() - t1)
    paths = [p for (p,) in conn.execute("SELECT path FROM files WHERE is_note = 1")]
    rng = random.Random(3)
    blat = []
    for p in rng.sample(paths, min(200, len(paths))):
        t1 = time.perf_counter(); backlinks(conn, p); blat.append(time.perf_counter() - t1)
    out = {"search": lat, "backlinks": blat}
print(json.dumps(out))
"""


def _tree_rss_kb(pid: int) -> int:
    """RSS of a process and all its descendants, in KiB."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            with open(f"/proc/{p}/task/{p}/children", encoding="ascii") as fh:
                todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_child(
    args: list[str], code: str = CHILD, src: Path | None = None
) -> tuple[dict[str, object], float]:
    env = {**os.environ, "PYTHONPATH": str(src)} if src is not None else None
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    stop.set()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed: {args[0]}")
    return json.loads(out), peak / 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def num(value: object) -> float:
    assert isinstance(value, int | float), value
    return float(value)


def bench_size(n: int, seed: int, out_dir: Path, baseline: Path | None) -> dict[str, float]:
    vault = out_dir / f"vault-{n}-{seed}"
    if not vault.exists():
        t = time.perf_counter()
        generate(vault, n, seed=seed)
        print(f"generated {n} notes in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    db_dir = out_dir / f"db-{n}"
    shutil.rmtree(db_dir, ignore_errors=True)
    db = db_dir / "index.db"
    # Ours and the naive script alternate, twice each, in the same run; the best of each counts.
    # With --baseline-src another version's full index joins the same alternation.
    fulls, naives, befores = [], [], []
    for _ in range(2):
        if baseline is not None:
            shutil.rmtree(db_dir, ignore_errors=True)
            before = run_child(["full", str(vault), str(db)], src=baseline)[0]
            befores.append((num(before["seconds"]), num(before["cpu"])))
        shutil.rmtree(db_dir, ignore_errors=True)
        fulls.append(run_child(["full", str(vault), str(db)]))
        naive_db = out_dir / f"naive-{n}.db"
        naives.append(run_child([str(vault), str(naive_db), str(HERE)], NAIVE))
    full, rss = min(fulls, key=lambda r: num(r[0]["seconds"]))
    naive, naive_rss = min(naives, key=lambda r: num(r[0]["seconds"]))
    nochange = [num(run_child(["nochange", str(vault), str(db)])[0]["seconds"]) for _ in range(3)]
    onechange = [num(run_child(["onechange", str(vault), str(db)])[0]["seconds"]) for _ in range(3)]
    queries = sample_queries(200, seed=seed)
    q, _ = run_child(["queries", str(vault), str(db), json.dumps(queries)])
    search = q["search"]
    back = q["backlinks"]
    assert isinstance(search, list) and isinstance(back, list)
    return {
        "notes": num(full["notes"]),
        "full_s": num(full["seconds"]),
        "rss_mb": rss,
        "before_s": min(befores)[0] if befores else float("nan"),
        "before_cpu_s": min(befores)[1] if befores else float("nan"),
        "cpu_s": num(full["cpu"]),
        "naive_s": num(naive["seconds"]),
        "naive_cpu_s": num(naive["cpu"]),
        "naive_rss_mb": naive_rss,
        "nochange_ms": statistics.median(nochange) * 1000,
        "onechange_ms": statistics.median(onechange) * 1000,
        "search_p50": pct(search, 0.5),
        "search_p99": pct(search, 0.99),
        "back_p50": pct(back, 0.5),
        "back_p99": pct(back, 0.99),
        "db_mb": sum(p.stat().st_size for p in db_dir.iterdir()) / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--baseline-src", type=Path, default=None, help="another version's src/")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    random.seed(args.seed)
    print(
        f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, "
        f"load average at the start: {os.getloadavg()}",
        file=sys.stderr,
    )
    rows = [bench_size(n, args.seed, args.out, args.baseline_src) for n in args.sizes]
    print(
        "| notes | full index | notes/s | peak RSS | no-change re-sync | one-change re-sync "
        "| search p50 / p99 | backlinks p50 / p99 | index size |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {int(r['notes']):,} | {r['full_s']:.2f} s | {r['notes'] / r['full_s']:,.0f} "
            f"| {r['rss_mb']:.0f} MB | {r['nochange_ms']:.0f} ms | {r['onechange_ms']:.0f} ms "
            f"| {r['search_p50']:.2f} / {r['search_p99']:.2f} ms "
            f"| {r['back_p50']:.3f} / {r['back_p99']:.3f} ms | {r['db_mb']:.0f} MB |"
        )
    print()
    # "cores busy" is ours CPU / wall: near 2 on two idle cores when the parse workers run
    # beside the writer, near 1 when other work holds the second core.
    print(
        "| notes | ours: wall / CPU / peak RSS | cores busy | naive script: wall / CPU / peak RSS "
        "| ratio wall / CPU | baseline version: wall / CPU |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {int(r['notes']):,} "
            f"| {r['full_s']:.2f} s / {r['cpu_s']:.2f} s / {r['rss_mb']:.0f} MB "
            f"| {r['cpu_s'] / r['full_s']:.2f} "
            f"| {r['naive_s']:.2f} s / {r['naive_cpu_s']:.2f} s / {r['naive_rss_mb']:.0f} MB "
            f"| {r['full_s'] / r['naive_s']:.2f}x / {r['cpu_s'] / r['naive_cpu_s']:.2f}x "
            f"| {r['before_s']:.2f} s / {r['before_cpu_s']:.2f} s "
            f"({r['before_s'] / r['naive_s']:.2f}x / {r['before_cpu_s'] / r['naive_cpu_s']:.2f}x) |"
        )
    print(f"\nload average (1, 5, 15 min) at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
