"""Keyword search that accepts notes holding *any* of the words (the fallback of ``search``).

``queries.search`` finds notes that contain every word of a query. When none does, a search for
any of the words still helps: ``search_any`` runs ``search`` with the words joined by OR (same
BM25 weights, same snippets), so notes holding more of them rank higher.
"""

from __future__ import annotations

import re
import sqlite3

from vaultpilot.index.queries import SearchHit, search

__all__ = ["any_word_query", "search_any"]


def any_word_query(text: str) -> str:
    """An FTS5 expression matching any word of ``text`` ("" when it has no words)."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    return " OR ".join(f'"{w}"' for w in words)


def search_any(
    conn: sqlite3.Connection,
    text: str,
    *,
    tag: str | None = None,
    folder: str | None = None,
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[SearchHit], int]:
    """Notes matching any word of ``text``, best first; returns (hits, total)."""
    if not any_word_query(text):
        return [], 0
    return search(
        conn, text, tag=tag, folder=folder, limit=limit, offset=offset,
        any_word=True,
    )  # fmt: skip
