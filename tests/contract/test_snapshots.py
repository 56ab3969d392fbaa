"""Snapshots of the contract: every JSON Schema, and obsidian_agent's replies to a fixed script.

A change to a model or a message shows up as a diff of ``snapshots/``. To accept it, run
``UPDATE_SNAPSHOTS=1 pytest tests/contract/test_snapshots.py`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.snapshot import check_snapshot
from vaultpilot.contract.models import SCHEMA_NAMES, json_schema

from .conftest import SNAPSHOTS, request, run_agent


def matches_snapshot(name: str, value: Any) -> None:
    check_snapshot(SNAPSHOTS / name, value, exact_text=True)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_snapshot(name: str) -> None:
    matches_snapshot(f"{name}.schema.json", json_schema(name))


def test_no_stale_schema_snapshots() -> None:
    on_disk = {p.name.removesuffix(".schema.json") for p in SNAPSHOTS.glob("*.schema.json")}
    assert on_disk == set(SCHEMA_NAMES)


# One script through the real agent: successes, then every kind of error, in order.
SCRIPT: list[tuple[str, Any]] = [
    ("create_note", {"vault_path": "vault", "note_name": "Projects/Plan", "content": "# Plan\n"}),
    ("read_note", {"vault_path": "vault", "note_name": "Projects/Plan.md"}),
    ("update_note", {"vault_path": "vault", "note_name": "Projects/Plan", "content": "# v2\n"}),
    ("read_note", {"vault_path": "vault", "note_name": "Projects/Plan"}),
    ("create_note", {"vault_path": "vault", "note_name": "Projects/Plan", "content": "x"}),
    ("update_note", {"vault_path": "vault", "note_name": "Missing", "content": "x"}),
    ("read_note", {"vault_path": "vault", "note_name": "Missing"}),
    ("read_note", {"vault_path": "no-vault", "note_name": "A"}),
    ("create_note", {"vault_path": "vault", "note_name": "../escape", "content": "x"}),
    ("create_note", {"vault_path": "vault", "note_name": "/etc/evil", "content": "x"}),
    ("create_note", {"vault_path": "vault", "note_name": ".obsidian/x", "content": "x"}),
    ("read_note", {"vault_path": "vault"}),
    ("read_note", {"vault_path": "vault", "note_name": 42}),
    ("update_note", {"vault_path": "vault", "note_name": "Projects/Plan"}),
    ("rename_note", {}),
    (
        "read_note",
        {"vault_path": "vault", "note_name": "Projects/Plan", "note": "unknown fields ignored"},
    ),
]


def test_obsidian_agent_reply_snapshot(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    transcript = []
    for action, payload in SCRIPT:
        sent = request("obsidian_agent", action, payload)
        reply = run_agent("obsidian_agent", sent, cwd=tmp_path).reply
        transcript.append({"action": action, "payload": payload, "reply": reply})
    unparseable = run_agent("obsidian_agent", b'{"request_id": 1}', cwd=tmp_path).reply
    unparseable["request_id"] = "<fresh>"
    transcript.append({"stdin": '{"request_id": 1}', "reply": unparseable})
    matches_snapshot("obsidian_agent_replies.json", transcript)
