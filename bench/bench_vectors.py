"""Query latency of semantic search on 50k chunks: embed the query, scan, fuse.

    python bench/bench_vectors.py [--chunks 50000] [--notes 12600] [--passes 3] [--json FILE]

Two measurements, each over the 93 evaluation questions plus 107 keyword queries from
``synth_vault.sample_queries`` (200 queries), repeated ``--passes`` times; the best pass of each
statistic is reported (the machine is shared):

1. **Vector path** (the issue's target): ``--chunks`` unit vectors (384-d, seeded random, four
   chunks per note) held in a ``VectorIndex``; per query: embed it with the offline model, find
   the best 50 notes, fuse them by RRF with a 50-note keyword list. Reported per phase.
2. **End to end**: ``hybrid_search`` on a real index of a synthetic vault of ``--notes`` notes
   (about ``--chunks`` chunks), with BM25 over ``notes_fts``, the staleness check of the
   ``VectorCache``, fusion and snippets. Chunk vectors are seeded random rows recorded under the
   real model's name (embedding 50k chunks would take ~10 minutes and does not change a scan).
   Also reported: the cold load of the matrix from SQLite, and the ``obsidian_query_vault``
   tool's semantic_search as the server calls it (one context with a ``Semantic``), with and
   without the sync of the vault that precedes every tool call.

sqlite-vec is measured only if the stdlib ``sqlite3`` can load extensions (it cannot here).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.hybrid import hybrid_search  # noqa: E402
from vaultpilot.index.semantic import chunk_pending_notes  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402
from vaultpilot.index.vectors import (  # noqa: E402
    ModelInfo,
    VectorCache,
    VectorIndex,
    bump_generation,
    record_model,
    store_vectors,
)
from vaultpilot.tools import call_tool, open_context  # noqa: E402
from vaultpilot.tools.context import ToolContext  # noqa: E402
from vaultpilot.tools.semantic import Semantic  # noqa: E402

DIM = 384


def queries() -> list[str]:
    from synth_vault import sample_queries

    questions = json.loads((ROOT / "bench" / "retrieval_questions.json").read_text("utf-8"))
    texts = [q["question"] for q in questions["questions"]]
    return texts + sample_queries(200 - len(texts), seed=7)


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50_ms": statistics.median(ordered) * 1000, "p99_ms": p99 * 1000}


def best_of(passes: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(min(p[k] for p in passes), 2) for k in passes[0]}


def vector_path(chunks: int, passes: int, texts: list[str]) -> dict[str, dict[str, float]]:
    embedder = load_default_embedder()
    embedder.embed(["warm up"])
    index = VectorIndex(
        ModelInfo(embedder.model_name, DIM),
        unit_rows(chunks, 1),
        np.arange(1, chunks + 1, dtype=np.int64),
        np.arange(chunks, dtype=np.int64) // 4 + 1,
    )
    rng = np.random.default_rng(2)
    keyword_lists = [rng.choice(chunks // 4, 50, replace=False).tolist() for _ in texts]
    phases: dict[str, list[dict[str, float]]] = {"embed": [], "scan": [], "fuse": [], "total": []}
    for _ in range(passes):
        times: dict[str, list[float]] = {k: [] for k in phases}
        for text, keyword in zip(texts, keyword_lists, strict=True):
            t0 = time.perf_counter()
            query = embedder.embed([text])[0]
            t1 = time.perf_counter()
            matches = index.best_per_note(query, limit=50)
            t2 = time.perf_counter()
            fused: dict[int, float] = {}
            for ranked in (keyword, [m.file_id for m in matches]):
                for rank, fid in enumerate(ranked, 1):
                    fused[fid] = fused.get(fid, 0.0) + 1.0 / (60 + rank)
            sorted(fused, key=lambda f: -fused[f])[:10]
            t3 = time.perf_counter()
            for key, seconds in (("embed", t1 - t0), ("scan", t2 - t1), ("fuse", t3 - t2)):
                times[key].append(seconds)
            times["total"].append(t3 - t0)
        for key, runs in phases.items():
            runs.append(percentiles(times[key]))
    return {key: best_of(runs) for key, runs in phases.items()}


def build_db(notes: int, seed: int, model: ModelInfo) -> Path:
    from bench_embed_vault import vault_for

    folder = ROOT / "bench" / "out" / f"vectors-{notes}-{seed}"
    db = folder / "index.db"
    if db.exists():
        conn = connect(db)
        sync_vault(conn, vault_for(notes, seed))  # an index of other parse rules is rebuilt here
        kept = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        conn.close()
        if kept:
            return db
        for leftover in folder.glob("index.db*"):  # rebuilt without its vectors: make it again
            leftover.unlink()
    vault = vault_for(notes, seed)
    conn = connect(db)
    sync_vault(conn, vault)
    chunk_pending_notes(conn)
    hashes = [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunks ORDER BY 1")]
    rows = unit_rows(len(hashes), 3)
    conn.execute("BEGIN IMMEDIATE")
    record_model(conn, model)
    store_vectors(conn, zip(hashes, rows, strict=True))
    bump_generation(conn)
    conn.execute("COMMIT")
    conn.close()
    return db


def end_to_end(notes: int, seed: int, passes: int, texts: list[str]) -> dict[str, object]:
    embedder = load_default_embedder()
    from bench_embed_vault import vault_for

    db = build_db(notes, seed, ModelInfo(embedder.model_name, DIM))
    conn = connect(db)
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    loads = []
    for _ in range(passes):
        t0 = time.perf_counter()
        VectorCache().get(conn)
        loads.append(time.perf_counter() - t0)
    cache = VectorCache()
    cache.get(conn)

    def run(call: Callable[[str], object]) -> dict[str, float]:
        runs = []
        for _ in range(passes):
            samples = []
            for text in texts:
                t0 = time.perf_counter()
                call(text)
                samples.append(time.perf_counter() - t0)
            runs.append(percentiles(samples))
        return best_of(runs)

    hybrid = run(lambda t: hybrid_search(conn, t, embedder=embedder, vectors=cache, limit=10))
    keyword = run(lambda t: hybrid_search(conn, t, embedder=None, vectors=None, mode="keyword"))
    conn.close()

    # The tool as the server calls it: one context per vault with a ``Semantic`` (hybrid
    # ranker, shared vector cache), ``obsidian_query_vault`` semantic_search with 10 results;
    # once with the sync-before-read of every tool call, once without it (the ranking alone).
    tools: dict[str, dict[str, float]] = {}
    call = {"queryType": "semantic_search", "limit": 10}
    for label, sync in (("tool_with_sync", True), ("tool_no_sync", False)):
        ctx = open_context(
            vault_for(notes, seed),
            db,
            semantic=Semantic(load=lambda: embedder),
            sync_before_read=sync,
        )
        call_tool(ctx, "obsidian_query_vault", {**call, "query": "warm up"})

        def ask(text: str, ctx: ToolContext = ctx) -> object:
            return call_tool(ctx, "obsidian_query_vault", {**call, "query": text})

        tools[label] = run(ask)
        ctx.conn.close()
    return {
        "notes": notes,
        "chunks": chunks,
        "cold_load_ms": round(min(loads) * 1000, 1),
        "hybrid_search": hybrid,
        "keyword_side_only": keyword,
        **tools,
    }


def sqlite_vec_status() -> str:
    conn = sqlite3.connect(":memory:")
    if not hasattr(conn, "enable_load_extension"):
        return "not measured: this Python's sqlite3 is built without extension loading"
    return "extension loading available; install sqlite-vec to measure it"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--notes", type=int, default=12_600)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    texts = queries()
    result = {
        "queries": len(texts),
        "vector_path": vector_path(args.chunks, args.passes, texts),
        "end_to_end": end_to_end(args.notes, args.seed, args.passes, texts),
        "sqlite_vec": sqlite_vec_status(),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
