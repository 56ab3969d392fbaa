"""What the memory tests share: a small vault with notes that must come back byte for byte, a
snapshot of it, and ``manage`` (the vault manager tool, asserting success)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from vaultpilot.tools import call_tool
from vaultpilot.tools.context import ToolContext

NOTES = {
    "Projects/Plan.md": "---\ntags: [project]\n---\n# Plan\nSee [[Ideas]] and [[Old/Notes]].\n",
    "Ideas.md": "# Ideas\r\n- one\r\n- two\r\n",  # CRLF: undo must give back the same bytes
    "Old/Notes.md": "# Notes\nLinks to [[Plan]].\n",
    "Old/Deep/Leaf.md": "leaf, see [[Old/Notes|the notes]]\n",
    "Daily.md": "\ufeffday one\n",
}


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder outside .trash/, files by the hash of their bytes."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/", 1)[0] in {".trash", ".obsidian"}:
            continue
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def manage(ctx: ToolContext, **args: Any) -> dict[str, Any]:
    result = call_tool(ctx, "obsidian_vault_manager", args)
    assert result["success"], result
    return result
