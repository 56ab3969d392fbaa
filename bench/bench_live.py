"""Live-index benchmark: save to search with the watcher running; no-change and one-change syncs.

    .venv/bin/python bench/bench_live.py --sizes 10000 50000 [--baseline-src DIR] [--no-saves]

For each size the seeded synthetic vault (``bench/synth_vault.py``, in ``bench/out/``) is indexed
once into a scratch database, then:

* **save to search**: a ``LiveIndex`` watches the vault; a note gets a new, unique word appended
  (an in-place write, as Obsidian saves), and a reader connection runs ``search`` for that word
  every 2 ms until it is found. Repeated ``--saves`` times on different notes, each restored
  afterwards (and the restore awaited). Reports p50 / p99 / max.
* **no-change sync** and **one-change sync** (one note edited in place first):
  ``sync_vault`` on an up-to-date index, in a fresh child process each time
  (the cost a one-shot CLI command pays), median of ``--runs`` (5): wall time and the child's
  CPU time (less disturbed by other work on the machine). With ``--baseline-src`` (a ``src``
  folder of another version, e.g. from ``git archive``) the same child also runs against that
  version, alternating with ours run by run, for a before/after in the same run. Both see the
  same index (built by this version; an older version ignores the tables it does not know).

Prints markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from synth_vault import generate  # noqa: E402
from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.search import search  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402
from vaultpilot.index.watch import LiveIndex  # noqa: E402

# A full sync in a fresh process: with "one" a note is first edited in place (and put back and
# synced again afterwards, untimed).
SYNC = r"""
import random, sys, time
from pathlib import Path
from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_vault
vault, conn = Path(sys.argv[1]), connect(Path(sys.argv[2]))
target = text = None
if sys.argv[3] == "one":
    paths = [p for (p,) in conn.execute("SELECT path FROM files WHERE is_note = 1 ORDER BY path")]
    target = vault / random.Random(7).choice(paths)
    text = target.read_text(encoding="utf-8")
    target.write_text(text + "\nEdited line with [[New Link]] #edited\n", encoding="utf-8")
t, c = time.perf_counter(), time.process_time()
report = sync_vault(conn, vault)
print(time.perf_counter() - t, time.process_time() - c)
assert report.parsed == (target is not None), report
if target is not None:
    target.write_text(text, encoding="utf-8")
    sync_vault(conn, vault)
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _sync_once(vault: Path, db: Path, src: Path, mode: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", SYNC, str(vault), str(db), mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def syncs(
    vault: Path, db: Path, srcs: list[Path], runs: int, mode: str
) -> list[tuple[float, float]]:
    """Median (wall ms, CPU ms) of a sync per version in ``srcs``, run alternately; ``mode``
    "none" (nothing changed) or "one" (one note edited in place)."""
    times: list[list[tuple[float, float]]] = [[] for _ in srcs]
    for _ in range(runs):
        for i, src in enumerate(srcs):
            times[i].append(_sync_once(vault, db, src, mode))
    return [
        (statistics.median(w for w, _ in t) * 1000, statistics.median(c for _, c in t) * 1000)
        for t in times
    ]


def _found(conn: object, word: str) -> bool:
    hits, _ = search(conn, word, limit=1)  # type: ignore[arg-type]
    return bool(hits)


def save_to_search(vault: Path, db: Path, saves: int) -> list[float]:
    live = LiveIndex(vault, db)
    status = live.start(wait=600)
    assert status.live, status
    reader = connect(db, read_only=True)
    paths = [p for (p,) in reader.execute("SELECT path FROM files WHERE is_note = 1 ORDER BY path")]
    rng = random.Random(11)
    lat: list[float] = []
    try:
        for i in range(saves):
            note = vault / rng.choice(paths)
            text = note.read_text(encoding="utf-8")
            word = f"zqlive{i}x{rng.randrange(10**9)}"
            t0 = time.perf_counter()
            note.write_text(text + f"\nA new line with {word}.\n", encoding="utf-8")
            while not _found(reader, word):
                if time.perf_counter() - t0 > 30:
                    raise SystemExit(f"{word} not found after 30 s: {live.status()}")
                time.sleep(0.002)
            lat.append(time.perf_counter() - t0)
            note.write_text(text, encoding="utf-8")
            t1 = time.perf_counter()
            while _found(reader, word) and time.perf_counter() - t1 < 30:
                time.sleep(0.002)
            time.sleep(0.1)
    finally:
        live.stop()
        reader.close()
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--saves", type=int, default=30)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5, help="no-change syncs per version")
    ap.add_argument("--no-saves", action="store_true", help="only the no-change sync")
    args = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}", file=sys.stderr)
    rows = []
    one_rows = []
    for n in args.sizes:
        vault = args.out / f"vault-{n}-{args.seed}"
        if not vault.exists():
            generate(vault, n, seed=args.seed)
        db_dir = args.out / f"live-db-{n}"
        shutil.rmtree(db_dir, ignore_errors=True)
        db = db_dir / "index.db"
        conn = connect(db)
        sync_vault(conn, vault)
        conn.close()
        srcs = [ROOT / "src", *([args.baseline_src] if args.baseline_src else [])]
        load = os.getloadavg()[0]
        after, *before = syncs(vault, db, srcs, args.runs, "none")
        one_after, *one_before = syncs(vault, db, srcs, args.runs, "one")
        lat = [] if args.no_saves else save_to_search(vault, db, args.saves)
        rows.append((n, before[0] if before else None, after, lat, load))
        one_rows.append((n, one_before[0] if one_before else None, one_after))
        print(f"{n}: done", file=sys.stderr)
    print(
        "| notes | no-change sync before: wall / CPU | after: wall / CPU | CPU ratio"
        " | load avg | save to search p50 / p99 / max |"
    )
    print("|---|---|---|---|---|---|")
    for n, before, after, lat, load in rows:
        b = f"{before[0]:.0f} / {before[1]:.0f} ms" if before else "n/a"
        ratio = f"{before[1] / after[1]:.2f}x" if before else "n/a"
        saves = (
            f"{pct(lat, 0.5) * 1000:.0f} / {pct(lat, 0.99) * 1000:.0f} / {max(lat) * 1000:.0f} ms"
            if lat
            else "n/a"
        )
        print(
            f"| {n:,} | {b} | {after[0]:.0f} / {after[1]:.0f} ms | {ratio} | {load:.1f} | {saves} |"
        )

    print()
    print("| notes | one-change sync before: wall / CPU | after: wall / CPU | CPU ratio |")
    print("|---|---|---|---|")
    for n, before, after in one_rows:
        b = f"{before[0]:.0f} / {before[1]:.0f} ms" if before else "n/a"
        ratio = f"{before[1] / after[1]:.2f}x" if before else "n/a"
        print(f"| {n:,} | {b} | {after[0]:.0f} / {after[1]:.0f} ms | {ratio} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
