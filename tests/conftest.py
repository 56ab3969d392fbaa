"""Fixtures shared by every test: a private copy of the example vault and a data directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_VAULT = REPO / "examples" / "vault"
KEPANO = REPO.parent / "shared" / "corpora" / "kepano-obsidian"


@pytest.fixture
def example_vault(tmp_path: Path) -> Path:
    """A writable copy of the bundled example vault."""
    dest = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, dest)
    return dest


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data directory, also set in the environment for child processes."""
    path = tmp_path / "data"
    monkeypatch.setenv("VAULTPILOT_DATA_DIR", str(path))
    return path
