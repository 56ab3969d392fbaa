"""Counts in words, for every message a person or a model reads: ``plural(2, "note")`` is
"2 notes", ``plural(1, "note")`` "1 note"; ``were(n)`` is the verb that goes with the count."""

from __future__ import annotations

__all__ = ["plural", "were"]


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1 (every word we count takes one)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def were(n: int) -> str:
    """ "was" for one, "were" for any other count."""
    return "was" if n == 1 else "were"
