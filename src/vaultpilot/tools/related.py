"""Which notes relate to a note, best first: links both ways, shared tags, then similar text.

A note scores for each kind of relation it has with the reference note, and the relations are
named so the model can see why it was chosen:

* ``links here`` (a backlink) and ``linked from it`` (an outgoing link): 1.0 each, so a note
  linked both ways ranks first; more links add a little;
* ``shares #tag``: 0.3 per shared tag, at most 0.9;
* ``similar text``: up to 0.6, from a keyword search for the reference note's title and its most
  frequent words (BM25), scaled to the best match.

Relevance is the score scaled to the best related note (0..1). Attachments are never included.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from vaultpilot.index.keyword import search_any
from vaultpilot.index.lookup import note_bodies, note_facts
from vaultpilot.tools.context import ToolContext

__all__ = ["Related", "related_notes"]

_WORD = re.compile(r"[^\W\d_]{4,}")
_STOP_WORDS = (
    "about above after again also among because been before being below between both could "
    "does doing down during each every from further have having here into itself just more "
    "most once only other over same should some such than that their them then there these "
    "they this those through under until very were what when where which while will with "
    "would your yours note notes"
)
_STOP = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True, slots=True)
class Related:
    path: str
    relevance: float
    relation: str


def _terms(title: str, body: str, count: int = 10) -> str:
    words = [w.lower() for w in _WORD.findall(body)]
    common = [w for w, _ in Counter(w for w in words if w not in _STOP).most_common(count)]
    return " ".join([title, *common])


def related_notes(
    ctx: ToolContext, path: str, *, allowed: frozenset[str] | None = None
) -> list[Related]:
    """Every note related to ``path``, best first (see the module doc)."""
    conn = ctx.conn
    scores: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}

    def add(other: str, score: float, reason: str) -> None:
        if other == path or (allowed is not None and other not in allowed):
            return
        scores[other] = scores.get(other, 0.0) + score
        if reason not in reasons.setdefault(other, []):
            reasons[other].append(reason)

    link_rows = conn.execute(
        "SELECT 'out', t.path, COUNT(*) FROM links l JOIN files s ON s.id = l.source_id"
        " JOIN files t ON t.id = l.target_id WHERE s.path = ? AND t.is_note = 1 GROUP BY t.path"
        " UNION ALL SELECT 'in', s.path, COUNT(*) FROM links l JOIN files s ON s.id = l.source_id"
        " JOIN files t ON t.id = l.target_id WHERE t.path = ? GROUP BY s.path",
        (path, path),
    ).fetchall()
    for direction, other, n in link_rows:
        reason = "linked from it" if direction == "out" else "links here"
        add(other, 1.0 + 0.05 * min(n - 1, 4), reason)

    facts = note_facts(conn, [path]).get(path)
    for tag in facts.tags if facts else ():
        rows = conn.execute(
            "SELECT DISTINCT f.path FROM tags t JOIN files f ON f.id = t.file_id"
            " WHERE t.tag_lower = ?",
            (tag.lower(),),
        ).fetchall()
        for (other,) in rows:
            if sum(r.startswith("shares") for r in reasons.get(other, [])) < 3:
                add(other, 0.3, f"shares #{tag}")

    if facts is not None:
        body = note_bodies(conn, [path], chars=20000).get(path, "")
        hits, _ = search_any(conn, _terms(facts.title, body), limit=25)
        best = max((h.score for h in hits if h.path != path), default=0.0)
        for hit in hits:
            if best > 0 and hit.score > 0:
                add(hit.path, 0.6 * hit.score / best, "similar text")

    if not scores:
        return []
    top = max(scores.values())
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Related(p, round(s / top, 2), "; ".join(reasons[p])) for p, s in ranked]
