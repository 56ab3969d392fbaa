"""How long ``vaultpilot --help`` (and a sub-command's help) takes, in fresh processes.

    .venv/bin/python bench/bench_cli_startup.py [--runs 20] [--src OTHER/src]

Each measurement starts a new interpreter that runs the CLI's ``main`` with the given arguments,
as the ``vaultpilot`` script does; the figures are the median and the 90th percentile of the wall
time. ``--src`` measures another checkout's ``src`` folder the same way (e.g. one exported with
``git archive COMMIT src | tar -x -C /tmp/before``), for a before/after comparison. A bare
``python -c pass`` is measured too: the floor no CLI can go below.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--src", type=Path, default=SRC, help="the src folder to measure")
    args = parser.parse_args()
    print(f"src: {args.src}  runs: {args.runs}")
    print(f"{'command':<28} {'median':>8} {'p90':>8}")
    for name, argv in CASES.items():
        _once(args.src, argv)  # warm the file cache
        times = sorted(_once(args.src, argv) for _ in range(args.runs))
        p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
        print(f"{name:<28} {statistics.median(times) * 1000:>6.0f}ms {p90 * 1000:>6.0f}ms")


if __name__ == "__main__":
    main()
