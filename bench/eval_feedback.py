"""Query feedback on the vector side, measured against the product on the real-vault questions.

    python bench/eval_feedback.py [--corpora DIR]

Same questions, vaults and metrics as ``bench/eval_real.py`` (which it imports). Rocchio-style
pseudo-relevance feedback: the query's vector moves towards its ``m`` nearest chunks (``q + beta x
their mean``, normalised) and the vector side runs again with it, as a way to find notes worded
unlike the question. Two variants per setting: ``whole`` uses the moved vector for everything
(so the calibrated relevance sees its cosines too), ``order only`` keeps the product's
answer-or-nothing decision and takes only the order from the moved vector.

Prints one line per setting: all questions (recall@1, recall@5, MRR@10, no-answer accuracy),
then recall@1 / recall@5 per vault.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval_real as E  # noqa: E402
from vaultpilot.index import hybrid as H  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.hybrid import Fusion  # noqa: E402

VAULTS = ("kepano-obsidian", "obsidian-tasks-docs")
SETTINGS = [(beta, m) for beta in (0.3, 0.6, 1.0) for m in (1, 3, 5)]


class _Moved:
    """An embedder that answers every query with one given vector."""

    def __init__(self, like: Any, vector: np.ndarray) -> None:
        self.model_name = like.model_name
        self.dimension = like.dimension
        self._vector = vector

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray([self._vector] * len(texts), dtype=np.float32)


@contextmanager
def feedback(beta: float, m: int) -> Iterator[None]:
    """``hybrid_search``'s vector side with the query moved towards its ``m`` nearest chunks."""
    plain = H._vector_side

    def moved(index: Any, embedder: Any, text: str, *rest: Any) -> Any:
        query = embedder.embed([text])[0]
        nearest = np.argsort(-index.scores(query))[:m]
        vector = query + beta * index.matrix[nearest].mean(0)
        return plain(index, _Moved(embedder, vector / np.linalg.norm(vector)), text, *rest)

    H._vector_side = moved  # type: ignore[assignment]
    try:
        yield
    finally:
        H._vector_side = plain


def line(name: str, rows: list[Any]) -> str:
    m = E.metrics(rows)
    per = [E.metrics([r for r in rows if r[0]["vault"] == v]) for v in VAULTS]
    cells = " | ".join(f"{p['recall@1']:.3f} / {p['recall@5']:.3f}" for p in per)
    return (
        f"| {name} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr@10']:.3f} | "
        f"{m['no_answer_accuracy']:.3f} | {cells} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=E.DEFAULT_CORPORA)
    args = parser.parse_args()
    questions = json.loads(E.QUESTIONS.read_text("utf-8"))["questions"]
    missing = [v for v in VAULTS if not (args.corpora / v).is_dir()]
    if missing:
        print(f"skipped: {', '.join(missing)} not in {args.corpora} (pass --corpora DIR)")
        return 0
    embedder = load_default_embedder()
    rows: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="vp-eval-feedback-") as tmp:
        for name in VAULTS:
            vault = E.indexed_copy(args.corpora, name, Path(tmp), embedder)
            asked = [q for q in questions if q["vault"] == name]
            product: Callable[[str], list[str]] = vault.hybrid()
            plain = {q["id"]: product(str(q["question"])) for q in asked}
            rows.setdefault("product ranking (semantic_search)", []).extend(
                (q, plain[q["id"]]) for q in asked
            )
            for beta, m in SETTINGS:
                with feedback(beta, m):
                    whole = {q["id"]: product(str(q["question"])) for q in asked}
                    opened = vault.hybrid(Fusion(threshold=0.0, floor=0.0))
                    order = {q["id"]: opened(str(q["question"])) for q in asked}
                label = f"beta {beta}, {m} nearest chunk{'s' if m > 1 else ''}"
                rows.setdefault(f"{label}, whole", []).extend((q, whole[q["id"]]) for q in asked)
                rows.setdefault(f"{label}, order only", []).extend(
                    (q, order[q["id"]] if plain[q["id"]] else []) for q in asked
                )
            vault.conn.close()
    print("| Setting | recall@1 | recall@5 | MRR@10 | no-answer | " + " | ".join(VAULTS) + " |")
    print("|---|---|---|---|---|---|---|")
    for label, got in rows.items():
        print(line(label, got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
