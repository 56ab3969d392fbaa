"""Imports point one way: vault <- index <- tools <- agent <- transports (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultpilot"
ORDER = ["vault", "index", "tools", "agent"]
TRANSPORTS = {"cli", "server", "mcp", "contract", "web"}
SHARED = {"errors", "locations", "migrate", "memory"}


def _rank(layer: str) -> int:
    if layer in ORDER:
        return ORDER.index(layer)
    if layer in TRANSPORTS:
        return len(ORDER)
    return -1  # shared modules: importable from anywhere


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n.startswith("vaultpilot.")]


def test_layers_only_import_leftwards() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).parts
        own = rel[0] if len(rel) > 1 else "shared"
        for name in _imports(path):
            other = name.split(".")[1]
            if other == own or other in SHARED or _rank(own) < 0 and other not in ORDER:
                continue
            if _rank(other) > _rank(own) or (own in SHARED and other in ORDER + list(TRANSPORTS)):
                violations.append(f"{'/'.join(rel)} imports {name}")
    assert violations == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from vaultpilot.agent.loop import run\n", encoding="utf-8")
    assert _imports(bad) == ["vaultpilot.agent.loop"]
    assert _rank("agent") > _rank("index")
