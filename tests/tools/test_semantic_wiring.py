"""semantic_search and find_related with the vector side wired in through ``Semantic``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.semantic.conftest import HashEmbedder
from vaultpilot.index.embedding.base import EmbeddingModelMissing, default_model_dir
from vaultpilot.index.embedding.local import load_default_embedder
from vaultpilot.index.semantic import embed_pending, embedding_coverage
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
    assert (
        "No embedding model is configured or built; ranked by keywords only."
        in (result["suggestion"])
    )
    assert semantic.problem is not None and "install-model" in semantic.problem
    ctx.conn.close()


def test_a_partly_embedded_vault_says_the_ranking_is_partial(
    example_vault: Path, tmp_path: Path
) -> None:
    hashed = HashEmbedder()
    semantic = Semantic(load=lambda: hashed)
    ctx = open_context(example_vault, tmp_path / "index.db", semantic=semantic)
    ctx.fresh()
    search = {"queryType": "semantic_search", "query": "postgres migration", "limit": 3}

    nothing = call_tool(ctx, "obsidian_query_vault", search)
    assert nothing["ranking"] == "keyword"
    assert "Nothing is embedded yet" in nothing["suggestion"]

    batches = iter(range(3))
    embed_pending(ctx.conn, hashed, batch_size=8, should_stop=lambda: next(batches, None) is None)
    partial = call_tool(ctx, "obsidian_query_vault", search)
    assert partial["ranking"] == "hybrid"
    found = re.search(r"covers (\d+) of (\d+) note sections so far", partial["suggestion"])
    assert found is not None, partial["suggestion"]
    embedded, chunks = embedding_coverage(ctx.conn)
    assert (int(found.group(1)), int(found.group(2))) == (embedded, chunks)
    assert 0 < embedded < chunks

    embed_pending(ctx.conn, hashed)
    complete = call_tool(ctx, "obsidian_query_vault", search)
    assert complete["ranking"] == "hybrid"
    assert "covers" not in (complete.get("suggestion") or "")
    ctx.conn.close()
