"""How long ``vaultpilot --help``, a sub-command's help, and one-shot commands on the 1k-note
synthetic vault take end to end, in fresh processes.

    .venv/bin/python bench/bench_cli_startup.py [--runs 20] [--src OTHER/src] [--notes 1000]

Each measurement starts a new interpreter that runs the CLI's ``main`` with the given arguments,
as the ``vaultpilot`` script does; the figures are the median and the 90th percentile of the wall
time. ``--src`` measures another checkout's ``src`` folder the same way (e.g. one exported with
``git archive COMMIT src | tar -x -C /tmp/before``), for a before/after comparison. A bare
``python -c pass`` is measured too: the floor no CLI can go below.

The one-shot commands (``search``, ``backlinks``, ``links``) run on the seeded synthetic vault
(``bench/synth_vault.py``, seed 42, ``--notes`` notes, made in a temporary folder and indexed
once first), as a user runs them: each syncs the index with the vault (nothing changed), then
answers and prints its table.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_vault import generate

SRC = Path(__file__).resolve().parents[1] / "src"
CASES = {
    "python -c pass": None,
    "vaultpilot --help": ["--help"],
    "vaultpilot chat --help": ["chat", "--help"],
    "vaultpilot search --help": ["search", "--help"],
}


def _once(src: Path, args: list[str] | None) -> float:
    if args is None:
        code = "pass"
    else:
        code = (
            f"import sys; sys.path.insert(0, {str(src)!r}); sys.argv = ['vaultpilot', *{args!r}]; "
            "from vaultpilot.cli.main import main; main()"
        )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0,):
        raise SystemExit(f"{args} failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed


def _on_vault(vault: Path, data: Path) -> dict[str, list[str]]:
    where = ["--vault", str(vault), "--data-dir", str(data)]
    note = next(p for p in sorted(vault.rglob("*.md")) if p.stat().st_size > 500)
    name = note.stem
    return {
        "vaultpilot search project": ["search", "project", *where],
        "vaultpilot search (two words)": ["search", "meeting notes", *where],
        f"vaultpilot backlinks {name[:12]}": ["backlinks", name, *where],
        f"vaultpilot links {name[:12]}": ["links", name, *where],
    }


def _measure(src: Path, cases: dict[str, list[str] | None], runs: int) -> None:
    for name, argv in cases.items():
        _once(src, argv)  # warm the file cache
        times = sorted(_once(src, argv) for _ in range(runs))
        p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
        print(f"{name:<34} {statistics.median(times) * 1000:>6.0f}ms {p90 * 1000:>6.0f}ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--src", type=Path, default=SRC, help="the src folder to measure")
    parser.add_argument("--notes", type=int, default=1000, help="0: skip the vault commands")
    args = parser.parse_args()
    print(f"src: {args.src}  runs: {args.runs}")
    print(f"{'command':<34} {'median':>8} {'p90':>8}")
    _measure(args.src, dict(CASES), args.runs)
    if args.notes:
        with tempfile.TemporaryDirectory() as tmp:
            vault, data = Path(tmp) / "vault", Path(tmp) / "data"
            generate(vault, args.notes, seed=42)
            (vault / ".obsidian").mkdir(exist_ok=True)
            index = ["index", "--vault", str(vault), "--data-dir", str(data)]
            try:
                _once(args.src, [*index, "--no-embed"])
            except SystemExit:  # a version from before embedding by default: no such option
                _once(args.src, index)
            _measure(args.src, dict(_on_vault(vault, data)), args.runs)


if __name__ == "__main__":
    main()
