"""Numbers a model may send are bounded where a huge one would break date arithmetic."""

from __future__ import annotations

from pathlib import Path

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
