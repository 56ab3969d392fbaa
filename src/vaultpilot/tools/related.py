"""Which notes relate to a note, best first: links both ways, shared tags, then similar text.

The scoring lives in ``index.related`` (one implementation for the tools and the evaluation):
backlinks and outgoing links weigh most, then shared tags, then similar text (keywords, plus
vector similarity of the notes' chunks when the context has a ``semantic`` side). Each result
names its relations ("links here; shares #postgres; similar text") so the model sees why.
"""

from __future__ import annotations

from vaultpilot.index.related import RelatedNote
from vaultpilot.index.related import related_notes as _related_notes
from vaultpilot.tools.context import ToolContext

__all__ = ["RelatedNote", "related_notes"]


def related_notes(
    ctx: ToolContext, path: str, *, allowed: frozenset[str] | None = None
) -> list[RelatedNote]:
    """Every note related to ``path``, best first."""
    vectors = ctx.semantic.cache if ctx.semantic is not None else None
    return _related_notes(ctx.conn, path, vectors=vectors, allowed=allowed)
