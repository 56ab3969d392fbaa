"""Embed a whole synthetic vault with the offline model, as ``vaultpilot embed`` does, and time it.

    python bench/bench_embed_vault.py [--notes 10000] [--seed 42] [--threads 2] [--json FILE]

Uses (or generates) ``bench/out/vault-<notes>-<seed>`` from ``bench/synth_vault.py``, indexes it
into a temporary database, then runs ``embed_pending``: chunking, embedding, committing. Reports
the chunk count, real token counts (the model's tokenizer), the time of each phase and chunks/s.
The synthetic vault's made-up words cost ~15% more tokens per character than English prose,
so this is slightly pessimistic for a real vault of the same size.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.semantic import embed_pending  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402


def vault_for(notes: int, seed: int) -> Path:
    path = ROOT / "bench" / "out" / f"vault-{notes}-{seed}"
    if not path.exists():
        from synth_vault import generate

        generate(path, notes, seed=seed)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    vault = vault_for(args.notes, args.seed)
    embedder = load_default_embedder(threads=args.threads)
    with tempfile.TemporaryDirectory(prefix="vp-embed-") as tmp:
        conn = connect(Path(tmp) / "index.db")
        started = time.perf_counter()
        sync_vault(conn, vault)
        synced = time.perf_counter()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.perf_counter()
            if done == 0:
                print(f"chunked in {now - synced:.1f} s; embedding {total} chunks", flush=True)
                first[0] = last[0] = now
            elif now - last[0] > 30 or done == total:
                rate = done / (now - first[0]) if now > first[0] else 0.0
                print(f"  {done}/{total} chunks, {rate:.0f} chunks/s", flush=True)
                last[0] = now

        first = [0.0]
        report = embed_pending(conn, embedder, progress=progress, batch_size=64)
        finished = time.perf_counter()
        texts = [r[0] for r in conn.execute("SELECT text FROM chunks")]
        tokens = embedder.token_counts(texts)
        conn.close()
    embed_seconds = finished - first[0]
    result = {
        "notes": args.notes,
        "chunks": report.chunks,
        "tokens_total": sum(tokens),
        "tokens_mean": round(sum(tokens) / max(len(tokens), 1), 1),
        "truncated_chunks": sum(1 for t in tokens if t >= 256),
        "sync_seconds": round(synced - started, 1),
        "chunk_seconds": round(first[0] - synced, 1),
        "embed_seconds": round(embed_seconds, 1),
        "total_seconds": round(finished - started, 1),
        "chunks_per_second": round(report.chunks / embed_seconds, 1),
        "tokens_per_second": round(sum(tokens) / embed_seconds),
        "threads": args.threads,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
