"""Shared by the MCP tests: how to launch `vaultpilot mcp` for the SDK's client, and snapshots.

The server runs as a real subprocess (the installed `vaultpilot` script) on a private copy of
the example vault, with a private data folder and a config file the test controls; background
embedding is off (`--no-embed`), so nothing but the protocol is measured or awaited.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from tests.snapshot import check_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots"
VAULTPILOT = Path(sys.executable).parent / "vaultpilot"
# Bounds every client operation, so a hung server fails the test instead of stalling the run.
TIMEOUT = 60.0


def server_env(tmp_path: Path, data_dir: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "VAULTPILOT_DATA_DIR": str(data_dir),
        "VAULTPILOT_CONFIG": str(tmp_path / "config.toml"),
    }


def stdio_params(tmp_path: Path, data_dir: Path, *vaults: str) -> StdioServerParameters:
    args = ["mcp", "--no-embed"]
    for vault in vaults:
        args += ["--vault", vault]
    return StdioServerParameters(
        command=str(VAULTPILOT), args=args, env=server_env(tmp_path, data_dir)
    )


@pytest.fixture
def one_vault(tmp_path: Path, example_vault: Path, data_dir: Path) -> StdioServerParameters:
    return stdio_params(tmp_path, data_dir, str(example_vault))


def snapshot(name: str, value: Any) -> None:
    """Compare ``value`` with ``snapshots/<name>.json`` (``UPDATE_SNAPSHOTS=1`` rewrites it)."""
    check_snapshot(SNAPSHOTS / f"{name}.json", value)


def wire(models: list[Any]) -> list[dict[str, Any]]:
    """Models as they travel (camelCase, no nulls)."""
    return [m.model_dump(by_alias=True, mode="json", exclude_none=True) for m in models]
