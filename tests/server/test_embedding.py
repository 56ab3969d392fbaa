"""Background embedding in the server: started with it, woken by writes, reported by /vaults."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.semantic.conftest import HashEmbedder
from tests.server.conftest import Live
from vaultpilot.index.embedding import EmbeddingModelMissing


def _embedding(live: Live) -> dict[str, Any]:
    with live.http() as c:
        reply = c.get("/vaults")
        assert reply.status_code == 200
        info: dict[str, Any] = reply.json()[0]["embedding"]
        return info


def _wait(
    live: Live, done: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    info = _embedding(live)
    while not done(info):
        assert time.monotonic() < deadline, f"embedding did not settle: {info}"
        time.sleep(0.05)
        info = _embedding(live)
    return info


def _complete(info: dict[str, Any]) -> bool:
    return bool(
        info["state"] == "idle"
        and info["notesPending"] == 0
        and info["chunksEmbedded"] == info["chunks"] > 0
    )


def test_the_server_embeds_at_start_and_after_each_write(
    live: Callable[..., Live], vault: Path
) -> None:
    embedder = HashEmbedder()
    server = live(vaults={"vault": vault}, background_embedding=True, embedder=lambda: embedder)
    first = _wait(server, _complete)
    assert first["model"] == "test/hash-64" and first["problem"] is None

    created = server.rpc(
        "CreateNote",
        {"FilePath": "Inbox/Zeppelins.md", "Content": "# Zeppelin hangar\n\nThe quokka ledger."},
    )
    assert created["success"], created
    after = _wait(server, lambda i: _complete(i) and i["chunks"] > first["chunks"])
    assert any("quokka ledger" in text for text in embedder.seen)

    found = server.rpc(
        "obsidian_query_vault",
        {"queryType": "semantic_search", "query": "zeppelin quokka", "limit": 3},
    )
    assert found["success"], found
    assert found["result"]["ranking"] == "hybrid"
    assert found["result"]["results"][0]["path"] == "Inbox/Zeppelins.md"

    context = server.rpc("GetVaultContext", {"VaultID": "vault"})
    summary = context["result"]["stateSummary"]
    assert f"Semantic search: {after['chunks']} of {after['chunks']} chunks embedded" in summary


def test_without_a_model_the_server_says_why_and_searches_by_keyword(
    live: Callable[..., Live], vault: Path
) -> None:
    def missing() -> HashEmbedder:
        raise EmbeddingModelMissing("The offline embedding model is not built; run make install.")

    server = live(vaults={"vault": vault}, background_embedding=True, embedder=missing)
    info = _wait(server, lambda i: i["state"] == "unavailable")
    assert info["problem"] == "The offline embedding model is not built; run make install."
    found = server.rpc(
        "obsidian_query_vault", {"queryType": "semantic_search", "query": "rollback", "limit": 3}
    )
    assert found["success"] and found["result"]["results"]
    assert found["result"]["ranking"] == "keyword"


def test_background_embedding_can_be_turned_off(live: Callable[..., Live], vault: Path) -> None:
    embedder = HashEmbedder()
    server = live(vaults={"vault": vault}, background_embedding=False, embedder=lambda: embedder)
    server.rpc("CreateNote", {"FilePath": "Off.md", "Content": "nothing to embed here"})
    time.sleep(0.3)
    info = _embedding(server)
    assert info["state"] == "off" and info["chunksEmbedded"] == 0
    assert embedder.calls == 0


def test_notes_edited_outside_are_rescanned_and_embedded(
    live: Callable[..., Live], vault: Path
) -> None:
    embedder = HashEmbedder()
    server = live(
        vaults={"vault": vault},
        background_embedding=True,
        rescan_interval=0.2,
        embedder=lambda: embedder,
    )
    first = _wait(server, _complete)
    # Written the way Obsidian writes: straight to disk, no tool call, no request at all.
    (vault / "Typed in Obsidian.md").write_text("# Lighthouse\n\nThe kestrel almanac is due.\n")
    _wait(server, lambda i: _complete(i) and i["chunks"] > first["chunks"])
    assert any("kestrel almanac" in text for text in embedder.seen)
