"""Shared by the MCP tests: how to launch `vaultpilot mcp` for the SDK's client, and snapshots.

The server runs as a real subprocess (the installed `vaultpilot` script) on a private copy of
the example vault, with a private data folder and a config file the test controls; background
embedding is off (`--no-embed`), so nothing but the protocol is measured or awaited.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

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
    path = SNAPSHOTS / f"{name}.json"
    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"No snapshot {path.name}; run with UPDATE_SNAPSHOTS=1 to create it.")
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text), (
        f"{path.name} differs; if the change is intended, run with UPDATE_SNAPSHOTS=1"
    )


def wire(models: list[Any]) -> list[dict[str, Any]]:
    """Models as they travel (camelCase, no nulls)."""
    return [m.model_dump(by_alias=True, mode="json", exclude_none=True) for m in models]
