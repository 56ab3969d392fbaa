"""CPU per /rpc call of the [approvals] check (``ApprovalBroker.hold_to_rules``), cached against
the old code, alternating in one process.

    .venv/bin/python bench/bench_rules_check.py --calls 200000 --rounds 5

"old": ``rules.current().configured()`` on every call (a stat of the config file and a new
policy). "cached": ``ApprovalBroker.configured_policy`` (the stat, and the policy made again only
when the file was read again). "hold": the whole ``hold_to_rules`` coroutine for a read
(obsidian_get_context) no rule binds, as /rpc awaits it. "stat": the config file's stat alone,
for scale. Each is run with a config file that sets a rule for another tool (so the check goes on
to decide) and with no file.
Figures are CPU microseconds per call (``time.process_time``), the median of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultpilot.agent.approvals import Approvals
from vaultpilot.configfile import file_stamp
from vaultpilot.server.approvals import ApprovalBroker
from vaultpilot.server.ws import Hub


def _per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1e6


def _hold_per_call(broker: ApprovalBroker, rules: Approvals, calls: int) -> float:
    async def go() -> float:
        args = {"contextType": "read_note", "target": "a.md"}
        no_vault: Any = None  # not reached: no rule asks for a dry run of this call
        start = time.process_time()
        for _ in range(calls):
            await broker.hold_to_rules(
                rules,
                no_vault,
                "obsidian_get_context",
                args,
                asker=None,
                timeout=1,
            )
        return (time.process_time() - start) / calls * 1e6

    return asyncio.run(go())


def run(config: Path | None, calls: int, rounds: int) -> dict[str, float]:
    rules = Approvals.read(config)
    broker = ApprovalBroker(Hub())
    found: dict[str, list[float]] = {"old": [], "cached": [], "hold": [], "stat": []}
    for _ in range(rounds):  # alternate, so load changes hit both alike
        found["old"].append(_per_call(lambda: any(rules.current().configured().over), calls))
        found["cached"].append(_per_call(lambda: any(broker.configured_policy(rules).over), calls))
        found["hold"].append(_hold_per_call(broker, rules, calls // 4))
        found["stat"].append(_per_call(lambda: file_stamp(config), calls))
    return {name: statistics.median(values) for name, values in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text('[approvals]\n"obsidian_agent" = "ask"\n', encoding="utf-8")
        print("| config file | old µs | cached µs | old / cached | hold_to_rules µs | stat µs |")
        print("|---|---|---|---|---|---|")
        for label, path in (("a rule for another tool", config), ("none", None)):
            r = run(path, args.calls, args.rounds)
            print(
                f"| {label} | {r['old']:.2f} | {r['cached']:.2f} | "
                f"{r['old'] / r['cached']:.2f}x | {r['hold']:.2f} | {r['stat']:.2f} |"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
