"""Chunk vectors in ``index.db`` and the in-memory matrix that vector search scans.

Storage: ``chunk_vectors`` holds one float32 little-endian BLOB per distinct chunk text hash;
``semantic_meta`` records the model name and dimension the vectors came from, a generation
number bumped by every write that changes which chunks exist or removes vectors
(``bump_generation``), and a counter bumped by every write that only adds vectors
(``mark_vectors_added``): a cached snapshot then takes in just the new rows.

Search: ``VectorIndex`` is a snapshot of every embedded chunk as one ``(n, dim)`` float32 matrix,
with the chunk and file id of each row. A query is one matrix-vector product and a partial sort:
on two cores 50k x 384 takes ~3 ms, against ~40 ms for sqlite-vec's k-NN (which cannot load into
the stdlib ``sqlite3`` here anyway: it is built without extension loading). Loading the snapshot
costs ~0.15 s per 50k chunks, so callers keep a ``VectorCache``: ``cache.get(conn, model)``
returns the current snapshot and reloads only when the index changed since it was taken.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from vaultpilot.index.embedding.base import Vectors

__all__ = [
    "ChunkMatch",
    "ModelInfo",
    "VectorCache",
    "VectorIndex",
    "bump_generation",
    "from_blob",
    "load_vector_index",
    "mark_vectors_added",
    "record_model",
    "recorded_model",
    "store_vectors",
    "stored_count",
    "to_blob",
]

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The model that produced the stored vectors."""

    name: str
    dimension: int


@dataclass(frozen=True, slots=True)
class ChunkMatch:
    """The best-matching chunk of one note: its ids and cosine similarity."""

    file_id: int
    chunk_id: int
    score: float
    second: float = 0.0  # the note's second-best chunk among those looked at (0: none)


def to_blob(vector: Vectors) -> bytes:
    """A vector as little-endian float32 bytes."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dimension: int) -> Vectors:
    """The inverse of ``to_blob``."""
    return np.frombuffer(blob, dtype="<f4").astype(np.float32).reshape(dimension)


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM semantic_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO semantic_meta (key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def recorded_model(conn: sqlite3.Connection) -> ModelInfo | None:
    """The model the stored vectors belong to, or None before the first embedding pass."""
    name, dim = _meta(conn, "model"), _meta(conn, "dimension")
    return None if name is None or dim is None else ModelInfo(name, int(dim))


def record_model(conn: sqlite3.Connection, model: ModelInfo) -> bool:
    """Record ``model`` (inside the caller's transaction). When it differs from the recorded
    one, every stored vector is dropped, since vectors of two models never mix; returns True
    then."""
    old = recorded_model(conn)
    if old == model:
        return False
    conn.execute("DELETE FROM chunk_vectors")
    _set_meta(conn, "model", model.name)
    _set_meta(conn, "dimension", str(model.dimension))
    bump_generation(conn)
    return old is not None


def bump_generation(conn: sqlite3.Connection) -> None:
    """Mark that chunks or vectors changed, so cached snapshots reload."""
    conn.execute(
        "INSERT INTO semantic_meta (key, value) VALUES ('generation', '1')"
        " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def mark_vectors_added(conn: sqlite3.Connection) -> None:
    """Mark that vectors were added and nothing else changed (a cached snapshot appends them)."""
    conn.execute(
        "INSERT INTO semantic_meta (key, value) VALUES ('appended', '1')"
        " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def _appended(conn: sqlite3.Connection) -> int:
    return int(_meta(conn, "appended") or 0)


def stored_count(conn: sqlite3.Connection) -> int:
    """How many chunk vectors the index holds, chunked or not (a rebuild keeps them, by the
    hash of the chunk's text)."""
    return int(conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0])


def store_vectors(conn: sqlite3.Connection, items: Iterable[tuple[str, Vectors]]) -> int:
    """Insert or replace vectors by chunk text hash (inside the caller's transaction)."""
    rows = [(h, to_blob(v)) for h, v in items]
    conn.executemany(
        "INSERT INTO chunk_vectors (text_hash, vector) VALUES (?, ?)"
        " ON CONFLICT(text_hash) DO UPDATE SET vector = excluded.vector",
        rows,
    )
    return len(rows)


def _signature(conn: sqlite3.Connection) -> tuple[int, int, int]:
    gen = _meta(conn, "generation")
    count, top = conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM chunks").fetchone()
    return int(gen or 0), int(count), int(top)


@dataclass(frozen=True, slots=True, eq=False)
class VectorIndex:
    """A snapshot of every embedded chunk (see the module doc). Read-only once built."""

    model: ModelInfo
    matrix: Vectors  # (n, dimension), unit rows
    chunk_ids: IdArray  # (n,)
    file_ids: IdArray  # (n,)
    signature: tuple[int, int, int] = (0, 0, 0)
    appended: int = 0  # the vectors-added counter this snapshot has taken in
    top_vector: int = 0  # the highest chunk_vectors.id in it
    # Arrays with spare rows after an append; matrix and ids are their first rows. Appending
    # writes past those rows only, so earlier snapshots sharing the arrays never change.
    _spare: tuple[Vectors, IdArray, IdArray] | None = field(default=None, repr=False)
    _centroids: dict[int, Vectors] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        """Cosine similarity of every row with the unit vector ``query``."""
        if query.shape != (self.model.dimension,):
            raise ValueError(
                f"query has shape {query.shape}; this index holds {self.model.dimension}-d vectors"
            )
        # ``q @ M.T`` (one dot product per row) runs 3-5x faster than ``M @ q`` in OpenBLAS
        # on two cores (measured, bench/bench_vectors.py): the same numbers either way.
        return query.astype(np.float32, copy=False) @ self.matrix.T

    def best_per_note(
        self,
        query: Vectors,
        *,
        limit: int,
        file_ids: Sequence[int] | None = None,
        exclude: int | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` notes whose best chunk is most similar to ``query``, best first.

        ``file_ids`` keeps only those notes; ``exclude`` leaves one note out.
        """
        if limit < 1 or len(self) == 0:
            return []
        sims = self.scores(query)
        if file_ids is not None or exclude is not None:
            keep = (
                np.isin(self.file_ids, np.fromiter(file_ids, dtype=np.int64))
                if file_ids is not None
                else np.ones(len(self), dtype=bool)
            )
            if exclude is not None:
                keep &= self.file_ids != exclude
            sims = np.where(keep, sims, np.float32(-np.inf))
        # Take more chunks than notes asked for (a note may own several of the best chunks),
        # widening until enough distinct notes are found or every row was looked at.
        k = min(len(self), max(limit * 8, 64))
        while True:
            top = np.argpartition(-sims, k - 1)[:k] if k < len(self) else np.arange(len(self))
            top = top[np.argsort(-sims[top], kind="stable")]
            out: list[ChunkMatch] = []
            seen: set[int] = set()
            for row in top.tolist():
                score = float(sims[row])
                if score == -np.inf:
                    break
                fid = int(self.file_ids[row])
                if fid in seen:
                    continue
                seen.add(fid)
                out.append(ChunkMatch(fid, int(self.chunk_ids[row]), score))
                if len(out) == limit:
                    return out
            if k >= len(self) or (out and sims[top[-1]] == -np.inf):
                return out
            k = min(len(self), k * 4)

    def note_matches(
        self,
        query: Vectors,
        *,
        limit: int,
        file_ids: Sequence[int] | None = None,
        also: Sequence[int] = (),
    ) -> tuple[list[ChunkMatch], dict[int, float]]:
        """The ``limit`` notes whose best chunk is most similar to ``query`` (each with its
        second-best chunk among the top rows looked at), and the best cosine of every one of
        them and of the notes ``also`` names that are embedded (their chunks are looked up
        directly, so a note found only by keywords still has its cosine).
        """
        if limit < 1 or len(self) == 0:
            return [], {}
        sims = self.scores(query)
        if file_ids is not None:
            keep = np.isin(self.file_ids, np.fromiter(file_ids, dtype=np.int64))
            sims = np.where(keep, sims, np.float32(-np.inf))
        k = min(len(self), max(limit * 8, 256))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(self) else np.arange(len(self))
        top = top[np.argsort(-sims[top], kind="stable")]
        best: dict[int, ChunkMatch] = {}
        for row in top.tolist():
            score = float(sims[row])
            if score == -np.inf:
                break
            fid = int(self.file_ids[row])
            found = best.get(fid)
            if found is None:
                if len(best) < limit:
                    best[fid] = ChunkMatch(fid, int(self.chunk_ids[row]), score)
            elif found.second == 0.0:
                best[fid] = replace(found, second=score)
        cosines = {fid: m.score for fid, m in best.items()}
        missing = [fid for fid in also if fid not in cosines]
        if missing:
            rows = np.flatnonzero(np.isin(self.file_ids, np.asarray(missing, dtype=np.int64)))
            for row, score in zip(rows.tolist(), sims[rows].tolist(), strict=True):
                fid = int(self.file_ids[row])
                if score != -np.inf and score > cosines.get(fid, -2.0):
                    cosines[fid] = float(score)
        return list(best.values()), cosines

    def note_vector(self, file_id: int) -> Vectors | None:
        """The unit mean of a note's chunk vectors (None when it has none)."""
        cached = self._centroids.get(file_id)
        if cached is not None:
            return cached
        rows = self.matrix[self.file_ids == file_id]
        if rows.shape[0] == 0:
            return None
        mean = rows.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0.0:
            return None
        vector: Vectors = (mean / norm).astype(np.float32)
        self._centroids[file_id] = vector
        return vector


def load_vector_index(conn: sqlite3.Connection) -> VectorIndex | None:
    """Every chunk that has a vector, as one snapshot; None before the first embedding pass."""
    model = recorded_model(conn)
    if model is None:
        return None
    appended = _appended(conn)  # read first: a later batch is then taken in by the next look
    signature = _signature(conn)
    rows = conn.execute(
        "SELECT c.id, c.file_id, v.id, v.vector FROM chunks c"
        " JOIN chunk_vectors v ON v.text_hash = c.text_hash ORDER BY c.id"
    ).fetchall()
    matrix, chunk_ids, file_ids, top = _arrays(rows, model.dimension)
    return VectorIndex(model, matrix, chunk_ids, file_ids, signature, appended, max(top, 0))


def _arrays(
    rows: list[tuple[int, int, int, bytes]], dimension: int
) -> tuple[Vectors, IdArray, IdArray, int]:
    width = dimension * 4
    kept = [r for r in rows if len(r[3]) == width]
    matrix = np.frombuffer(b"".join(r[3] for r in kept), dtype="<f4").astype(np.float32)
    ids = np.array([(r[0], r[1]) for r in kept], dtype=np.int64).reshape(-1, 2)
    top = max((r[2] for r in rows), default=0)
    return (
        matrix.reshape(len(kept), dimension),
        np.ascontiguousarray(ids[:, 0]),
        np.ascontiguousarray(ids[:, 1]),
        top,
    )


def _with_new_vectors(conn: sqlite3.Connection, index: VectorIndex) -> VectorIndex:
    """``index`` plus the chunks whose vectors were added since it was taken.

    Valid only when no chunk changed since (same ``signature``): the new vectors are then for
    texts that had none, so their chunks are not in ``index`` yet.
    """
    appended = _appended(conn)
    rows = conn.execute(
        "SELECT c.id, c.file_id, v.id, v.vector FROM chunk_vectors v"
        " JOIN chunks c ON c.text_hash = v.text_hash WHERE v.id > ? ORDER BY c.id",
        (index.top_vector,),
    ).fetchall()
    if not rows:
        return replace(index, appended=appended)
    matrix, chunk_ids, file_ids, top = _arrays(rows, index.model.dimension)
    n, k = len(index), len(matrix)
    spare = index._spare
    if spare is None or spare[0].shape[0] < n + k:
        # Grow by a quarter: a pass appending batch after batch copies the matrix a few times
        # in all, instead of once per batch (61 MB at 40k chunks).
        rows_ = n + k + max(256, (n + k) // 4)
        spare = (
            np.empty((rows_, index.model.dimension), dtype=np.float32),
            np.empty(rows_, dtype=np.int64),
            np.empty(rows_, dtype=np.int64),
        )
        spare[0][:n], spare[1][:n], spare[2][:n] = index.matrix, index.chunk_ids, index.file_ids
    spare[0][n : n + k], spare[1][n : n + k], spare[2][n : n + k] = matrix, chunk_ids, file_ids
    return VectorIndex(
        index.model,
        spare[0][: n + k],
        spare[1][: n + k],
        spare[2][: n + k],
        index.signature,
        appended,
        max(index.top_vector, top),
        spare,
    )


class VectorCache:
    """Holds the latest ``VectorIndex`` of one index database and reloads it when stale.

    Staleness is checked cheaply, per connection: SQLite's ``data_version`` (another connection
    committed) and the connection's ``total_changes`` (this one wrote), as they were when that
    connection last saw the current snapshot; only when either moved (or the snapshot changed
    since, or the connection is new to the cache) is the exact signature (generation, chunk
    count, highest chunk id) read, and only when that moved is the matrix loaded again
    (~0.2-0.3 s per 40k chunks). So the per-thread read connections of a server share one
    snapshot, each paying one signature read per change. When only vectors were added (an
    embedding pass committing a batch), just the new rows are read and appended. Thread-safe;
    one cache per database.

    ``min_interval`` (seconds, default 0) keeps a snapshot of the current model at least that
    long, so a background pass committing a batch every fraction of a second does not make
    every query refresh it. The vector side may then lag the index by up to ``min_interval``;
    it lags the notes anyway until they are embedded, and results for notes deleted meanwhile
    are dropped by the callers.
    """

    _CONNECTIONS = 64  # connections remembered (the oldest is forgotten: it just checks again)

    def __init__(self, *, min_interval: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._index: VectorIndex | None = None
        self._epoch = 0  # bumped whenever the snapshot changes
        # id(conn) -> (conn, (data_version, total_changes, epoch)) when it last saw the snapshot.
        # The connection itself is held so its id cannot be reused by another one meanwhile.
        self._seen: dict[int, tuple[sqlite3.Connection, tuple[int, int, int]]] = {}
        self._loaded_at = 0.0
        self._min_interval = min_interval
        self.loads = 0  # how many times the matrix was (re)loaded, for tests and benchmarks
        self.appends = 0  # how many times only new vectors were added to it

    def get(self, conn: sqlite3.Connection, model: ModelInfo | None = None) -> VectorIndex | None:
        """The current snapshot, or None when nothing is embedded or the vectors were made by
        another model than ``model`` (when given; compared by name and dimension)."""
        with self._lock:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            seen = self._seen.pop(id(conn), None)
            if self._index is None or seen is None or seen[1] != self._mark(conn, version):
                before = self._index
                settled = self._look(conn)
                if self._index is not before:
                    self._epoch += 1  # every other connection checks the new one once
                seen = (conn, self._mark(conn, version)) if settled else None
            if seen is not None:
                self._seen[id(conn)] = seen  # (re)inserted last: the oldest goes first
                if len(self._seen) > self._CONNECTIONS:
                    del self._seen[next(iter(self._seen))]
            index = self._index
        if index is None or (model is not None and index.model != model):
            return None
        return index

    def _mark(self, conn: sqlite3.Connection, version: int) -> tuple[int, int, int]:
        return version, conn.total_changes, self._epoch

    def _look(self, conn: sqlite3.Connection) -> bool:
        """Bring the snapshot in line with what ``conn`` sees; False when a young snapshot was
        kept (look again on the next call)."""
        recorded = recorded_model(conn)
        young = time.monotonic() - self._loaded_at < self._min_interval
        same_model = self._index is not None and self._index.model == recorded
        if recorded is None:
            self._index = None
        elif same_model and young:
            return False
        elif self._index is None or not same_model or self._index.signature != _signature(conn):
            self._index = load_vector_index(conn)
            self._loaded_at = time.monotonic()
            self.loads += 1
        elif self._index.appended != _appended(conn):
            self._index = _with_new_vectors(conn, self._index)
            self._loaded_at = time.monotonic()
            self.appends += 1
        return True

    def clear(self) -> None:
        """Forget the snapshot (the next ``get`` loads)."""
        with self._lock:
            self._index = None
            self._seen.clear()
