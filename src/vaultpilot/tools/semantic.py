"""The vector side of the tools: a lazily loaded embedder and the vector cache of one index.

A transport builds one ``Semantic`` per index database and passes it to ``open_context``. The
embedder is loaded on the first search that needs it (0.1-0.2 s for the offline model), and a
setup problem (model not built, no embedding server configured) is remembered: searches then
rank by keywords and say so, instead of failing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from vaultpilot.errors import ExternalError, SetupError
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.index.semantic import select_embedder
from vaultpilot.index.vectors import VectorCache

__all__ = ["Semantic", "live"]

# A long-running process's searches reuse a vector snapshot for up to this long while the
# background embedder commits a batch every fraction of a second, instead of refreshing it for
# every query (bench/bench_background.py; figures in docs/benchmarks.md).
RELOAD_INTERVAL = 2.0


@dataclass(slots=True)
class Semantic:
    load: Callable[[], Embedder] = select_embedder
    cache: VectorCache = field(default_factory=VectorCache)
    problem: str | None = None  # why there is no embedder, once loading failed
    _embedder: Embedder | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def embedder(self) -> Embedder | None:
        """The embedder, loading it on first use; None when it cannot be had."""
        with self._lock:
            if self._embedder is None and self.problem is None:
                try:
                    self._embedder = self.load()
                except (SetupError, ExternalError) as err:
                    self.problem = err.message
            return self._embedder

    def require(self) -> Embedder:
        """The embedder, or ``SetupError`` saying why there is none (for background embedding)."""
        embedder = self.embedder()
        if embedder is None:
            raise SetupError(self.problem or "No embedding model is available.")
        return embedder


def live(load: Callable[[], Embedder] = select_embedder) -> Semantic:
    """The ``Semantic`` of a long-running process (server, its read workers, MCP): its vector
    snapshot reloaded at most every ``RELOAD_INTERVAL`` seconds."""
    return Semantic(load=load, cache=VectorCache(min_interval=RELOAD_INTERVAL))
