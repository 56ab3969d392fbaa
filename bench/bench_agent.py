"""Agent loop benchmarks: loop overhead per step, and the size of the prompt plus tool schemas.

    .venv/bin/python bench/bench_agent.py [--steps 200] [--runs 5]

1. Loop overhead per step, excluding model and tool time: an in-process model client that answers
   instantly (each turn one tool call, already assembled) and a tool that returns at once, so what
   is timed is the loop itself: events, queue hand-offs, argument parsing, policy, version
   tracking, the worker-thread hop and history building. Reported without and with conversation
   recording in memory.db, and (for context) per step over real HTTP with the scripted server and
   the openai SDK.
2. System prompt plus tool schemas in tokens: counted with the o200k_base tokenizer when the
   ``bpe-openai`` package is installed (else estimated at four characters a token), for the three
   vault tools and with the shipped process tools, on the example vault.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from vaultpilot.agent import (  # noqa: E402
    Agent,
    CombinedTools,
    FunctionTools,
    ProcessTools,
    RunLimits,
    VaultTools,
    build_system_prompt,
    new_conversation,
    run,
    run_conversation,
)
from vaultpilot.agent.model import (  # noqa: E402
    ChatMessage,
    ModelEvent,
    RawToolCall,
    TextDelta,
    TokenCount,
    TurnEnd,
)
from vaultpilot.agent.schemas import tool_entry  # noqa: E402
from vaultpilot.memory.db import connect as connect_memory  # noqa: E402


class InstantModel:
    """A model client that answers at once: ``steps - 1`` tool-calling turns, then an answer."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.turn = 0

    @property
    def name(self) -> str:
        return "instant"

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> AsyncIterator[ModelEvent]:
        self.turn += 1
        if self.turn >= self.steps:
            yield TextDelta("done")
            yield TurnEnd((), "stop", TokenCount(10, 1))
            return
        yield TextDelta("step ")
        call = RawToolCall(f"call_{self.turn}", "noop", json.dumps({"n": self.turn}))
        yield TurnEnd((call,), "tool_calls", TokenCount(10, 5))


def noop(n: int) -> dict[str, Any]:
    """Return at once."""
    return {"n": n}


def _agent(steps: int) -> Agent:
    limits = RunLimits(max_steps=steps + 1, token_budget=None)
    return Agent(InstantModel(steps), FunctionTools([noop]), "system", limits=limits)


async def _time_run(steps: int, memory: Any = None) -> float:
    agent = _agent(steps)
    started = time.perf_counter()
    if memory is None:
        async for _ in run(agent, "go"):
            pass
    else:
        conv = new_conversation(memory, title="bench")
        async for _ in run_conversation(memory, conv.id, agent, "go"):
            pass
    return (time.perf_counter() - started) / steps * 1000


def loop_overhead(steps: int, runs: int) -> dict[str, float]:
    asyncio.run(_time_run(10))  # warm up imports and the thread pool
    plain = [asyncio.run(_time_run(steps)) for _ in range(runs)]
    with tempfile.TemporaryDirectory() as tmp:
        memory = connect_memory(Path(tmp) / "memory.db")
        stored = [asyncio.run(_time_run(steps, memory)) for _ in range(runs)]
        memory.close()
    return {
        "loop_ms_per_step_median": round(statistics.median(plain), 3),
        "loop_ms_per_step_max": round(max(plain), 3),
        "loop_with_memory_db_ms_per_step_median": round(statistics.median(stored), 3),
    }


def http_round_trip(steps: int) -> float:
    import openai

    from vaultpilot.agent.openai_model import OpenAIChatModel
    from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn

    turns = [
        ScriptedTurn(tool_calls=[ScriptedCall(name="noop", arguments={"n": i})])
        for i in range(steps - 1)
    ]
    turns.append(ScriptedTurn(text="done"))
    with ScriptedModelServer(turns) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        limits = RunLimits(max_steps=steps + 1, token_budget=None)
        agent = Agent(
            OpenAIChatModel(client, "scripted"), FunctionTools([noop]), "s", limits=limits
        )

        async def go() -> float:
            started = time.perf_counter()
            async for _ in run(agent, "go"):
                pass
            return (time.perf_counter() - started) / steps * 1000

        return round(asyncio.run(go()), 3)


def _counter() -> tuple[str, Any]:
    try:
        import bpe_openai

        enc = bpe_openai.get_encoding("o200k_base")
        return "o200k_base (bpe-openai)", lambda text: len(enc.encode(text))
    except ImportError:
        return "estimate: 4 characters a token", lambda text: (len(text) + 3) // 4


def prompt_tokens() -> dict[str, Any]:
    from datetime import date

    from vaultpilot.agent.build import run_process_tool
    from vaultpilot.contract.catalog import shipped_tools
    from vaultpilot.tools import open_context

    name, count = _counter()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = open_context(REPO / "examples" / "vault", Path(tmp) / "index.db")
        try:
            vault = VaultTools(ctx)
            prompt = build_system_prompt(vault.facts(date(2025, 11, 12)))
            process = ProcessTools.for_vault(shipped_tools(), run_process_tool, Path("."))
            builtin = [tool_entry(s.name, s.description, s.parameters) for s in vault.specs()]
            every = [
                tool_entry(s.name, s.description, s.parameters)
                for s in CombinedTools(vault, process).specs()
            ]
            raw = [
                {"type": "function", "function": {**t.spec()}}
                for t in __import__("vaultpilot.tools.registry", fromlist=["TOOLS"]).TOOLS
            ]
        finally:
            ctx.conn.close()

    def tokens(value: Any) -> int:
        return count(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    per_tool = {e["function"]["name"]: tokens(e) for e in every}
    return {
        "tokenizer": name,
        "system_prompt": count(prompt),
        "vault_tools_compacted": tokens(builtin),
        "vault_tools_as_registry_gives_them": tokens(raw),
        "per_tool": per_tool,
        "prompt_plus_vault_tools": count(prompt) + tokens(builtin),
        "prompt_plus_vault_and_process_tools": count(prompt) + tokens(every),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    out = {
        "python": sys.version.split()[0],
        **loop_overhead(args.steps, args.runs),
        "http_scripted_server_ms_per_step": http_round_trip(50),
        "tokens": prompt_tokens(),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
