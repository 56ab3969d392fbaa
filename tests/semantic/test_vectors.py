"""Vector storage and the numpy scan: exact top-k per note, filters, the reloading cache, and the
whole pass against a scripted OpenAI-compatible embeddings server."""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from tests.index.helpers import write
from tests.semantic.conftest import HashEmbedder
from vaultpilot.index.db import connect
from vaultpilot.index.embedding import OpenAIEmbedder
from vaultpilot.index.hybrid import hybrid_search
from vaultpilot.index.semantic import embed_pending, select_embedder
from vaultpilot.index.sync import sync_vault
from vaultpilot.index.vectors import (
    ModelInfo,
    VectorCache,
    VectorIndex,
    from_blob,
    load_vector_index,
    to_blob,
)


def random_index(rows: int, files: int, dim: int = 16, seed: int = 0) -> VectorIndex:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return VectorIndex(
        ModelInfo("random", dim),
        matrix,
        np.arange(rows, dtype=np.int64) + 1,
        rng.integers(1, files + 1, size=rows).astype(np.int64),
    )


def brute_force(index: VectorIndex, query: np.ndarray, keep: set[int] | None) -> list[int]:
    best: dict[int, float] = {}
    for row, fid in enumerate(index.file_ids.tolist()):
        if keep is None or fid in keep:
            best[fid] = max(best.get(fid, -2.0), float(index.matrix[row] @ query))
    return sorted(best, key=lambda f: -best[f])


def test_blob_round_trip() -> None:
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    assert len(to_blob(vector)) == 384 * 4
    assert np.array_equal(from_blob(to_blob(vector), 384), vector)


@pytest.mark.parametrize("limit", [1, 5, 40, 500])
def test_best_per_note_equals_brute_force(limit: int) -> None:
    index = random_index(3000, 400)
    query = index.matrix[7] * 0.5 + index.matrix[99] * 0.5
    query /= np.linalg.norm(query)
    got = index.best_per_note(query, limit=limit)
    assert [m.file_id for m in got] == brute_force(index, query, None)[:limit]
    assert all(a.score >= b.score for a, b in itertools.pairwise(got))
    top = got[0]
    row = int(np.flatnonzero(index.chunk_ids == top.chunk_id)[0])
    assert index.file_ids[row] == top.file_id
    assert top.score == pytest.approx(float(index.matrix[row] @ query))


def test_filters_and_exclusion() -> None:
    index = random_index(2000, 300, seed=1)
    query = index.matrix[0]
    keep = {3, 5, 8, 13, 21, 34}
    got = index.best_per_note(query, limit=10, file_ids=sorted(keep))
    assert [m.file_id for m in got] == brute_force(index, query, keep)[:10]
    first = int(index.file_ids[0])
    assert first not in {m.file_id for m in index.best_per_note(query, limit=50, exclude=first)}
    assert index.best_per_note(query, limit=5, file_ids=[]) == []


def test_query_of_the_wrong_dimension_is_refused() -> None:
    with pytest.raises(ValueError, match="16-d"):
        random_index(10, 3).scores(np.ones(8, dtype=np.float32))


def test_note_vector_is_the_unit_mean_of_its_chunks() -> None:
    index = random_index(50, 5)
    fid = int(index.file_ids[0])
    mean = index.matrix[index.file_ids == fid].mean(axis=0)
    vector = index.note_vector(fid)
    assert vector is not None
    assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-6)
    assert index.note_vector(10_000) is None


def test_cache_reloads_only_when_the_index_changed(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    cache = VectorCache()
    assert cache.get(indexed) is None  # nothing embedded yet
    embed_pending(indexed, hash_embedder)
    first = cache.get(indexed)
    assert (
        first is not None
        and len(first) == indexed.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    )
    loads = cache.loads
    assert cache.get(indexed) is first and cache.loads == loads
    # A sync that changes nothing the vectors depend on: no reload.
    write(example_vault, "Inbox.md", (example_vault / "Inbox.md").read_text("utf-8"))
    sync_vault(indexed, example_vault)
    assert cache.get(indexed) is first
    # A deleted note (chunks cascade) and a new embedding pass: reloads.
    (example_vault / "Inbox.md").unlink()
    sync_vault(indexed, example_vault)
    second = cache.get(indexed)
    assert second is not first and len(second or []) < len(first)
    # Another model asked for: no snapshot.
    assert cache.get(indexed, ModelInfo("other", 64)) is None
    assert cache.get(indexed, ModelInfo("test/hash-64", 64)) is second


def test_cache_sees_commits_from_another_connection(
    tmp_path: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    cache = VectorCache()
    reader = connect(tmp_path / "data" / "index.db")
    assert cache.get(reader) is None
    embed_pending(indexed, hash_embedder)
    snapshot = cache.get(reader)
    assert snapshot is not None and len(snapshot) > 0
    reader.close()


def test_a_young_snapshot_is_kept_while_batches_land(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    cache = VectorCache(min_interval=60.0)
    batches = iter(range(3))
    embed_pending(indexed, hash_embedder, batch_size=4, should_stop=lambda: next(batches, 9) == 9)
    partial = cache.get(indexed)
    assert partial is not None and cache.loads == 1
    embed_pending(indexed, hash_embedder)  # every other chunk lands
    assert cache.get(indexed) is partial and cache.loads == 1  # younger than min_interval
    # Another model's vectors are never served, however young the snapshot.
    embed_pending(indexed, HashEmbedder("test/other-32", 32))
    switched = cache.get(indexed)
    assert switched is not None and switched.model.name == "test/other-32"
    assert cache.loads == 2

    eager = VectorCache()  # the default: always current
    before = eager.get(indexed)
    embed_pending(indexed, hash_embedder)
    after = eager.get(indexed)
    assert before is not None and after is not None and after is not before
    assert after.model.name == "test/hash-64" and eager.loads == 2


def test_new_vectors_are_appended_to_the_snapshot_without_a_reload(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    cache = VectorCache()
    batches = iter(range(3))
    embed_pending(indexed, hash_embedder, batch_size=4, should_stop=lambda: next(batches, 9) == 9)
    partial = cache.get(indexed)
    assert partial is not None and cache.loads == 1
    embed_pending(indexed, hash_embedder)
    grown = cache.get(indexed)
    assert grown is not None and grown is not partial
    assert (cache.loads, cache.appends) == (1, 1)
    fresh = load_vector_index(indexed)
    assert fresh is not None and len(grown) == len(fresh) > len(partial)

    def rows(index: VectorIndex) -> dict[int, tuple[int, bytes]]:
        return {
            int(c): (int(f), index.matrix[i].tobytes())
            for i, (c, f) in enumerate(zip(index.chunk_ids, index.file_ids, strict=True))
        }

    assert rows(grown) == rows(fresh)
    assert grown.signature == fresh.signature and grown.top_vector == fresh.top_vector
    assert len(partial) < len(grown)  # the earlier snapshot did not change under its readers
    # A chunk change (a deleted note) is not an append: the whole matrix is loaded again.
    (example_vault / "Inbox.md").unlink()
    sync_vault(indexed, example_vault)
    assert cache.get(indexed) is not grown and cache.loads == 2


def test_appends_fill_spare_rows_and_leave_earlier_snapshots_alone(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    cache = VectorCache()
    snapshots: list[VectorIndex] = []

    def look(done: int, total: int) -> None:
        index = cache.get(indexed)
        if index is not None:
            snapshots.append(index)

    embed_pending(indexed, hash_embedder, batch_size=8, progress=look)
    assert cache.loads == 1 and cache.appends == len(snapshots) - 1 > 3
    final = load_vector_index(indexed)
    assert final is not None
    for earlier, later in itertools.pairwise(snapshots):
        assert len(earlier) < len(later)
        assert np.array_equal(later.matrix[: len(earlier)], earlier.matrix)
        assert np.array_equal(later.chunk_ids[: len(earlier)], earlier.chunk_ids)
    last = snapshots[-1]
    order = np.argsort(last.chunk_ids)
    assert np.array_equal(last.chunk_ids[order], final.chunk_ids)
    assert np.array_equal(last.file_ids[order], final.file_ids)
    assert np.array_equal(last.matrix[order], final.matrix)


def test_loaded_matrix_matches_the_stored_blobs(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    embed_pending(indexed, hash_embedder)
    index = load_vector_index(indexed)
    assert index is not None and index.matrix.dtype == np.float32
    cid = int(index.chunk_ids[5])
    blob = indexed.execute(
        "SELECT v.vector FROM chunks c JOIN chunk_vectors v ON v.text_hash = c.text_hash"
        " WHERE c.id = ?",
        (cid,),
    ).fetchone()[0]
    assert np.array_equal(index.matrix[5], from_blob(blob, 64))


# --- a remote OpenAI-compatible server ----------------------------------------------------


class _Embeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, object]]] = []
    model = HashEmbedder(dimension=24)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization")})
        vectors = self.model.embed(body["input"]) * 3.0  # servers need not normalise
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in reversed(list(enumerate(vectors)))  # any order: sorted by index
        ]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _Embeddings.requests.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_remote_embeddings_end_to_end(embeddings_server: str, indexed: sqlite3.Connection) -> None:
    embedder = select_embedder(
        {
            "VAULTPILOT_EMBEDDINGS": "openai",
            "VAULTPILOT_EMBEDDINGS_BASE_URL": embeddings_server,
            "VAULTPILOT_EMBEDDINGS_MODEL": "tiny-remote",
            "OPENAI_API_KEY": "sk-local",
        }
    )
    report = embed_pending(indexed, embedder, batch_size=64)
    assert report.model == "tiny-remote" and report.pending == 0 and report.embedded > 100
    assert {r["path"] for r in _Embeddings.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in _Embeddings.requests} == {"Bearer sk-local"}
    result = hybrid_search(
        indexed, "Clint Yeastwood starter", embedder=embedder, vectors=VectorCache(), limit=3
    )
    assert result.mode == "hybrid" and result.notice is None
    assert result.hits[0].path == "Recipes/Sourdough Starter.md"
    assert result.hits[0].vector_rank is not None


def test_unreachable_embedding_server_falls_back_to_keywords(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    embed_pending(indexed, hash_embedder)
    down = OpenAIEmbedder("http://127.0.0.1:9/v1", "test/hash-64", dimension=64, retries=0)
    result = hybrid_search(indexed, "sourdough starter", embedder=down, vectors=VectorCache())
    assert result.mode == "keyword"
    assert "Could not reach the embedding server" in (result.notice or "")
    assert result.hits[0].path == "Recipes/Sourdough Starter.md"
