"""Fit the calibrated relevance of ``vaultpilot.index.hybrid`` and choose its threshold.

    python bench/calibrate_relevance.py [--corpora DIR] [--workdir DIR]

For every question of ``bench/retrieval_questions_real.json`` the top 20 candidates of
``hybrid_search`` (no threshold) are taken with their evidence: the cosine of the note's best
chunk, and the idf-weighted share of the query's words the note holds anywhere and in its title
or aliases. A candidate is positive when it is an expected note of its question; every candidate
of a question with no answer is negative. Two logistic models are fitted (Newton's method, a
little L2): one with the cosine, one without it (notes not embedded yet). The threshold is the
lowest of ``THRESHOLDS`` at which at least 80% of the questions with no answer get none; it is
applied as ``hybrid_search`` does, to each question's best note only (a note holding half the
query's idf weight always passes), the notes below the best kept down to the floor. The script
prints the constants with the bias shifted so that 0.5 is that threshold, and recall@1,
recall@5, MRR@10 and the no-answer accuracy for each threshold; ``--folds`` also fits and
chooses the threshold on one vault and scores the other, to see how far the fit carries to
questions and a vault it has not seen. Paste the printed constants into ``hybrid.py``
(``_WITH_VECTOR``, ``_KEYWORDS_ONLY``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_real import DEFAULT_CORPORA, QUESTIONS, Vault
from vaultpilot.index.db import connect
from vaultpilot.index.embedding import load_default_embedder
from vaultpilot.index.hybrid import Fusion, hybrid_search
from vaultpilot.index.semantic import embed_pending
from vaultpilot.index.sync import sync_vault

Array = npt.NDArray[np.float64]
THRESHOLDS = (0.0, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3)
NO_ANSWER_TARGET = 0.8  # share of the questions without an answer that must get none
FLOOR = 0.05  # hybrid.RELEVANCE_FLOOR
HELD_ENOUGH = 0.5  # hybrid._HELD_ENOUGH: a note holding this much of the query always passes
# question id, vault, expected paths, candidates (path, cosine, words held, words in title)
Row = tuple[str, str, list[str], list[tuple[str, float, float, float]]]


def fit(x: Array, y: Array, l2: float = 0.01) -> Array:
    """Logistic regression weights (bias first) by Newton's method."""
    xb = np.hstack([np.ones((x.shape[0], 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + l2 * np.r_[0.0, w[1:]]
        hess = (xb.T * (p * (1 - p))) @ xb + l2 * np.diag(np.r_[0.0, np.ones(len(w) - 1)])
        w -= np.linalg.solve(hess, grad)
    return w


def features(rows: list[Row], vector: bool) -> tuple[Array, Array]:
    xs: list[list[float]] = []
    ys: list[float] = []
    for _, _, expected, cands in rows:
        for path, cosine, held, in_title in cands:
            xs.append([cosine, held, in_title] if vector else [held, in_title])
            ys.append(1.0 if path in expected else 0.0)
    return np.array(xs), np.array(ys)


def score(rows: list[Row], w: Array, threshold: float, floor: float = FLOOR) -> dict[str, float]:
    """The metrics ``hybrid_search`` gets with weights ``w`` and ``threshold``: a question is
    answered when its best note reaches the threshold (or holds half the query's idf weight);
    then its notes are returned down to ``floor`` on the shifted scale (0.5 = threshold)."""
    r1 = r5 = rr = 0.0
    answerable = empty = right_empty = 0
    shift = math.log(threshold / (1 - threshold)) if 0 < threshold < 1 else 0.0
    for _, _, expected, cands in rows:
        probs = [
            1.0 / (1.0 + math.exp(-(w[0] + w[1] * cos + w[2] * held + w[3] * title - shift)))
            for _, cos, held, title in cands
        ]
        passed = threshold <= 0 or any(
            p >= 0.5 or held >= HELD_ENOUGH for p, (_, _, held, _) in zip(probs, cands, strict=True)
        )
        kept = [
            path
            for p, (path, _, held, _) in zip(probs, cands, strict=True)
            if passed and (threshold <= 0 or p >= floor or held >= HELD_ENOUGH)
        ][:10]
        if not expected:
            empty += 1
            right_empty += not kept
            continue
        answerable += 1
        first = next((i for i, p in enumerate(kept, 1) if p in expected), None)
        r1 += first == 1
        r5 += first is not None and first <= 5
        rr += 1.0 / first if first else 0.0
    n = answerable or 1
    return {
        "recall@1": r1 / n,
        "recall@5": r5 / n,
        "mrr@10": rr / n,
        "no_answer": right_empty / (empty or 1),
    }


def choose_threshold(rows: list[Row], w: Array, target: float = NO_ANSWER_TARGET) -> float:
    """The lowest threshold of ``THRESHOLDS`` whose no-answer accuracy reaches ``target`` (the
    lowest keeps the most right answers), or the highest when none does."""
    for t in THRESHOLDS:
        if t > 0 and score(rows, w, t)["no_answer"] >= target:
            return t
    return THRESHOLDS[-1]


def collect(corpora: Path, workdir: Path | None) -> list[Row]:
    spec = json.loads(QUESTIONS.read_text("utf-8"))
    questions = spec["questions"]
    embedder = load_default_embedder()
    rows: list[Row] = []
    open_all = Fusion()
    open_all = replace(open_all, threshold=0.0)
    with tempfile.TemporaryDirectory(prefix="vp-calibrate-") as scratch:
        tmp = workdir or Path(scratch)
        for name in sorted({q["vault"] for q in questions}):
            copy = tmp / name
            shutil.copytree(corpora / name, copy, dirs_exist_ok=True)
            conn = connect(tmp / f"{name}.db")
            sync_vault(conn, copy)
            embed_pending(conn, embedder)
            vault = Vault(conn, embedder)
            for q in (q for q in questions if q["vault"] == name):
                result = hybrid_search(
                    conn,
                    q["question"],
                    embedder=embedder,
                    vectors=vault.cache,
                    limit=20,
                    fusion=open_all,
                )
                cands = [(h.path, h.vector_score or 0.0, h.held, h.in_title) for h in result.hits]
                rows.append((q["id"], name, q["expected"], cands))
            conn.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--folds", action="store_true", help="fit on one vault, score the other")
    args = parser.parse_args(argv)
    if not args.corpora.is_dir():
        print(f"skipped: no evaluation vaults in {args.corpora}")
        return 0
    rows = collect(args.corpora, args.workdir)
    w = fit(*features(rows, vector=True))
    wk = fit(*features(rows, vector=False))
    chosen = choose_threshold(rows, w)
    shift = math.log(chosen / (1 - chosen))
    print(f"fitted on all {len(rows)} questions; threshold {chosen} (the lowest with no-answer")
    print(f"accuracy >= {NO_ANSWER_TARGET}); constants with the bias shifted so 0.5 is it:")
    print(f"_WITH_VECTOR = ({w[0] - shift:.2f}, {w[1]:.2f}, {w[2]:.2f}, {w[3]:.2f})")
    print(f"_KEYWORDS_ONLY = ({wk[0] - shift:.2f}, {wk[1]:.2f}, {wk[2]:.2f})")
    print("| threshold | recall@1 | recall@5 | MRR@10 | no-answer accuracy |")
    print("|---|---|---|---|---|")
    for t in THRESHOLDS:
        m = score(rows, w, t)
        print(
            f"| {t:.2f} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr@10']:.3f} "
            f"| {m['no_answer']:.3f} |"
        )
    if args.folds:
        # Fit and choose the threshold on one vault's questions, score the other's: how far
        # the calibration carries to questions and a vault it has not seen.
        print("| fitted on | scored on | threshold | recall@1 | recall@5 | MRR@10 | no-answer |")
        print("|---|---|---|---|---|---|---|")
        for held_out in sorted({r[1] for r in rows}):
            train = [r for r in rows if r[1] != held_out]
            test = [r for r in rows if r[1] == held_out]
            wf = fit(*features(train, vector=True))
            tf = choose_threshold(train, wf)
            m = score(test, wf, tf)
            print(
                f"| {train[0][1]} | {held_out} | {tf} | {m['recall@1']:.3f} | "
                f"{m['recall@5']:.3f} | {m['mrr@10']:.3f} | {m['no_answer']:.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
