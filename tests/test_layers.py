"""Imports point one way: vault <- index <- tools <- agent <- transports (ARCHITECTURE.md).

``errors``, ``locations``, ``configfile`` and ``wording`` are shared by every layer and import
no layer.
``memory`` (memory.db) is storage beside ``index``. ``contract`` (the ActionRequest/ActionResponse
programs and their orchestrator) sits beside ``tools``, so the one place that builds an agent
(``agent.build``) can offer process tools without importing a transport.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultpilot"
RANK = {
    "errors": 0, "locations": 0, "configfile": 0, "wording": 0,
    "vault": 1, "index": 2, "memory": 2, "tools": 3, "contract": 3, "agent": 4,
    "cli": 5, "server": 5, "mcp": 5, "web": 5,
}  # fmt: skip


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n.startswith("vaultpilot.")]


def violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        for name in _imports(path):
            other = name.split(".")[1]
            if other != own and RANK.get(other, 99) > RANK.get(own, -1):
                found.append(f"{rel} imports {name}")
    return found


def test_layers_only_import_leftwards() -> None:
    assert violations(SRC) == []


def test_every_package_has_a_rank() -> None:
    packages = {p.name.removesuffix(".py") for p in SRC.iterdir() if not p.name.startswith("_")}
    assert packages - {"py.typed"} <= set(RANK)


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "m.py").write_text("from vaultpilot.agent.loop import run\n")
    (tmp_path / "errors.py").write_text("import vaultpilot.vault.files\n")
    assert violations(tmp_path) == [
        "errors.py imports vaultpilot.vault.files",
        "index/m.py imports vaultpilot.agent.loop",
    ]
