"""Fixtures for the agent tests: the scripted model server over real HTTP, the real openai SDK,
the example vault with a real index, and snapshot helpers.

``serve(turns, before_turn=None)`` starts a ``ScriptedModelServer`` (stopped after the test);
``model_for(server)`` is an ``OpenAIChatModel`` on it with no retries and a short timeout;
``collect(agent, message, ...)`` runs the loop and returns its events; ``finished(events)`` is
its last event, typed as the ``RunFinished`` it must be.
``snapshot(name, value)`` compares with ``snapshots/<name>.json``; ``UPDATE_SNAPSHOTS=1``
rewrites them after an intended change.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import openai
import pytest

from tests.snapshot import check_snapshot
from vaultpilot.agent import Agent, NoteVersions, RunControls, VaultTools, run
from vaultpilot.agent.events import AgentEvent, RunFinished, event_to_dict
from vaultpilot.agent.openai_model import OpenAIChatModel
from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn
from vaultpilot.tools import open_context

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOW = datetime(2025, 11, 12, 18, 0, tzinfo=UTC)
TEST_NOTE = "# Test\n\nThe second line.\n"
E = TypeVar("E", bound=AgentEvent)


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedModelServer]]:
    started: list[ScriptedModelServer] = []

    def start(
        turns: Sequence[ScriptedTurn],
        before_turn: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> ScriptedModelServer:
        server = ScriptedModelServer(turns, before_turn=before_turn).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def model_for(server: ScriptedModelServer, *, timeout: float = 10.0) -> OpenAIChatModel:
    client = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=timeout
    )
    return OpenAIChatModel(client, "scripted")


@pytest.fixture
def vault(example_vault: Path) -> Path:
    note = example_vault / "test.md"
    note.write_text(TEST_NOTE, encoding="utf-8")
    stamp = int(NOW.timestamp() - 3600) * 1_000_000_000
    os.utime(note, ns=(stamp, stamp))  # results show dates: keep them fixed
    return example_vault


@pytest.fixture
def vault_tools(vault: Path, tmp_path: Path) -> Iterator[VaultTools]:
    ctx = open_context(vault, tmp_path / "index" / "index.db", now=lambda: NOW)
    try:
        yield VaultTools(ctx)
    finally:
        ctx.conn.close()


def collect(
    agent: Agent,
    message: str,
    *,
    controls: RunControls | None = None,
    versions: NoteVersions | None = None,
    history: Sequence[dict[str, Any]] = (),
    on_event: Callable[[AgentEvent], object] | None = None,
) -> list[AgentEvent]:
    async def go() -> list[AgentEvent]:
        out = []
        async for event in run(
            agent, message, history=history, controls=controls, versions=versions, run_id="run-1"
        ):
            out.append(event)
            if on_event is not None:
                on_event(event)
        return out

    return asyncio.run(go())


def kinds(events: Sequence[AgentEvent]) -> list[str]:
    return [e.kind for e in events]


def of_kind(events: Sequence[AgentEvent], kind: type[E]) -> list[E]:
    """The events of one kind, typed as it: ``of_kind(events, ToolResult)``."""
    return [e for e in events if isinstance(e, kind)]


def finished(events: Sequence[AgentEvent]) -> RunFinished:
    """The run's last event, which is always its ``run_finished``."""
    last = events[-1]
    assert isinstance(last, RunFinished), f"the run ended with {last.kind!r}, not run_finished"
    return last


def stable(events: Sequence[AgentEvent]) -> list[dict[str, Any]]:
    """Events as JSON with the run's timing removed."""
    out = []
    for event in events:
        data = event_to_dict(event)
        if "duration_ms" in data:
            data["duration_ms"] = 0
        out.append(data)
    return out


def snapshot(name: str, value: Any) -> None:
    check_snapshot(SNAPSHOTS / f"{name}.json", value)
