"""Background embedding as the server runs it, and what searches cost while it works.

    python bench/bench_background.py [--notes 2000] [--seed 42] [--every 0.05] [--json FILE]

Indexes the synthetic vault ``bench/out/vault-<notes>-<seed>`` (``bench/synth_vault.py``) into a
temporary database, then starts a ``BackgroundEmbedder`` with the offline model, sharing the
embedder and one ``VectorCache`` with the searches, as ``vaultpilot serve`` does (the cache
keeps a snapshot at least ``--reload-interval`` seconds, 2 in the server). While it
embeds, the main thread, on its own connection, runs a query every ``--every`` seconds,
alternating a keyword search (``index.queries.search``) and a hybrid search
(``index.hybrid.hybrid_search``: embed the query, reload the vectors if a batch was committed,
scan, fuse), from ``synth_vault.sample_queries``. When the pass is over, the same queries run
again on the idle machine. Reported: the pass's time and chunks/s, and p50/p99 of both kinds of
query during and after it, with how many times the vector matrix was reloaded whole and how
many times new rows were appended to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_embed_vault import vault_for  # noqa: E402
from synth_vault import sample_queries  # noqa: E402
from vaultpilot.index.background import BackgroundEmbedder  # noqa: E402
from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.hybrid import hybrid_search  # noqa: E402
from vaultpilot.index.search import search  # noqa: E402
from vaultpilot.index.semantic import embedding_status  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402
from vaultpilot.index.vectors import VectorCache  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 2) if values else 0.0,
        "p99_ms": round(pct(values, 0.99) * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--every", type=float, default=0.05, help="Seconds between queries.")
    parser.add_argument(
        "--reload-interval",
        type=float,
        default=2.0,
        help="VectorCache min_interval, as the server sets it (0: reload on every change).",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    vault = vault_for(args.notes, args.seed)
    embedder = load_default_embedder()
    queries = sample_queries(400, seed=11)
    with tempfile.TemporaryDirectory(prefix="vp-bg-") as tmp:
        db = Path(tmp) / "index.db"
        conn = connect(db)
        sync_vault(conn, vault)
        cache = VectorCache(min_interval=args.reload_interval)
        during: dict[str, list[float]] = {"keyword": [], "hybrid": []}
        after: dict[str, list[float]] = {"keyword": [], "hybrid": []}

        def one(i: int, into: dict[str, list[float]]) -> None:
            text = queries[i % len(queries)]
            t0 = time.perf_counter()
            if i % 2 == 0:
                search(conn, text, limit=10)
                into["keyword"].append(time.perf_counter() - t0)
            else:
                hybrid_search(conn, text, embedder=embedder, vectors=cache, limit=10)
                into["hybrid"].append(time.perf_counter() - t0)

        background = BackgroundEmbedder(db, lambda: embedder, role="bench", debounce=0)
        started = time.perf_counter()
        background.start()
        i = 0
        while True:
            snap = background.progress()
            if snap.state not in ("starting", "embedding"):
                break
            one(i, during)
            i += 1
            time.sleep(args.every)
        seconds = time.perf_counter() - started
        snap = background.progress()
        background.stop()
        loads_during, appends_during = cache.loads, cache.appends
        status = embedding_status(conn)
        for j in range(i):
            one(j, after)
        conn.close()

    result = {
        "notes": args.notes,
        "chunks": status.chunks,
        "state": snap.state,
        "problem": snap.problem,
        "complete": status.complete,
        "embed_seconds": round(seconds, 1),
        "chunks_per_s": round(status.embedded / seconds, 1) if seconds else 0.0,
        "reload_interval": args.reload_interval,
        "matrix_reloads_during": loads_during,
        "matrix_appends_during": appends_during,
        "during": {k: summary(v) for k, v in during.items()},
        "after": {k: summary(v) for k, v in after.items()},
    }
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if status.complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
