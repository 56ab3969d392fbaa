"""The embedding pass: chunk the notes that changed, embed the chunks that lack a vector.

``embed_pending(conn, embedder)`` brings the vectors in ``index.db`` up to date with the notes
the last sync indexed. It reads note bodies (``notes_fts``) and properties from the index, never
from disk, and is safe to stop at any moment:

1. The embedder's model name and dimension are recorded; if another model made the stored
   vectors, they are all dropped (and re-embedded below).
2. Notes whose content hash (``files.hash``) differs from the one their chunks were made from,
   or that have no chunks yet, or were chunked by an older chunker version, are chunked again
   (``chunks.chunk_note``; a note without body text by its properties), a few hundred notes
   per transaction. Deleted notes' chunks are already gone: they cascade with the file row.
3. Chunks whose text hash has no vector are embedded ``batch_size`` at a time, each batch
   committed in its own short transaction, so an interruption (Ctrl-C, a crash, ``should_stop``)
   loses at most one batch and the next run resumes where this one stopped. A chunk whose text
   did not change keeps its vector, whatever happened to the note around it.
4. Vectors no chunk refers to any more are deleted.

The model runs outside any transaction, so keyword search and syncs from other connections go on
meanwhile (WAL). Run it in a thread or process with its own connection for background work.

``embedding_coverage(conn)`` gives (embedded chunks, chunks) for ``vaultpilot status``;
``embedding_status`` adds the notes still waiting to be chunked and the recorded model.
``select_embedder(env)`` picks the offline model or an OpenAI-compatible server from settings.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vaultpilot.errors import InvalidArgumentError, SetupError
from vaultpilot.index.chunks import CHUNKER_VERSION, DEFAULT_MAX_TOKENS, chunk_note
from vaultpilot.index.embedding import (
    Embedder,
    EmbeddingServiceError,
    OpenAIEmbedder,
    load_default_embedder,
)
from vaultpilot.index.vectors import (
    ModelInfo,
    bump_generation,
    mark_vectors_added,
    record_model,
    recorded_model,
    store_vectors,
)

__all__ = [
    "EMBEDDINGS_BASE_URL_ENV",
    "EMBEDDINGS_ENV",
    "EMBEDDINGS_MODEL_ENV",
    "EmbedReport",
    "EmbeddingStatus",
    "chunk_pending_notes",
    "embed_pending",
    "embedding_coverage",
    "embedding_status",
    "select_embedder",
]

EMBEDDINGS_ENV = "VAULTPILOT_EMBEDDINGS"
EMBEDDINGS_BASE_URL_ENV = "VAULTPILOT_EMBEDDINGS_BASE_URL"
EMBEDDINGS_MODEL_ENV = "VAULTPILOT_EMBEDDINGS_MODEL"
_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_REMOTE_MODEL = "text-embedding-3-small"

ProgressFn = Callable[[int, int], None]
StopFn = Callable[[], bool]
_NOTES_PER_TXN = 200


@dataclass(slots=True)
class EmbedReport:
    """What one ``embed_pending`` run did."""

    model: str = ""
    model_changed: bool = False  # another model made the stored vectors: they were dropped
    notes_chunked: int = 0
    chunks: int = 0  # chunks in the index after the run
    embedded: int = 0  # vectors computed by this run
    pending: int = 0  # chunk texts still without a vector (non-zero only when stopped)
    removed_vectors: int = 0  # vectors no chunk needed any more
    stopped: bool = False  # should_stop asked to stop before the end
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    """How far the embedding pass has got (see ``embedding_status``)."""

    embedded: int  # chunks that have a vector
    chunks: int  # chunks in the index
    notes_pending: int  # notes not chunked yet, or changed since they were chunked
    model: str | None  # the model the stored vectors belong to

    @property
    def complete(self) -> bool:
        return self.notes_pending == 0 and self.embedded == self.chunks


@contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    """One short write transaction; rolled back on any exception (Ctrl-C included)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _source_key(note_hash: str | None, max_tokens: int) -> str:
    """What chunks were made from: the note version and the chunker settings."""
    return f"{note_hash}|v{CHUNKER_VERSION}|{max_tokens}"


_PENDING_NOTES = (
    "SELECT f.id FROM files f LEFT JOIN chunked_notes c ON c.file_id = f.id"
    " WHERE f.is_note = 1 AND (c.file_id IS NULL OR c.source IS NOT"
    " (COALESCE(f.hash, 'None') || ?))"
)


def _pending_note_ids(conn: sqlite3.Connection, max_tokens: int) -> list[int]:
    suffix = _source_key("", max_tokens)
    return [r[0] for r in conn.execute(_PENDING_NOTES + " ORDER BY f.id", (suffix,))]


def chunk_pending_notes(
    conn: sqlite3.Connection,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    should_stop: StopFn | None = None,
) -> int:
    """Chunk every note whose chunks are missing or stale; returns how many notes were done."""
    ids = _pending_note_ids(conn, max_tokens)
    done = 0
    for start in range(0, len(ids), _NOTES_PER_TXN):
        if should_stop is not None and should_stop():
            break
        batch = ids[start : start + _NOTES_PER_TXN]
        marks = ",".join("?" * len(batch))
        with _write(conn):
            # Read inside the write transaction, so a sync cannot change a note in between.
            rows = conn.execute(
                "SELECT f.id, f.title, f.hash, f.read_error, n.body FROM files f"  # noqa: S608
                f" LEFT JOIN notes_fts n ON n.rowid = f.id WHERE f.id IN ({marks})",
                batch,
            ).fetchall()
            conn.executemany("DELETE FROM chunks WHERE file_id = ?", [(r[0],) for r in rows])
            # A note whose body gives no chunk is embedded by its properties (chunks doc).
            properties: dict[int, list[tuple[str, str]]] = {}
            for fid, key, value in conn.execute(
                "SELECT file_id, key, value FROM properties"  # noqa: S608
                f" WHERE file_id IN ({marks}) AND value IS NOT NULL ORDER BY rowid",
                batch,
            ):
                properties.setdefault(int(fid), []).append((str(key), str(value)))
            chunk_rows: list[tuple[int, int, str, str, str]] = []
            for fid, title, _hash, read_error, body in rows:
                if read_error is None:
                    made = chunk_note(
                        title, body or "", max_tokens=max_tokens, properties=properties.get(fid, ())
                    )
                    for c in made:
                        chunk_rows.append((fid, c.seq, c.heading, c.text, c.text_hash))
            conn.executemany(
                "INSERT INTO chunks (file_id, seq, heading, text, text_hash)"
                " VALUES (?, ?, ?, ?, ?)",
                chunk_rows,
            )
            conn.executemany(
                "INSERT INTO chunked_notes (file_id, source) VALUES (?, ?)"
                " ON CONFLICT(file_id) DO UPDATE SET source = excluded.source",
                [(r[0], _source_key(r[2] or "None", max_tokens)) for r in rows],
            )
            bump_generation(conn)
        done += len(rows)
    return done


def _count_missing(conn: sqlite3.Connection) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(DISTINCT c.text_hash) FROM chunks c"
            " WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.text_hash = c.text_hash)"
        ).fetchone()[0]
    )


def _next_batch(conn: sqlite3.Connection, after: int, size: int) -> list[tuple[int, str, str]]:
    """Up to ``size`` (chunk id, hash, text) with distinct hashes lacking a vector, by id."""
    rows = conn.execute(
        "SELECT c.id, c.text_hash, c.text FROM chunks c WHERE c.id > ? AND NOT EXISTS"
        " (SELECT 1 FROM chunk_vectors v WHERE v.text_hash = c.text_hash) ORDER BY c.id LIMIT ?",
        (after, size * 2),
    ).fetchall()
    out: dict[str, tuple[int, str, str]] = {}
    for cid, h, text in rows:
        out.setdefault(h, (cid, h, text))
        if len(out) == size:
            break
    return list(out.values())


def embed_pending(
    conn: sqlite3.Connection,
    embedder: Embedder,
    *,
    progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    batch_size: int = 32,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> EmbedReport:
    """Bring chunks and vectors up to date (see the module doc); safe to interrupt.

    ``progress(done, total)`` is called after each committed batch (and once with 0 before the
    first); ``should_stop()`` is asked before each batch. Raises ``EmbeddingModelMissing`` or
    ``EmbeddingServiceError`` from the embedder; what was committed before stays.
    """
    if batch_size < 1:
        raise InvalidArgumentError("batch_size must be at least 1.")
    started = time.perf_counter()
    model = ModelInfo(embedder.model_name, int(embedder.dimension))
    report = EmbedReport(model=model.name)
    with _write(conn):
        report.model_changed = record_model(conn, model)

    report.notes_chunked = chunk_pending_notes(conn, max_tokens=max_tokens, should_stop=should_stop)
    total = _count_missing(conn)
    if progress is not None:
        progress(0, total)
    after = 0
    while True:
        if should_stop is not None and should_stop():
            report.stopped = True
            break
        batch = _next_batch(conn, after, batch_size)
        if not batch:
            break
        vectors = embedder.embed([text for _, _, text in batch])
        if vectors.shape != (len(batch), model.dimension):
            raise EmbeddingServiceError(
                f"The embedder {model.name} returned vectors of shape {vectors.shape} for "
                f"{len(batch)} texts; ({len(batch)}, {model.dimension}) were expected."
            )
        with _write(conn):
            if recorded_model(conn) != model:  # another process switched models meanwhile
                raise SetupError(
                    "The index was switched to another embedding model while embedding; "
                    "run the embedding again."
                )
            store_vectors(conn, ((h, vectors[i]) for i, (_, h, _) in enumerate(batch)))
            mark_vectors_added(conn)
        after = batch[-1][0]
        report.embedded += len(batch)
        if progress is not None:
            progress(report.embedded, max(total, report.embedded))

    if not report.stopped:
        report.removed_vectors = _collect_garbage(conn, max_tokens)
    report.pending = _count_missing(conn)
    report.chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    report.seconds = time.perf_counter() - started
    return report


def _collect_garbage(conn: sqlite3.Connection, max_tokens: int) -> int:
    """Delete the vectors no chunk uses, unless notes are waiting to be chunked (after a move,
    a rebuild or another process's sync their chunks are gone for a while, and their vectors
    are found again by their text once they are chunked)."""
    with _write(conn):
        waiting = conn.execute(
            f"SELECT 1 FROM ({_PENDING_NOTES}) LIMIT 1",  # noqa: S608
            (_source_key("", max_tokens),),
        ).fetchone()
        if waiting is not None:
            return 0
        removed = conn.execute(
            "DELETE FROM chunk_vectors WHERE NOT EXISTS"
            " (SELECT 1 FROM chunks c WHERE c.text_hash = chunk_vectors.text_hash)"
        ).rowcount
        if removed > 0:
            bump_generation(conn)
    return max(removed, 0)


def embedding_coverage(conn: sqlite3.Connection) -> tuple[int, int]:
    """(chunks that have a vector, chunks in the index), for ``vaultpilot status``."""
    embedded, total = conn.execute(
        "SELECT COUNT(v.text_hash), COUNT(*) FROM chunks c"
        " LEFT JOIN chunk_vectors v ON v.text_hash = c.text_hash"
    ).fetchone()
    return int(embedded), int(total)


def embedding_status(
    conn: sqlite3.Connection, *, max_tokens: int = DEFAULT_MAX_TOKENS
) -> EmbeddingStatus:
    """Coverage plus the notes still to chunk and the recorded model; reads only."""
    embedded, total = embedding_coverage(conn)
    suffix = _source_key("", max_tokens)
    pending = conn.execute(
        f"SELECT COUNT(*) FROM ({_PENDING_NOTES})",  # noqa: S608
        (suffix,),
    ).fetchone()[0]
    model = recorded_model(conn)
    return EmbeddingStatus(embedded, total, int(pending), model.name if model else None)


def select_embedder(
    env: Mapping[str, str] | None = None,
    *,
    model_dir: Path | None = None,
) -> Embedder:
    """The embedder the settings ask for.

    ``VAULTPILOT_EMBEDDINGS`` is ``local`` (default: the offline all-MiniLM-L6-v2) or
    ``openai``: any OpenAI-compatible ``/v1/embeddings`` server at
    ``VAULTPILOT_EMBEDDINGS_BASE_URL`` (default OpenAI's) with model
    ``VAULTPILOT_EMBEDDINGS_MODEL`` (default ``text-embedding-3-small``) and the key in
    ``OPENAI_API_KEY`` (optional for local servers such as Ollama:
    ``VAULTPILOT_EMBEDDINGS_BASE_URL=http://localhost:11434/v1``,
    ``VAULTPILOT_EMBEDDINGS_MODEL=nomic-embed-text``). Raises ``EmbeddingModelMissing`` when the
    offline model is not built, ``SetupError`` for an unknown choice.
    """
    env = os.environ if env is None else env
    kind = env.get(EMBEDDINGS_ENV, "local").strip().lower() or "local"
    if kind == "local":
        return load_default_embedder(model_dir)
    if kind == "openai":
        base_url = env.get(EMBEDDINGS_BASE_URL_ENV, "").strip() or _DEFAULT_BASE_URL
        model = env.get(EMBEDDINGS_MODEL_ENV, "").strip() or _DEFAULT_REMOTE_MODEL
        api_key = env.get("OPENAI_API_KEY", "").strip() or None
        if api_key is None and base_url == _DEFAULT_BASE_URL:
            raise SetupError(
                f"{EMBEDDINGS_ENV}=openai uses {_DEFAULT_BASE_URL}, which needs OPENAI_API_KEY. "
                f"Set it, or point {EMBEDDINGS_BASE_URL_ENV} at a local server such as "
                "http://localhost:11434/v1 (Ollama)."
            )
        return OpenAIEmbedder(base_url, model, api_key)
    raise SetupError(
        f"{EMBEDDINGS_ENV}={kind!r} is not a known choice; use 'local' (the offline model) "
        "or 'openai' (any OpenAI-compatible /v1/embeddings server)."
    )
