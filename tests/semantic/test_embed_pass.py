"""The embedding pass: incremental re-embedding, deletions, model change, interruption and resume,
coverage, and the choice of embedder from settings."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.index.helpers import write
from tests.semantic.conftest import HashEmbedder
from vaultpilot.errors import SetupError
from vaultpilot.index.db import connect
from vaultpilot.index.embedding import EmbeddingModelMissing, OpenAIEmbedder
from vaultpilot.index.embedding.base import Vectors
from vaultpilot.index.keyword_side import keyword_side
from vaultpilot.index.semantic import (
    embed_pending,
    embedding_coverage,
    embedding_status,
    select_embedder,
)
from vaultpilot.index.sync import sync_vault
from vaultpilot.index.vectors import ModelInfo, from_blob, recorded_model


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])


def distinct_texts(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(DISTINCT text_hash) FROM chunks").fetchone()[0])


def test_first_pass_embeds_every_chunk_once(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    seen: list[tuple[int, int]] = []
    report = embed_pending(indexed, hash_embedder, progress=lambda d, t: seen.append((d, t)))
    assert report.notes_chunked == 47
    assert report.chunks == chunk_count(indexed) > 100
    assert report.embedded == distinct_texts(indexed) == len(hash_embedder.seen)
    assert report.pending == 0 and not report.stopped and not report.model_changed
    assert seen[0] == (0, report.embedded) and seen[-1] == (report.embedded, report.embedded)
    assert embedding_coverage(indexed) == (report.chunks, report.chunks)
    status = embedding_status(indexed)
    assert status.complete and status.model == "test/hash-64" and status.notes_pending == 0
    assert recorded_model(indexed) == ModelInfo("test/hash-64", 64)
    blob = indexed.execute("SELECT vector FROM chunk_vectors LIMIT 1").fetchone()[0]
    assert np.isclose(np.linalg.norm(from_blob(blob, 64)), 1.0)

    again = embed_pending(indexed, hash_embedder)
    assert (again.notes_chunked, again.embedded) == (0, 0)


def test_only_changed_sections_are_re_embedded(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    embed_pending(indexed, hash_embedder)
    before = chunk_count(indexed)
    note = example_vault / "Recipes" / "Sourdough Starter.md"
    write(note.parent, note.name, note.read_text("utf-8").replace("Clint Yeastwood", "Bread Pitt"))
    sync_vault(indexed, example_vault)
    assert embedding_status(indexed).notes_pending == 1

    hash_embedder.seen.clear()
    report = embed_pending(indexed, hash_embedder)
    assert report.notes_chunked == 1
    assert report.embedded == 1
    assert (
        hash_embedder.seen[0].startswith("Sourdough Starter\n\n")
        and "Bread Pitt" in (hash_embedder.seen[0])
    )
    assert report.removed_vectors == 1  # the old text of that section
    assert chunk_count(indexed) == before
    assert embedding_coverage(indexed) == (before, before)


def test_a_touched_but_unchanged_note_is_not_re_embedded(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    embed_pending(indexed, hash_embedder)
    note = example_vault / "Inbox.md"
    write(note.parent, note.name, note.read_text("utf-8"))  # same bytes, new mtime
    sync_vault(indexed, example_vault)
    hash_embedder.seen.clear()
    report = embed_pending(indexed, hash_embedder)
    assert (report.notes_chunked, report.embedded) == (0, 0)


def test_deleted_and_renamed_notes(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    embed_pending(indexed, hash_embedder)
    fid = indexed.execute("SELECT id FROM files WHERE path = 'Recipes/Weeknight Dal.md'").fetchone()
    (example_vault / "Recipes" / "Weeknight Dal.md").unlink()
    (example_vault / "Travel" / "Norway Fjords.md").rename(example_vault / "Travel" / "Norway.md")
    sync_vault(indexed, example_vault)
    # Chunks go with their file row, in the sync itself.
    assert indexed.execute("SELECT COUNT(*) FROM chunks WHERE file_id = ?", fid).fetchone()[0] == 0

    hash_embedder.seen.clear()
    report = embed_pending(indexed, hash_embedder)
    assert report.notes_chunked == 1  # the renamed note: a new file row
    assert all(t.startswith("Norway > ") or t.startswith("Norway\n") for t in hash_embedder.seen)
    assert report.removed_vectors > 0  # the dal and the old title's chunks
    orphans = indexed.execute(
        "SELECT COUNT(*) FROM chunk_vectors v WHERE NOT EXISTS"
        " (SELECT 1 FROM chunks c WHERE c.text_hash = v.text_hash)"
    ).fetchone()[0]
    assert orphans == 0
    embedded, total = embedding_coverage(indexed)
    assert embedded == total > 0


def test_rebuilding_the_index_keeps_vectors_of_unchanged_text(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    first = embed_pending(indexed, hash_embedder)
    sync_vault(indexed, example_vault, rebuild=True)
    assert chunk_count(indexed) == 0
    again = embed_pending(indexed, hash_embedder)
    assert again.notes_chunked == 47 and again.embedded == 0
    assert again.chunks == first.chunks


def _counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    files, chunks, vectors = conn.execute(
        "SELECT (SELECT COUNT(*) FROM files), (SELECT COUNT(*) FROM chunks),"
        " (SELECT COUNT(*) FROM chunk_vectors)"
    ).fetchone()
    return int(files), int(chunks), int(vectors)


def test_a_rebuild_is_one_change_and_an_interrupted_one_leaves_the_index_it_had(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder, tmp_path: Path
) -> None:
    embed_pending(indexed, hash_embedder)
    before = _counts(indexed)
    seen: list[tuple[int, int, int]] = []
    reader = connect(tmp_path / "data" / "index.db")

    def look_then_stop(done: int, total: int) -> None:
        seen.append(_counts(reader))  # another process reading while the rebuild runs
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync_vault(indexed, example_vault, rebuild=True, progress=look_then_stop)
    assert seen == [before]
    assert _counts(indexed) == before
    # Uninterrupted, the notes are back at once; their chunks wait for the embedding pass.
    sync_vault(
        indexed, example_vault, rebuild=True, progress=lambda d, t: seen.append(_counts(reader))
    )
    assert all(s == before for s in seen[1:])
    assert _counts(indexed)[0] == before[0] and _counts(indexed)[2] == before[2]
    reader.close()


def test_vectors_stay_while_another_process_leaves_notes_to_chunk(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder, tmp_path: Path
) -> None:
    first = embed_pending(indexed, hash_embedder)
    other = connect(tmp_path / "data" / "index.db")
    rebuilt: list[bool] = []

    def meanwhile(done: int, total: int) -> None:
        if not rebuilt:  # another process rebuilds the index while this pass embeds
            sync_vault(other, example_vault, rebuild=True)
            rebuilt.append(True)

    report = embed_pending(indexed, hash_embedder, progress=meanwhile)
    assert rebuilt and report.removed_vectors == 0
    assert _counts(indexed)[2] >= first.embedded
    again = embed_pending(indexed, hash_embedder)
    assert again.notes_chunked == 47 and again.embedded == 0  # nothing embedded twice
    other.close()


def test_changing_the_model_re_embeds_everything(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    first = embed_pending(indexed, hash_embedder)
    other = HashEmbedder("test/hash-32", 32)
    report = embed_pending(indexed, other)
    assert report.model_changed and report.notes_chunked == 0
    assert report.embedded == first.embedded
    assert recorded_model(indexed) == ModelInfo("test/hash-32", 32)
    lengths = {r[0] for r in indexed.execute("SELECT length(vector) FROM chunk_vectors")}
    assert lengths == {32 * 4}
    assert embedding_status(indexed).model == "test/hash-32"


def test_should_stop_then_resume_loses_nothing(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    batches = {"n": 0}

    def stop_after_two() -> bool:
        batches["n"] += 1
        return batches["n"] > 2 + 1  # +1: asked once before chunking

    report = embed_pending(indexed, hash_embedder, should_stop=stop_after_two, batch_size=16)
    assert report.stopped and report.embedded == 32
    assert report.pending == distinct_texts(indexed) - 32
    embedded, total = embedding_coverage(indexed)
    assert 32 <= embedded < total

    resumed = HashEmbedder()
    rest = embed_pending(indexed, resumed, batch_size=16)
    assert rest.embedded == report.pending and rest.pending == 0
    assert not set(hash_embedder.seen) & set(resumed.seen)  # nothing embedded twice


class Crash(Exception):
    pass


class CrashingEmbedder(HashEmbedder):
    """Fails on its n-th call, as a crash or Ctrl-C in the middle of a batch would."""

    def __init__(self, fail_on: int, error: BaseException) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.error = error

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.calls + 1 == self.fail_on:
            self.calls += 1
            raise self.error
        return super().embed(texts)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), Crash("model died")])
def test_interruption_mid_batch_keeps_committed_batches(
    indexed: sqlite3.Connection, error: BaseException
) -> None:
    crashing = CrashingEmbedder(fail_on=3, error=error)
    with pytest.raises(type(error)):
        embed_pending(indexed, crashing, batch_size=10)
    assert embedding_coverage(indexed)[0] >= 20  # two committed batches (shared texts count)
    assert not indexed.in_transaction
    resumed = HashEmbedder()
    report = embed_pending(indexed, resumed, batch_size=10)
    assert report.pending == 0
    assert report.embedded == distinct_texts(indexed) - 20
    embedded, total = embedding_coverage(indexed)
    assert embedded == total


def test_keyword_search_works_while_embedding(indexed: sqlite3.Connection, tmp_path: Path) -> None:
    """A slow embedding pass on one connection; keyword queries on another never wait long."""
    gate = threading.Event()

    class Slow(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            gate.set()
            threading.Event().wait(0.02)
            return super().embed(texts)

    db = tmp_path / "data" / "index.db"
    worker_conn = connect(db)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            embed_pending(worker_conn, Slow(), batch_size=16)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    assert gate.wait(10)
    reader = connect(db)
    found = 0
    while thread.is_alive():
        hits, _ = keyword_side(reader, "sourdough starter", pool=5)
        found += bool(hits)
    thread.join()
    worker_conn.close()
    reader.close()
    assert not errors and found > 0


def test_status_counts_notes_waiting_to_be_chunked(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    status = embedding_status(indexed)
    assert (status.embedded, status.chunks, status.notes_pending) == (0, 0, 47)
    assert status.model is None and not status.complete
    embed_pending(indexed, hash_embedder)
    write(example_vault, "New.md", "# New\n\nfresh words\n")
    sync_vault(indexed, example_vault)
    assert embedding_status(indexed).notes_pending == 1


def test_unreadable_and_empty_notes_have_no_chunks(
    example_vault: Path, indexed: sqlite3.Connection, hash_embedder: HashEmbedder
) -> None:
    write(example_vault, "Binary.md", b"\xff\xfe\x00garbage")
    write(example_vault, "Blank.md", "")
    sync_vault(indexed, example_vault)
    embed_pending(indexed, hash_embedder)
    rows = indexed.execute(
        "SELECT f.path, COUNT(c.id) FROM files f LEFT JOIN chunks c ON c.file_id = f.id"
        " WHERE f.path IN ('Binary.md', 'Blank.md') GROUP BY f.path"
    ).fetchall()
    assert dict(rows) == {"Binary.md": 0, "Blank.md": 0}
    assert embedding_status(indexed).notes_pending == 0


# --- choosing the embedder ----------------------------------------------------------------


def test_local_is_the_default_and_reports_a_missing_model(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelMissing, match="make install-model"):
        select_embedder({}, model_dir=tmp_path / "none")
    with pytest.raises(EmbeddingModelMissing):
        select_embedder({"VAULTPILOT_EMBEDDINGS": "LOCAL"}, model_dir=tmp_path / "none")


def test_openai_compatible_server_from_settings() -> None:
    embedder = select_embedder(
        {
            "VAULTPILOT_EMBEDDINGS": "openai",
            "VAULTPILOT_EMBEDDINGS_BASE_URL": "http://localhost:11434",
            "VAULTPILOT_EMBEDDINGS_MODEL": "nomic-embed-text",
        }
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.url == "http://localhost:11434/v1/embeddings"
    assert embedder.model_name == "nomic-embed-text"
    default = select_embedder({"VAULTPILOT_EMBEDDINGS": "openai", "OPENAI_API_KEY": "sk-test"})
    assert isinstance(default, OpenAIEmbedder)
    assert default.url == "https://api.openai.com/v1/embeddings"
    assert default.model_name == "text-embedding-3-small"


def test_bad_embedding_settings_are_setup_errors() -> None:
    with pytest.raises(SetupError, match="OPENAI_API_KEY"):
        select_embedder({"VAULTPILOT_EMBEDDINGS": "openai"})
    with pytest.raises(SetupError, match="'local'"):
        select_embedder({"VAULTPILOT_EMBEDDINGS": "sentencepiece"})


def test_a_model_switch_by_another_process_stops_the_pass(
    indexed: sqlite3.Connection, tmp_path: Path
) -> None:
    other = connect(tmp_path / "data" / "index.db")

    class Switching(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            if self.calls == 1:  # while our second batch is being embedded
                embed_pending(other, HashEmbedder("test/other", 64), batch_size=1000)
            return super().embed(texts)

    with pytest.raises(SetupError, match="switched to another embedding model"):
        embed_pending(indexed, Switching(), batch_size=8)
    assert recorded_model(indexed) == ModelInfo("test/other", 64)
    assert embedding_status(indexed).complete  # the other pass finished; ours wrote nothing
    other.close()
