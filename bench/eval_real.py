"""Retrieval evaluation over real public vaults we did not write, with a plain-RRF baseline.

    python bench/eval_real.py [--corpora DIR] [--levers] [--misses] [--json FILE]

Reads ``bench/retrieval_questions_real.json``: questions written as a user would ask, avoiding
each note's title and distinctive words, over vaults kept outside the repository in
``../shared/corpora/<vault>/`` (``--corpora`` or ``$VAULTPILOT_CORPORA`` to move it; when the
folder is missing the evaluation says so and exits 0). Each vault is copied to a temporary
folder, indexed and embedded with the offline model, then every question is asked.

Reported per ranking, over all vaults and per vault:

* recall@1, recall@5: share of answerable questions with an expected note in the top 1 / 5;
* MRR@10: 1 / rank of the first expected note in the top 10 (0 when none), averaged over the
  answerable questions;
* no-answer accuracy: share of the questions with no answer in the vault for which the ranking
  returned nothing.

``baseline: plain RRF`` is the simplest fusion, measured in the same run: note-level FTS5 BM25
(every query word OR-ed, FTS5's default weights) and note-level cosine (each note's title and
text embedded as one text, truncated by the model), reciprocal rank fusion with k=60, top 10,
no threshold. ``semantic_search`` is ``vaultpilot.index.hybrid.hybrid_search`` with its
defaults, as the tool calls it. ``--levers`` also scores every lever tried, one at a time (the
table in docs/benchmarks.md); ``--misses`` prints the questions the product ranking gets wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.embedding.base import Embedder  # noqa: E402
from vaultpilot.index.hybrid import Fusion, hybrid_search  # noqa: E402
from vaultpilot.index.semantic import embed_pending  # noqa: E402
from vaultpilot.index.sync import sync_vault  # noqa: E402
from vaultpilot.index.vectors import VectorCache  # noqa: E402

QUESTIONS = ROOT / "bench" / "retrieval_questions_real.json"
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
Question = dict[str, object]
Ranker = Callable[[str], list[str]]


class Vault:
    """One indexed, embedded copy of a corpus vault, with note-level vectors for the baseline."""

    def __init__(self, conn: sqlite3.Connection, embedder: Embedder) -> None:
        self.conn = conn
        self.embedder = embedder
        self.cache = VectorCache()
        rows = conn.execute(
            "SELECT f.id, f.path, f.title, n.body FROM files f"
            " JOIN notes_fts n ON n.rowid = f.id WHERE f.is_note = 1 ORDER BY f.id"
        ).fetchall()
        self.paths = {int(r[0]): str(r[1]) for r in rows}
        self.ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
        texts = [f"{r[2]}\n\n{r[3] or ''}" for r in rows]
        self.note_vectors = embedder.embed(texts) if texts else np.zeros((0, 384), np.float32)

    def baseline(self, text: str, k: float = 60.0, pool: int = 50) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
        fused: dict[int, float] = {}
        if words:
            match = " OR ".join(f'"{w}"' for w in words)
            rows = self.conn.execute(
                "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ? ORDER BY bm25(notes_fts)"
                " LIMIT ?",
                (match, pool),
            ).fetchall()
            for rank, (fid,) in enumerate(rows, 1):
                fused[int(fid)] = fused.get(int(fid), 0.0) + 1.0 / (k + rank)
        query = self.embedder.embed([text])[0]
        sims = self.note_vectors @ query
        for rank, row in enumerate(np.argsort(-sims)[:pool].tolist(), 1):
            fid = int(self.ids[row])
            fused[fid] = fused.get(fid, 0.0) + 1.0 / (k + rank)
        order = sorted(fused, key=lambda f: (-fused[f], f))[:10]
        return [self.paths[f] for f in order if f in self.paths]

    def hybrid(self, fusion: Fusion | None = None, mode: str = "hybrid") -> Ranker:
        def rank(text: str) -> list[str]:
            result = hybrid_search(
                self.conn,
                text,
                embedder=self.embedder,
                vectors=self.cache,
                limit=10,
                mode=mode,  # type: ignore[arg-type]
                fusion=fusion,
            )
            return [h.path for h in result.hits]

        return rank


def indexed_copy(corpora: Path, name: str, scratch: Path, embedder: Embedder) -> Vault:
    """A copy of corpus vault ``name`` in ``scratch``, indexed and embedded (the caller closes
    ``vault.conn``)."""
    copy = scratch / name
    shutil.copytree(corpora / name, copy, dirs_exist_ok=True)
    conn = connect(scratch / f"{name}.db")
    sync_vault(conn, copy, counts=True)
    embed_pending(conn, embedder)
    return Vault(conn, embedder)


def metrics(rows: list[tuple[Question, list[str]]]) -> dict[str, float]:
    answerable = [(q, r) for q, r in rows if q["expected"]]
    empty = [(q, r) for q, r in rows if not q["expected"]]
    r1 = r5 = rr = 0.0
    for q, ranked in answerable:
        expected = set(q["expected"])  # type: ignore[call-overload]
        first = next((i for i, p in enumerate(ranked[:10], 1) if p in expected), None)
        r1 += first == 1
        r5 += first is not None and first <= 5
        rr += 1.0 / first if first else 0.0
    n = len(answerable) or 1
    return {
        "n": len(rows),
        "answerable": len(answerable),
        "recall@1": r1 / n,
        "recall@5": r5 / n,
        "mrr@10": rr / n,
        "no_answer": len(empty),
        "no_answer_accuracy": sum(1 for _, r in empty if not r) / (len(empty) or 1),
    }


def lever_variants() -> dict[str, Fusion]:
    """Each lever switched on or off alone against the product defaults."""
    base = Fusion()
    return {
        "evidence ranking weight 2 (previous default)": replace(base, evidence=2.0),
        "no threshold (always 10 results)": replace(base, threshold=0.0, floor=0.0),
        "threshold on every hit (no floor below the best)": replace(base, floor=base.threshold),
        "no floor below the best (all top 10 once the best passes)": replace(base, floor=0.0),
        "chunk bonus 0.3 (second matching section)": replace(base, chunk_bonus=0.3),
        "stemmed query words (prefix match)": replace(base, stem=True),
        "blend 50/50 keyword/vector (previous default)": replace(base, keyword=0.5, vector=0.5),
        "blend 30/70 keyword/vector": replace(base, keyword=0.3, vector=0.7),
        "graph pass 0.3": replace(base, graph=0.3),
        "plain RRF k=60 instead of the score blend": replace(
            base, method="rrf", keyword=1.0, vector=1.0
        ),
    }


def table(results: dict[str, dict[str, dict[str, float]]], subset: str) -> str:
    first = next(iter(results.values()))[subset]
    lines = [
        f"| Ranking ({subset}: {first['answerable']} answerable, {first['no_answer']} no-answer)"
        " | recall@1 | recall@5 | MRR@10 | no-answer accuracy |",
        "|---|---|---|---|---|",
    ]
    for name, per in results.items():
        m = per[subset]
        lines.append(
            f"| {name} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr@10']:.3f} "
            f"| {m['no_answer_accuracy']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    default = os.environ.get("VAULTPILOT_CORPORA") or str(DEFAULT_CORPORA)
    parser.add_argument("--corpora", type=Path, default=Path(default))
    parser.add_argument("--levers", action="store_true", help="also score every lever tried")
    parser.add_argument("--misses", action="store_true", help="print the product's misses")
    parser.add_argument("--json", type=Path, default=None, help="write all metrics here")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the indexed copies here",
    )
    args = parser.parse_args(argv)

    spec = json.loads(args.questions.read_text("utf-8"))
    questions: list[Question] = spec["questions"]
    vault_names = sorted({str(q["vault"]) for q in questions})
    missing = [v for v in vault_names if not (args.corpora / v).is_dir()]
    if missing:
        print(
            f"skipped: the evaluation vaults {', '.join(missing)} are not in {args.corpora} "
            "(they are kept outside the repository; see bench/retrieval_questions_real.json "
            "for where each comes from, or pass --corpora DIR)"
        )
        return 0
    embedder = load_default_embedder()
    per_ranker: dict[str, list[tuple[Question, list[str]]]] = {}
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="vp-eval-real-") as scratch:
        tmp = args.workdir or Path(scratch)
        for name in vault_names:
            copy = Path(tmp) / name
            shutil.copytree(args.corpora / name, copy, dirs_exist_ok=True)
            conn = connect(Path(tmp) / f"{name}.db")
            sync = sync_vault(conn, copy, counts=True)
            report = embed_pending(conn, embedder)
            vault = Vault(conn, embedder)
            print(
                f"{name}: {sync.notes} notes, {report.chunks} chunks embedded in "
                f"{report.seconds:.1f} s",
                file=sys.stderr,
            )
            rankers: dict[str, Ranker] = {
                "baseline: plain RRF (note BM25 + note cosine, k=60)": vault.baseline,
                "keyword side alone": vault.hybrid(mode="keyword"),
                "vector side alone": vault.hybrid(mode="vector"),
                "**semantic_search (hybrid, calibrated)**": vault.hybrid(),
            }
            if args.levers:
                for lever, fusion in lever_variants().items():
                    rankers[f"lever: {lever}"] = vault.hybrid(fusion)
            asked = [q for q in questions if q["vault"] == name]
            for label, ranker in rankers.items():
                started = time.perf_counter()
                rows = [(q, ranker(str(q["question"]))) for q in asked]
                timings[label] = timings.get(label, 0.0) + time.perf_counter() - started
                per_ranker.setdefault(label, []).extend(rows)
            conn.close()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for label, rows in per_ranker.items():
        results[label] = {"all": metrics(rows)}
        for name in vault_names:
            results[label][name] = metrics([r for r in rows if r[0]["vault"] == name])
        ms = timings[label] / len(rows) * 1000
        print(f"{label}: {ms:.1f} ms/query", file=sys.stderr)
    for subset in ("all", *vault_names):
        print(table(results, subset))
        print()
    if args.misses:
        product = per_ranker["**semantic_search (hybrid, calibrated)**"]
        for q, ranked in product:
            expected = set(q["expected"])  # type: ignore[call-overload]
            if (expected and (not ranked or ranked[0] not in expected)) or (
                not expected and ranked
            ):
                print(
                    f"{q['id']} {q['question']!r}\n   want {sorted(expected)}\n   got {ranked[:3]}"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
