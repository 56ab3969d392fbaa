"""CPU per read tool call in process, as a server's read worker runs it, for two source trees.

    git archive HEAD src | tar -x -C /tmp/before
    .venv/bin/python bench/bench_read_cpu.py --sizes 10000 50000 --trees /tmp/before/src src

For each size, the seeded synthetic vault (``bench/synth_vault.py``; pristine copies kept in
``bench/out/``) is indexed once into ``--db-dir`` (by the first tree). Then, ``--rounds`` times,
each tree in turn runs in its own child process (the tree first on ``sys.path``) on a read-only
connection to that index, never syncing (as a read worker: ``tools.readworker``), through
``registry.run_tool``: the four calls of ``bench/bench_live_server.py``'s mix (read_note,
search_by_metadata, semantic_search, note_with_backlinks), ``--warmup`` calls each and then
``--calls`` timed ones; CPU time of the process (``time.process_time``) per call, in ms. Trees
alternate round by round, so both see the same machine.

``--check`` also has each child write 2,000 tool results (the mix's four calls 200 times each,
then 1,200 semantic searches: 200 queries in both formats with limits 5 / 10 / 20) plus
search_by_metadata in both formats and list_structure, as canonical JSON, one line each, and
the parent reports how many differ between the trees (0 is the goal: a change for speed must
not change a byte of any result).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OPS = ["read_note", "search_by_metadata", "semantic_search", "note_with_backlinks"]


def _context(args: argparse.Namespace) -> Any:
    """A read worker's context on the size's index (built first with ``--build``)."""
    from dataclasses import replace

    from bench_live_server import pristine
    from vaultpilot.index.db import connect
    from vaultpilot.tools.context import open_context
    from vaultpilot.tools.rules import VaultRules
    from vaultpilot.tools.semantic import live

    vault = pristine(args.out, args.size, 42)
    db = Path(args.db_dir) / f"cpu-db-{args.size}" / "index.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    rules = VaultRules()
    ctx = open_context(vault, db, semantic=live(), journal=None, source="server", rules=rules)
    if args.build:
        ctx.fresh(force=True)
    ctx.conn.close()
    return replace(ctx, conn=connect(db, read_only=True), sync_before_read=False)


def _results(ctx: Any, make: dict[str, Any], paths: list[str]) -> list[str]:
    """The tool results ``--check`` compares, one canonical JSON line each."""
    from bench_live_server import TAGS
    from synth_vault import sample_queries
    from vaultpilot.tools.registry import run_tool

    lines: list[str] = []

    def one(name: str, arguments: dict[str, Any]) -> None:
        outcome = run_tool(ctx, name, arguments)
        lines.append(json.dumps([name, arguments, outcome.result], sort_keys=True))

    for op in OPS:
        for i in range(200):
            one(*make[op](i))
    for q in sample_queries(200, seed=42):
        for fmt in ("concise", "detailed"):
            for limit in (5, 10, 20):
                args = {"queryType": "semantic_search", "query": q, "limit": limit}
                one("obsidian_query_vault", {**args, "responseFormat": fmt})
    for tag in TAGS:
        for fmt in ("concise", "detailed"):
            for query_type in ("search_by_metadata", "recent_changes"):
                args = {"queryType": query_type, "filters": {"tags": [tag]}, "limit": 20}
                one("obsidian_query_vault", {**args, "responseFormat": fmt})
    for folder in [*sorted({p.split("/", 1)[0] for p in paths})[:10], ""]:
        one("obsidian_query_vault", {"queryType": "list_structure", "path": folder})
    return lines


def _child(args: argparse.Namespace) -> None:
    src = Path(args.src).resolve()
    sys.path.insert(0, str(src))
    sys.path.insert(1, str(HERE))
    import vaultpilot
    from bench_live_server import calls
    from vaultpilot.tools.registry import run_tool

    assert Path(vaultpilot.__file__).resolve().is_relative_to(src), vaultpilot.__file__
    ctx = _context(args)
    if args.build:
        return
    paths = sorted(r[0] for r in ctx.conn.execute("SELECT path FROM files WHERE is_note = 1"))
    make = calls(paths, 42)
    out: dict[str, Any] = {}
    for op in OPS:
        for i in range(args.warmup):
            run_tool(ctx, *make[op](i))
        t0 = time.process_time()
        for i in range(args.calls):
            run_tool(ctx, *make[op](i))
        out[op] = (time.process_time() - t0) * 1000 / args.calls
    if args.check_file:
        Path(args.check_file).write_text("\n".join(_results(ctx, make, paths)) + "\n")
    print(json.dumps(out))


def _run(tree: str, size: int, args: argparse.Namespace, *, build: bool = False,
         check: str | None = None) -> dict[str, float]:  # fmt: skip
    cmd = [sys.executable, __file__, "--child", "--src", tree, "--size", str(size),
           "--db-dir", str(args.db_dir), "--out", str(args.out), "--calls", str(args.calls),
           "--warmup", str(args.warmup)]  # fmt: skip
    if build:
        cmd.append("--build")
    if check:
        cmd += ["--check-file", check]
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return {} if build else dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000])
    ap.add_argument("--trees", nargs="+", default=["src"], help="src folders, the first is 'after'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--check", action="store_true", help="compare 2,000+ results per size")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--db-dir", type=Path, default=HERE / "out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--src", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--check-file", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    header = "| notes | tree | " + " | ".join(OPS) + " |"
    rows = [header, "|---|---|" + "---|" * len(OPS)]
    for size in args.sizes:
        if not (args.db_dir / f"cpu-db-{size}" / "index.db").exists():
            _run(args.trees[0], size, args, build=True)
        runs: dict[str, list[dict[str, float]]] = {t: [] for t in args.trees}
        for _ in range(args.rounds):
            for tree in args.trees:
                runs[tree].append(_run(tree, size, args))
        for tree in args.trees:
            cells = []
            for op in OPS:
                values = [r[op] for r in runs[tree]]
                cells.append(
                    f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"
                )
            rows.append(f"| {size:,} | {tree} | " + " | ".join(cells) + " |")
        if args.check:
            files = []
            for k, tree in enumerate(args.trees):
                path = args.db_dir / f"cpu-check-{size}-{k}.jsonl"
                _run(tree, size, args, check=str(path))
                files.append(path.read_text().splitlines())
            base = files[-1]
            for k, lines in enumerate(files[:-1]):
                diff = sum(a != b for a, b in zip(lines, base, strict=True))
                digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
                print(f"{size}: {args.trees[k]} vs {args.trees[-1]}: {diff} of {len(base)} "
                      f"results differ (sha256 {digest})")  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print("CPU ms per call, median of rounds (min-max):")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
