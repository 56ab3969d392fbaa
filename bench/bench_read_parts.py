"""CPU per call of the parts of a read that ``bench_read_cpu.py`` times whole, for two trees in
one process: this tree's functions against the same functions of ``--base`` (loaded from its
files, so each runs with this tree's other modules), alternating, on the index that
``bench_read_cpu.py`` built.

    git archive HEAD~3 src | tar -x -C /tmp/before
    .venv/bin/python bench/bench_read_cpu.py --sizes 50000 --rounds 1   # builds the index
    .venv/bin/python bench/bench_read_parts.py --size 50000 --base /tmp/before/src

Parts: ``lookup.note_facts`` / ``note_bodies`` / ``note_outlines`` for the pages of
search_by_metadata (the benchmark's seven tags), ``notes.excerpt_of`` per note and
``notes.around_match`` per search hit (the 200 benchmark queries' hits),
``notes.note_infos`` for a metadata page (detailed and concise), ``hybrid.hybrid_search``
(keyword side, no vectors) and ``metadata.page_notes``. Each pair must give the same answers
(checked first); prints microseconds of CPU per call, the median of ``--rounds``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_live_server import TAGS  # noqa: E402
from synth_vault import sample_queries  # noqa: E402
from vaultpilot.index import hybrid, lookup, metadata  # noqa: E402
from vaultpilot.index.db import connect  # noqa: E402
from vaultpilot.index.metadata import NoteFilter  # noqa: E402
from vaultpilot.tools import notes  # noqa: E402
from vaultpilot.tools.context import open_context  # noqa: E402
from vaultpilot.tools.rules import VaultRules  # noqa: E402

Call = Callable[[int], Any]


def _load(base: Path, rel: str) -> ModuleType:
    name = "base_" + rel.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, base / "vaultpilot" / rel)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _cpu(f: Call, reps: int) -> float:
    t0 = time.process_time()
    for i in range(reps):
        f(i)
    return (time.process_time() - t0) * 1e6 / reps


def _pair(label: str, new: Call, old: Call, *, reps: int, rounds: int) -> None:
    for i in range(50):
        assert repr(new(i)) == repr(old(i)), f"{label}: the two trees differ"
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):  # alternating, so both see the same machine
        a.append(_cpu(new, reps))
        b.append(_cpu(old, reps))
    a.sort()
    b.sort()
    print(f"| {label} | {a[rounds // 2]:.1f} | {b[rounds // 2]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=50000)
    ap.add_argument("--base", type=Path, required=True, help="the src folder of the tree before")
    ap.add_argument("--db-dir", type=Path, default=HERE / "out")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    vault = HERE / "out" / f"vault-{args.size}-42"
    db = args.db_dir / f"cpu-db-{args.size}" / "index.db"
    ctx = open_context(vault, db, journal=None, source="server", rules=VaultRules())
    ctx.conn.close()
    ctx = replace(ctx, conn=connect(db, read_only=True), sync_before_read=False)
    conn = ctx.conn
    old_lookup = _load(args.base, "index/lookup.py")
    old_notes = _load(args.base, "tools/notes.py")
    old_hybrid = _load(args.base, "index/hybrid.py")
    old_metadata = _load(args.base, "index/metadata.py")
    pages = [
        metadata.page_notes(conn, NoteFilter(tags=(t,)), limit=10, count_up_to=500).paths
        for t in TAGS
    ]
    queries = sample_queries(200, seed=42)
    hits = [
        h for q in queries for h in hybrid.hybrid_search(conn, q, embedder=None, vectors=None).hits
    ]
    bodies = lookup.note_bodies(conn, [h.path for h in hits], chars=200_000)
    found = [(bodies[h.path], h.snippet) for h in hits if h.path in bodies]
    starts = lookup.note_bodies(conn, [p for page in pages for p in page], chars=900)
    facts = lookup.note_facts(conn, list(starts))
    titled = [(body, facts[p].title) for p, body in starts.items()]

    def page(i: int) -> list[str]:
        return pages[i % len(pages)]

    def search(module: Any) -> Call:
        return lambda i: (
            module.hybrid_search(conn, queries[i % 200], embedder=None, vectors=None).hits
        )

    def page_of(module: Any) -> Call:
        return lambda i: module.page_notes(
            conn, NoteFilter(tags=(TAGS[i % 7],)), limit=10, count_up_to=500
        )

    def infos(module: Any, *, detailed: bool = True) -> Call:
        return lambda i: module.note_infos(ctx, [(p, 1.0) for p in page(i)], detailed=detailed)

    print(f"{args.size:,} notes; µs of CPU per call, median of {args.rounds} (this tree | base)")
    print("| part | after | before |\n|---|---|---|")
    r = args.rounds
    for name in ("note_facts", "note_outlines"):
        new_f, old_f = getattr(lookup, name), getattr(old_lookup, name)
        _pair(name, lambda i, f=new_f: f(conn, page(i)), lambda i, f=old_f: f(conn, page(i)),
              reps=400, rounds=r)  # fmt: skip
    for chars in (900, 200_000):
        _pair(f"note_bodies (chars={chars:,})",
              lambda i, c=chars: lookup.note_bodies(conn, page(i), chars=c),
              lambda i, c=chars: old_lookup.note_bodies(conn, page(i), chars=c),
              reps=400, rounds=r)  # fmt: skip
    n_titled, n_found = len(titled), len(found)
    _pair("excerpt_of, a note", lambda i: notes.excerpt_of(*titled[i % n_titled]),
          lambda i: old_notes.excerpt_of(*titled[i % n_titled]), reps=2000, rounds=r)  # fmt: skip
    _pair("around_match, a hit", lambda i: notes.around_match(*found[i % n_found]),
          lambda i: old_notes.around_match(*found[i % n_found]), reps=2000, rounds=r)  # fmt: skip
    _pair("note_infos, a metadata page (notes.py alone)", infos(notes), infos(old_notes),
          reps=400, rounds=r)  # fmt: skip
    _pair("note_infos, concise", infos(notes, detailed=False), infos(old_notes, detailed=False),
          reps=400, rounds=r)  # fmt: skip
    _pair("hybrid_search, no vectors", search(hybrid), search(old_hybrid), reps=200, rounds=r)
    _pair("page_notes, one tag", page_of(metadata), page_of(old_metadata), reps=400, rounds=r)


if __name__ == "__main__":
    main()
