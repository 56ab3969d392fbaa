"""Keyword search that accepts notes holding *any* of the words (the fallback of ``search``).

``queries.search`` finds notes that contain every word of a query. When none does, a search for
any of the words still helps: ``search_any`` runs the same FTS5 BM25 ranking (same column
weights, same snippets) with the words joined by OR, so notes holding more of them rank higher.
"""

from __future__ import annotations

import re
import sqlite3

from vaultpilot.index.queries import SearchHit, tag_filter_sql
from vaultpilot.vault.files import normalize_rel_path

__all__ = ["any_word_query", "search_any"]

_WEIGHTS = "10.0, 5.0, 3.0, 1.0"  # the same as queries.search: title, aliases, headings, body


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
    match = any_word_query(text)
    if not match:
        return [], 0
    where = ["notes_fts MATCH ?"]
    args: list[object] = [match]
    if tag:
        sub, targs = tag_filter_sql(tag)
        where.append(f"notes_fts.rowid IN ({sub})")
        args.extend(targs)
    if folder:
        low = normalize_rel_path(folder).lower()
        where.append("f.path_lower >= ? AND f.path_lower < ?")
        args.extend([low + "/", low + "0"])
    clause = " AND ".join(where)
    total = conn.execute(
        f"SELECT COUNT(*) FROM notes_fts JOIN files f ON f.id = notes_fts.rowid WHERE {clause}",  # noqa: S608
        args,
    ).fetchone()[0]
    rows = conn.execute(
        f"SELECT f.path, f.title, bm25(notes_fts, {_WEIGHTS}) AS rank,"  # noqa: S608
        " snippet(notes_fts, -1, '**', '**', '…', 16)"
        f" FROM notes_fts JOIN files f ON f.id = notes_fts.rowid WHERE {clause}"
        " ORDER BY rank LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return [SearchHit(p, t, -float(r), s) for p, t, r, s in rows], int(total)
