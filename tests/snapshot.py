"""The one snapshot check of the test suite: a value against ``snapshots/<name>.json``.

``check_snapshot(path, value)`` compares ``value`` (as JSON) with the file; ``exact_text``
compares the file's bytes as well, for contracts pinned byte for byte. ``UPDATE_SNAPSHOTS=1``
writes the file instead, after an intended change (review the diff). A missing file fails with
the command that creates it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

__all__ = ["check_snapshot"]


def check_snapshot(path: Path, value: Any, *, exact_text: bool = False) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"No snapshot {path}; run with UPDATE_SNAPSHOTS=1 to create it.")
    stored = path.read_text(encoding="utf-8")
    hint = f"{path.name} differs; if the change is intended, run with UPDATE_SNAPSHOTS=1"
    if exact_text:
        assert stored == text, hint
    else:
        assert json.loads(stored) == json.loads(text), hint
