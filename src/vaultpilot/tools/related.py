"""Which notes relate to a note, best first: links both ways, shared tags, then similar text.

The scoring lives in ``index.related`` (one implementation for the tools and the evaluation):
backlinks and outgoing links weigh most, then shared tags, then similar text (keywords, plus
vector similarity of the notes' chunks when the context has a ``semantic`` side). Each result
names its relations ("links here; shares #postgres; similar text") so the model sees why.

Relevance uses the calibration of ``semantic_search`` (``index.hybrid.relevance``), so 0.5 means
the same in both: similar text counts by the calibrated relevance of the closest chunk to the
reference note's mean vector, and a link (0.9) or each shared tag (0.3) is independent further
evidence (noisy-or). A note related only by similar text below the search threshold is left out,
as a search would leave it out; without vectors the keyword similarity counts at half weight.
"""

from __future__ import annotations

from dataclasses import replace

from vaultpilot.index.hybrid import RELEVANCE_THRESHOLD, relevance
from vaultpilot.index.lookup import file_ids
from vaultpilot.index.related import RelatedNote
from vaultpilot.index.related import related_notes as _related_notes
from vaultpilot.tools.context import ToolContext

__all__ = ["RelatedNote", "related_notes"]

_LINK = 0.9  # a link either way: the note is almost surely related
_TAG = 0.3  # each shared tag (index.related counts at most three)


def _cosines(ctx: ToolContext, path: str, others: list[str]) -> dict[str, float]:
    """Cosine of each other note's best chunk with the reference note's mean vector."""
    if ctx.semantic is None or not others:
        return {}
    index = ctx.semantic.cache.get(ctx.conn)
    if index is None:
        return {}
    ids = file_ids(ctx.conn, [path, *others])
    centroid = index.note_vector(ids[path]) if path in ids else None
    if centroid is None:
        return {}
    _, cosines = index.note_matches(centroid, limit=1, also=[ids[o] for o in others if o in ids])
    return {o: cosines[ids[o]] for o in others if o in ids and ids[o] in cosines}


def related_notes(
    ctx: ToolContext, path: str, *, allowed: frozenset[str] | None = None
) -> list[RelatedNote]:
    """Every note related to ``path``, best first (see the module doc)."""
    vectors = ctx.semantic.cache if ctx.semantic is not None else None
    found = _related_notes(ctx.conn, path, vectors=vectors, allowed=allowed)
    cosines = _cosines(ctx, path, [n.path for n in found])
    out: list[RelatedNote] = []
    for note in found:
        reasons = note.relation.split("; ")
        cosine = cosines.get(note.path)
        if cosine is not None:
            text = relevance(cosine, 0.0, 0.0) if "similar text" in reasons else 0.0
        else:
            text = 0.5 * (note.similarity or 0.0)
        linked = any(r in ("links here", "linked from it") for r in reasons)
        tags = sum(1 for r in reasons if r.startswith("shares #"))
        if not linked and not tags and cosine is not None and text < RELEVANCE_THRESHOLD:
            continue  # similar text alone, and not similar enough to be returned by a search
        miss = (1.0 - text) * (1.0 - _LINK) ** linked * (1.0 - _TAG) ** tags
        out.append(replace(note, relevance=round(1.0 - miss, 3)))
    return out  # in index.related's order: links, then tags, then similar text
