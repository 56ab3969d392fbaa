"""Contract benchmark: agent round trips and the import cost on obsidian_agent's path.

    .venv/bin/python bench/bench_contract.py --runs 30

Each round trip is a fresh child process (``python -m vaultpilot.contract.obsidian_agent``, as
the orchestrator starts it): spawn, read the ActionRequest on stdin, do the action, write the
ActionResponse, exit. Timed from spawn to exit by the parent. Target: obsidian_agent read_note
median <= 150 ms. Import cost comes from ``python -X importtime`` (median of 5 runs), and the
script checks that pydantic, typer and rich stay off obsidian_agent's path. Prints markdown tables
to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

HEAVY = ("pydantic", "pydantic_core", "typer", "rich", "click")


def request(tool: str, action: str, payload: dict[str, object]) -> bytes:
    return json.dumps(
        {
            "request_id": str(uuid.uuid4()),
            "correlation_id": str(uuid.uuid4()),
            "tool": tool,
            "action": action,
            "payload": payload,
        }
    ).encode()


def timed(argv: list[str], stdin: bytes, *, cwd: Path, env: dict[str, str]) -> float:
    """Milliseconds from spawn to exit; an agent must answer with code 0."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd, env=env, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or (stdin and json.loads(done.stdout)["code"] != 0):
        raise SystemExit(f"{argv} failed: {done.stdout[-300:]!r} {done.stderr[-300:]!r}")
    return elapsed


def series(label: str, make: Callable[[int], float], runs: int) -> tuple[str, list[float]]:
    return label, [make(i) for i in range(runs)]


def import_profile(
    module: str, env: dict[str, str]
) -> tuple[float, list[tuple[str, int]], set[str]]:
    """(median cumulative ms, heaviest direct imports, top-level packages imported)."""
    totals: list[float] = []
    heaviest: list[tuple[str, int]] = []
    packages: set[str] = set()
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        rows: list[tuple[str, int, int]] = []  # (name, depth, cumulative µs)
        for line in done.stderr.splitlines():
            parts = line.removeprefix("import time:").split("|")
            if len(parts) != 3 or not parts[1].strip().isdigit():
                continue
            depth = (len(parts[2]) - len(parts[2].lstrip()) - 1) // 2
            name = parts[2].strip()
            rows.append((name, depth, int(parts[1])))
            packages.add(name.split(".")[0])
        totals.append(next(c for n, d, c in rows if n == module) / 1000)
        direct = [(n, c) for n, d, c in rows if d == 1]
        heaviest = sorted(direct, key=lambda r: -r[1])[:6]
    return statistics.median(totals), heaviest, packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    runs: int = args.runs

    work = Path(tempfile.mkdtemp(prefix="vp-bench-contract-"))
    try:
        run(work, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(work: Path, runs: int) -> None:
    vault = work / "vault"
    (vault / "Projects").mkdir(parents=True)
    note = "# Plan\n\n" + "".join(f"- [ ] task {i} with [[Link {i}]] #tag\n" for i in range(60))
    (vault / "Projects" / "Plan.md").write_text(note, encoding="utf-8")
    repo = work / "repo"
    repo.mkdir()
    env = {**os.environ, "VAULTPILOT_DATA_DIR": str(work / "data"), "LC_ALL": "C"}
    git_env = {**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for cmd in (
        ["init", "-q", "-b", "main"],
        [
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ):
        subprocess.run(["git", *cmd], cwd=repo, env=git_env, check=True)

    py = sys.executable
    obsidian = [py, "-m", "vaultpilot.contract.obsidian_agent"]
    git_agent = [py, "-m", "vaultpilot.contract.git_agent"]
    read = request(
        "obsidian_agent", "read_note", {"vault_path": str(vault), "note_name": "Projects/Plan"}
    )

    def create(i: int) -> float:
        payload = {"vault_path": str(vault), "note_name": f"New/Note {i}", "content": note}
        return timed(obsidian, request("obsidian_agent", "create_note", payload), cwd=work, env=env)

    rows = [
        series(
            "python -c pass (interpreter start)",
            lambda i: timed([py, "-c", "pass"], b"", cwd=work, env=env),
            runs,
        ),
        series(
            "obsidian_agent read_note", lambda i: timed(obsidian, read, cwd=work, env=env), runs
        ),
        series("obsidian_agent create_note", create, runs),
        series(
            "git_agent git_status (registers itself too)",
            lambda i: timed(
                git_agent, request("git_agent", "git_status", {}), cwd=repo, env=git_env
            ),
            runs,
        ),
    ]

    print(f"\nRound trips, {runs} runs each (ms, spawn to exit)\n")
    print("| Path | median | p90 | min |")
    print("|---|---:|---:|---:|")
    for label, samples in rows:
        ordered = sorted(samples)
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        print(f"| {label} | {statistics.median(samples):.1f} | {p90:.1f} | {ordered[0]:.1f} |")

    print("\nImport time (python -X importtime, cumulative ms, median of 5)\n")
    print("| Module | import ms | pydantic/typer/rich imported? | heaviest imports (ms) |")
    print("|---|---:|---|---|")
    for module in ("vaultpilot.contract.obsidian_agent", "vaultpilot.contract.git_agent"):
        total, heaviest, packages = import_profile(module, env)
        heavy = sorted(packages & set(HEAVY))
        top = ", ".join(f"{n} {c / 1000:.1f}" for n, c in heaviest[:4])
        print(f"| {module} | {total:.1f} | {', '.join(heavy) or 'no'} | {top} |")
        if module.endswith("obsidian_agent") and heavy:
            raise SystemExit(f"obsidian_agent's path imports {heavy}: keep it stdlib-only")

    median_read = statistics.median(rows[1][1])
    verdict = "meets" if median_read <= 150 else "MISSES"
    print(f"\nobsidian_agent read_note median {median_read:.1f} ms {verdict} the 150 ms target.")


if __name__ == "__main__":
    main()
