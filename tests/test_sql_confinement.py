"""SQL is written only in ``index/`` (index.db) and ``memory/`` (memory.db).

Every other package asks those two for what it needs through named functions, so the schema can
change in one place and the layer test (which reads imports only) cannot be bypassed by a raw
query. The check reads the syntax tree: a call of ``.execute``, ``.executemany`` or
``.executescript`` outside those packages is a violation; the word in a string or comment is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultpilot"
SQL_PACKAGES = {"index", "memory"}
_CALLS = {"execute", "executemany", "executescript"}

# Files that still run SQL outside index/ and memory/, each with where its SQL belongs. The list
# may only shrink: a file that no longer runs SQL must be taken off it.
PENDING: dict[str, str] = {}


def _sql_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _CALLS
    )


def violations(root: Path) -> dict[str, list[int]]:
    """Per file outside the SQL packages, the lines calling ``.execute`` and its kin."""
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in SQL_PACKAGES:
            continue
        lines = _sql_calls(path)
        if lines:
            found[rel.as_posix()] = lines
    return found


def test_sql_only_in_index_and_memory() -> None:
    found = violations(SRC)
    new = {f: lines for f, lines in found.items() if f not in PENDING}
    assert new == {}, (
        "SQL outside index/ and memory/: add a function there and call it instead "
        f"(file: lines) {new}"
    )


def test_pending_files_still_need_moving() -> None:
    done = sorted(set(PENDING) - set(violations(SRC)))
    assert done == [], f"take these off PENDING, they run no SQL any more: {done}"


def test_the_check_sees_sql(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "index").mkdir()
    (tmp_path / "tools" / "q.py").write_text(
        '"""Calls conn.execute( in a docstring only."""\n'
        "def f(conn):\n"
        "    # conn.execute('SELECT 1') in a comment\n"
        "    return conn.execute(\n        'SELECT 1'\n    ).fetchone()\n"
        "def g(db):\n"
        "    db.executemany('INSERT INTO t VALUES (?)', [(1,)])\n"
    )
    (tmp_path / "index" / "ok.py").write_text("def f(conn):\n    conn.execute('SELECT 1')\n")
    (tmp_path / "top.py").write_text(
        "import sqlite3\nsqlite3.connect(':memory:').executescript('')\n"
    )
    assert violations(tmp_path) == {"tools/q.py": [4, 8], "top.py": [2]}
