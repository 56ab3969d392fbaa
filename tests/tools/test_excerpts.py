"""Detailed search excerpts never put highlight markers inside a link (spec deviation: the
excerpt showed ``[[**Database** **Migration**|...]]``, which is no longer a link)."""

from __future__ import annotations

import re

from vaultpilot.tools import ToolContext, is_error

from .conftest import query, write

_BROKEN = re.compile(r"\[\[[^\]]*\*\*|\]\([^)]*\*\*")


def test_detailed_excerpt_keeps_links_whole(ctx: ToolContext) -> None:
    write(ctx.root, "Hangar Log.md", "# Hangar Log\n\nNotes on [[Zeppelin Hangar|the hangar]].\n")
    result = query(ctx, queryType="semantic_search", query="zeppelin hangar", limit=5)
    assert not is_error(result), result
    excerpt = next(r["excerpt"] for r in result["results"] if r["path"] == "Hangar Log.md")
    assert not _BROKEN.search(excerpt), excerpt
    assert "**[[Zeppelin Hangar|the hangar]]**" in excerpt
