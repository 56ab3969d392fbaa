"""Moved to ``index.search`` (the one keyword retrieval module); these names stay importable
from here for the retrieval benchmarks until they import them from there."""

from vaultpilot.index.search import content_words, coverage, keyword_side, search_any

__all__ = ["content_words", "coverage", "keyword_side", "search_any"]
