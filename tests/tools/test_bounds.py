"""Numbers a model may send are bounded where a huge one would break date arithmetic."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.tools.conftest import manage, read
from vaultpilot.tools import call_tool, open_context


def test_a_huge_date_range_is_refused_with_its_limit(example_vault: Path, tmp_path: Path) -> None:
    ctx = open_context(example_vault, tmp_path / "index.db")
    try:
        args = {"queryType": "search_by_metadata", "filters": {"dateRange": {"days": 10**12}}}
        out = call_tool(ctx, "obsidian_query_vault", args)
        assert "error" in out and "100000" in out["error"] and "internal" not in out["error"]
        ok = call_tool(
            ctx, "obsidian_query_vault", {**args, "filters": {"dateRange": {"days": 100_000}}}
        )
        assert "error" not in ok, ok
    finally:
        ctx.conn.close()


def test_a_frontmatter_of_exploding_aliases_stays_small(vault: Path, tmp_path: Path) -> None:
    """A note whose few lines of YAML aliases stand for millions of values reads, indexes and
    is refused for tag edits at once, as a note with invalid frontmatter."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 8)]
    text = "---\n" + "\n".join(lines) + "\n---\nBody text about laughs.\n"
    (vault / "Laughs.md").write_text(text, encoding="utf-8")
    started = time.perf_counter()
    ctx = open_context(vault, tmp_path / "laughs.db")
    try:
        got = read(ctx, contextType="read_note", target="Laughs")
        assert len(json.dumps(got)) < 20_000 and "laughs" in got["primaryNote"]["content"]
        tagged = manage(ctx, operation="bulk_tag", targets=["Laughs.md"], metadata={"tags": ["x"]})
        assert "Laughs.md" not in tagged.get("affectedPaths", []), tagged
        assert (vault / "Laughs.md").read_text(encoding="utf-8") == text
    finally:
        ctx.conn.close()
    assert time.perf_counter() - started < 30
