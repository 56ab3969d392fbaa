"""semantic_search and find_related with the vector side wired in through ``Semantic``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultpilot.index.embedding.base import EmbeddingModelMissing, default_model_dir
from vaultpilot.index.embedding.local import load_default_embedder
from vaultpilot.index.semantic import embed_pending
from vaultpilot.tools import call_tool, open_context
from vaultpilot.tools.semantic import Semantic

needs_model = pytest.mark.skipif(
    not (default_model_dir() / "manifest.json").exists(),
    reason="the embedding model is not built; run `make install-model`",
)


@needs_model
def test_semantic_search_is_hybrid_once_embedded(example_vault: Path, tmp_path: Path) -> None:
    semantic = Semantic(load=load_default_embedder)
    ctx = open_context(example_vault, tmp_path / "index.db", semantic=semantic)
    ctx.fresh()
    embedder = semantic.embedder()
    assert embedder is not None
    embed_pending(ctx.conn, embedder)
    result = call_tool(
        ctx,
        "obsidian_query_vault",
        {"queryType": "semantic_search", "query": "when do we switch production to postgres"},
    )
    assert result["ranking"] == "hybrid"
    assert "Projects/Database Migration.md" in [r["path"] for r in result["results"][:3]]
    related = call_tool(
        ctx,
        "obsidian_query_vault",
        {"queryType": "find_related", "referenceNote": "Projects/Database Migration.md"},
    )
    assert related["results"] and "Projects/Database Migration.md" not in {
        r["path"] for r in related["results"]
    }
    ctx.conn.close()


def test_without_a_model_search_says_it_used_keywords(example_vault: Path, tmp_path: Path) -> None:
    def missing() -> object:
        raise EmbeddingModelMissing("The embedding model is not built; run `make install-model`.")

    semantic = Semantic(load=missing)  # type: ignore[arg-type]
    ctx = open_context(example_vault, tmp_path / "index.db", semantic=semantic)
    result = call_tool(
        ctx, "obsidian_query_vault", {"queryType": "semantic_search", "query": "pgloader"}
    )
    assert result["ranking"] == "keyword"
    assert result["results"]
    assert semantic.problem is not None and "install-model" in semantic.problem
    ctx.conn.close()
