"""Fixtures for the tool tests: the example vault with pinned times, a real index, a fixed clock.

``call(ctx, tool, **arguments)`` calls a tool exactly as a transport does (through the registry,
with JSON-like arguments). ``snapshot(name, value)`` compares with ``snapshots/<name>.json``;
run with ``UPDATE_SNAPSHOTS=1`` to write them again after an intended change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.snapshot import check_snapshot
from vaultpilot.tools import ToolContext, call_tool, open_context

NOW = datetime(2025, 11, 12, 18, 0, tzinfo=UTC)  # the day of the vault's last daily note
SNAPSHOTS = Path(__file__).parent / "snapshots"


def pin_times(root: Path) -> None:
    """Give every file a distinct, fixed mtime, a day apart, in path order (the first newest)."""
    base = int(NOW.timestamp()) - 3600
    for i, path in enumerate(sorted(p for p in root.rglob("*") if p.is_file())):
        stamp = (base - 86400 * i) * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))


def write(root: Path, rel: str, text: str, *, age_days: float = 0) -> Path:
    """Write a note whose mtime is ``age_days`` before NOW."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    stamp = int((NOW.timestamp() - 86400 * age_days - 60) * 1_000_000_000)
    os.utime(path, ns=(stamp, stamp))
    return path


@pytest.fixture
def vault(example_vault: Path) -> Path:
    pin_times(example_vault)
    return example_vault


@pytest.fixture
def ctx(vault: Path, tmp_path: Path) -> Iterator[ToolContext]:
    context = open_context(vault, tmp_path / "index" / "index.db", now=lambda: NOW)
    try:
        yield context
    finally:
        context.conn.close()


def call(context: ToolContext, tool: str, **arguments: Any) -> dict[str, Any]:
    result = call_tool(context, tool, arguments)
    json.dumps(result)  # every result is plain JSON
    return result


def query(context: ToolContext, **arguments: Any) -> dict[str, Any]:
    return call(context, "obsidian_query_vault", **arguments)


def read(context: ToolContext, **arguments: Any) -> dict[str, Any]:
    return call(context, "obsidian_get_context", **arguments)


def manage(context: ToolContext, **arguments: Any) -> dict[str, Any]:
    return call(context, "obsidian_vault_manager", **arguments)


def snapshot(name: str, value: Any) -> None:
    check_snapshot(SNAPSHOTS / f"{name}.json", value)
