"""Retrieval evaluation: keyword-only, vector-only and hybrid ranking over the example vault.

    python bench/eval_retrieval.py [--distractors N] [--sweep] [--json FILE]

Copies ``examples/vault`` to a temporary folder (with ``--distractors N``, also N seeded
synthetic notes from ``bench/synth_vault.py`` in a ``Synthetic/`` folder, so the ranking has
to pick the right note out of many more that share its common words), indexes it, embeds it
with the offline model, and asks every question of ``bench/retrieval_questions.json``.

Reported per ranking, over all questions and per subset:

* recall@5: the share of a question's expected notes found in the top 5, averaged;
* MRR: 1 / the rank of the first expected note in the top 10 (0 when none is), averaged;
* nDCG@10: binary-gain nDCG over the top 10.

Rankings: ``keyword (product)`` is what ``semantic_search`` did before vectors: notes with every
word by BM25, else notes with any word; ``keyword`` is the hybrid's own keyword side (any word,
stop words left out, all-word matches first); ``vector`` and ``hybrid`` as in
``vaultpilot.index.hybrid``. ``--sweep`` also scores fusion variants (the table in
docs/benchmarks.md). Nothing is downloaded; the model must be built (``make install-model``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.embedding.base import Embedder  # noqa: E402
from vaultpilot.index.hybrid import Fusion, hybrid_search  # noqa: E402
from vaultpilot.index.related import similar_notes  # noqa: E402
from vaultpilot.index.search import search, search_any  # noqa: E402
from vaultpilot.index.semantic import embed_pending  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402
from vaultpilot.index.vectors import VectorCache  # noqa: E402

QUESTIONS = ROOT / "bench" / "retrieval_questions.json"
Ranker = Callable[[str], list[str]]


def recall_at(ranked: list[str], expected: set[str], k: int) -> float:
    return len(set(ranked[:k]) & expected) / len(expected)


def reciprocal_rank(ranked: list[str], expected: set[str], k: int = 10) -> float:
    for i, path in enumerate(ranked[:k], 1):
        if path in expected:
            return 1.0 / i
    return 0.0


def ndcg_at(ranked: list[str], expected: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 1) for i, p in enumerate(ranked[:k], 1) if p in expected)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
    return dcg / ideal


def score(ranker: Ranker, questions: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Metrics per subset ("all", "VAULT_NOTES", "ours", "non-english")."""
    rows: list[tuple[dict[str, object], float, float, float]] = []
    for q in questions:
        expected = set(q["expected"])  # type: ignore[call-overload]
        ranked = ranker(str(q["question"]))
        metrics = (
            recall_at(ranked, expected, 5),
            reciprocal_rank(ranked, expected),
            ndcg_at(ranked, expected),
        )
        rows.append((q, *metrics))
    subsets: dict[str, Callable[[dict[str, Any]], bool]] = {
        "all": lambda q: True,
        "VAULT_NOTES": lambda q: q["source"] != "ours",
        "ours": lambda q: q["source"] == "ours",
        "non-english": lambda q: "non-english" in q["tags"],
    }
    out: dict[str, dict[str, float]] = {}
    for name, keep in subsets.items():
        chosen = [r for r in rows if keep(r[0])]
        n = len(chosen) or 1
        out[name] = {
            "n": len(chosen),
            "recall@5": sum(r[1] for r in chosen) / n,
            "mrr": sum(r[2] for r in chosen) / n,
            "ndcg@10": sum(r[3] for r in chosen) / n,
        }
    return out


def build_vault(dest: Path, distractors: int, seed: int) -> Path:
    vault = dest / "vault"
    shutil.copytree(ROOT / "examples" / "vault", vault)
    if distractors:
        from synth_vault import generate

        synth = dest / "synth"
        generate(synth, distractors, seed=seed)
        shutil.move(str(synth), str(vault / "Synthetic"))
    return vault


def product_keyword(conn: object) -> Ranker:
    def rank(text: str) -> list[str]:
        try:
            hits, _ = search(conn, text, limit=10)  # type: ignore[arg-type]
        except Exception:
            hits = []
        if not hits:
            hits, _ = search_any(conn, text, limit=10)  # type: ignore[arg-type]
        return [h.path for h in hits]

    return rank


def hybrid_ranker(
    conn: object, embedder: Embedder, cache: VectorCache, mode: str, fusion: Fusion | None = None
) -> Ranker:
    def rank(text: str) -> list[str]:
        result = hybrid_search(
            conn,  # type: ignore[arg-type]
            text,
            embedder=embedder,
            vectors=cache,
            limit=10,
            mode=mode,  # type: ignore[arg-type]
            fusion=fusion,
        )
        return [h.path for h in result.hits]

    return rank


def link_prediction(conn: object, cache: VectorCache) -> dict[str, dict[str, float]]:
    """How well each similar-text side finds the notes a note links to or from (links hidden):
    recall@5, MRR and nDCG@10 over every note of the example vault with at least one link."""
    rows = conn.execute(  # type: ignore[attr-defined]
        "SELECT s.path, t.path FROM links l JOIN files s ON s.id = l.source_id"
        " JOIN files t ON t.id = l.target_id WHERE t.is_note = 1 AND s.id != t.id"
        " AND s.path NOT LIKE 'Synthetic/%' AND t.path NOT LIKE 'Synthetic/%'"
    ).fetchall()
    neighbours: dict[str, set[str]] = {}
    for a, b in rows:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    out: dict[str, dict[str, float]] = {}
    for name, vectors in (("keyword (title + frequent words)", None), ("keyword + vector", cache)):
        r5 = rr = nd = 0.0
        for path, expected in neighbours.items():
            ranked = [s.path for s in similar_notes(conn, path, vectors=vectors, limit=10)]  # type: ignore[arg-type]
            r5 += recall_at(ranked, expected, 5)
            rr += reciprocal_rank(ranked, expected)
            nd += ndcg_at(ranked, expected)
        n = len(neighbours) or 1
        out[name] = {"n": n, "recall@5": r5 / n, "mrr": rr / n, "ndcg@10": nd / n}
    return out


def sweep_variants() -> dict[str, Fusion]:
    base = Fusion()
    return {
        "RRF k=20": replace(base, k=20.0),
        "RRF k=100": replace(base, k=100.0),
        "RRF keyword weight 1.3": replace(base, keyword=1.3),
        "RRF vector weight 1.3": replace(base, vector=1.3),
        "RRF pool 20": replace(base, pool=20),
        "RRF min similarity 0": replace(base, min_similarity=0.0),
        "RRF min similarity 0.3": replace(base, min_similarity=0.3),
        "RRF + graph 0.1": replace(base, graph=0.1),
        "RRF + graph 0.3": replace(base, graph=0.3),
        "score blend 50/50": replace(base, method="scores", keyword=0.5, vector=0.5),
        "score blend 40/60": replace(base, method="scores", keyword=0.4, vector=0.6),
        "score blend 60/40": replace(base, method="scores", keyword=0.6, vector=0.4),
    }


def table(results: dict[str, dict[str, dict[str, float]]], subset: str) -> str:
    lines = [
        f"| Ranking ({subset}, n={next(iter(results.values()))[subset]['n']}) "
        "| recall@5 | MRR | nDCG@10 |",
        "|---|---|---|---|",
    ]
    for name, metrics in results.items():
        m = metrics[subset]
        lines.append(f"| {name} | {m['recall@5']:.3f} | {m['mrr']:.3f} | {m['ndcg@10']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--distractors", type=int, default=0, help="synthetic notes to add")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--sweep", action="store_true", help="also score fusion variants")
    parser.add_argument("--json", type=Path, default=None, help="write all metrics here")
    parser.add_argument("--max-tokens", type=int, default=None, help="chunk size to evaluate")
    args = parser.parse_args(argv)

    questions = json.loads(args.questions.read_text("utf-8"))["questions"]
    embedder = load_default_embedder()
    with tempfile.TemporaryDirectory(prefix="vp-eval-") as tmp:
        vault = build_vault(Path(tmp), args.distractors, args.seed)
        conn = connect(Path(tmp) / "index.db")
        sync = sync_vault(conn, vault, counts=True)
        sizes = {} if args.max_tokens is None else {"max_tokens": args.max_tokens}
        report = embed_pending(conn, embedder, **sizes)
        print(
            f"vault: {sync.notes} notes ({args.distractors} synthetic); {report.chunks} chunks "
            f"embedded in {report.seconds:.1f} s",
            file=sys.stderr,
        )
        cache = VectorCache()
        rankers: dict[str, Ranker] = {
            "keyword (product before)": product_keyword(conn),
            "keyword": hybrid_ranker(conn, embedder, cache, "keyword"),
            "vector": hybrid_ranker(conn, embedder, cache, "vector"),
            "hybrid": hybrid_ranker(conn, embedder, cache, "hybrid"),
        }
        if args.sweep:
            for name, fusion in sweep_variants().items():
                rankers[f"hybrid: {name}"] = hybrid_ranker(conn, embedder, cache, "hybrid", fusion)
        results: dict[str, dict[str, dict[str, float]]] = {}
        for name, ranker in rankers.items():
            started = time.perf_counter()
            results[name] = score(ranker, questions)
            per_query = (time.perf_counter() - started) / len(questions) * 1000
            print(f"{name}: {per_query:.1f} ms/query", file=sys.stderr)
        links = link_prediction(conn, cache)
        conn.close()
    for subset in ("all", "VAULT_NOTES", "ours", "non-english"):
        print(table(results, subset))
        print()
    print(table({k: {"links": v} for k, v in links.items()}, "links"))
    if args.json:
        payload = {"questions": results, "link_prediction": links}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
