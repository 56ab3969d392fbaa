"""The background embedder: woken by syncs, resumable, one per index, never failing loudly."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.semantic.conftest import HashEmbedder
from vaultpilot.index.background import BackgroundEmbedder, EmbedLock, lock_holder
from vaultpilot.index.db import connect
from vaultpilot.index.embedding import EmbeddingModelMissing, EmbeddingServiceError
from vaultpilot.index.embedding.base import Vectors
from vaultpilot.index.search import search
from vaultpilot.index.semantic import embed_pending, embedding_status
from vaultpilot.index.sync import sync_vault


def _db(conn: sqlite3.Connection) -> Path:
    return Path(conn.execute("PRAGMA database_list").fetchone()[2])


@pytest.fixture
def started() -> Iterator[list[BackgroundEmbedder]]:
    """Background embedders made by a test, always stopped at its end."""
    made: list[BackgroundEmbedder] = []
    yield made
    for bg in made:
        assert bg.stop(5.0)


def _start(made: list[BackgroundEmbedder], bg: BackgroundEmbedder) -> BackgroundEmbedder:
    made.append(bg)
    bg.start()
    return bg


def test_first_pass_embeds_everything(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder, started: list[BackgroundEmbedder]
) -> None:
    bg = _start(started, BackgroundEmbedder(_db(indexed), lambda: hash_embedder, debounce=0))
    snap = bg.wait_idle(30)
    assert snap.state == "idle", snap
    assert snap.passes == 1
    assert snap.model == "test/hash-64"
    assert snap.done == snap.total > 0
    status = embedding_status(indexed)
    assert status.complete and status.embedded == status.chunks > 0


def test_a_wake_after_a_sync_embeds_only_the_new_text(
    indexed: sqlite3.Connection,
    example_vault: Path,
    hash_embedder: HashEmbedder,
    started: list[BackgroundEmbedder],
) -> None:
    bg = _start(started, BackgroundEmbedder(_db(indexed), lambda: hash_embedder, debounce=0))
    bg.wait_idle(30)
    before = hash_embedder.calls

    bg.wake()  # nothing changed: no pass, no model call
    assert bg.wait_idle(10).passes == 1
    assert hash_embedder.calls == before

    note = example_vault / "Background embedding.md"
    note.write_text("# Zeppelin hangar\n\nThe quokka ledger moved to the annex.\n")
    sync_vault(indexed, example_vault)
    hash_embedder.seen.clear()
    bg.wake()
    snap = bg.wait_idle(30)
    assert snap.passes == 2
    assert len(hash_embedder.seen) == 1 and "quokka ledger" in hash_embedder.seen[0]
    assert embedding_status(indexed).complete


def test_a_poll_notices_another_process_sync_without_a_wake(
    indexed: sqlite3.Connection,
    example_vault: Path,
    hash_embedder: HashEmbedder,
    started: list[BackgroundEmbedder],
) -> None:
    bg = _start(
        started, BackgroundEmbedder(_db(indexed), lambda: hash_embedder, debounce=0, poll=0.1)
    )
    bg.wait_idle(30)
    (example_vault / "Polled.md").write_text("A note about marmalade logistics.\n")
    sync_vault(indexed, example_vault)
    deadline = time.monotonic() + 10
    while not embedding_status(indexed).complete and time.monotonic() < deadline:
        time.sleep(0.05)
    assert embedding_status(indexed).complete
    assert any("marmalade logistics" in t for t in hash_embedder.seen)


def test_a_missing_model_is_a_state_not_a_crash_and_keywords_still_work(
    indexed: sqlite3.Connection, started: list[BackgroundEmbedder]
) -> None:
    def load() -> HashEmbedder:
        raise EmbeddingModelMissing("The offline model is not built; run the build command.")

    bg = _start(started, BackgroundEmbedder(_db(indexed), load, debounce=0))
    snap = bg.wait_idle(30)
    assert snap.state == "unavailable"
    assert snap.problem == "The offline model is not built; run the build command."
    assert search(indexed, "meeting")[0]  # keyword search is unaffected


class _Flaky(HashEmbedder):
    """Fails its first ``failures`` calls the way an unreachable embedding server does."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.failures > 0:
            self.failures -= 1
            raise EmbeddingServiceError("The embedding server at http://localhost:9 refused.")
        return super().embed(texts)


def test_a_failing_server_is_retried_after_a_backoff(
    indexed: sqlite3.Connection, started: list[BackgroundEmbedder]
) -> None:
    flaky = _Flaky(failures=2)
    bg = _start(started, BackgroundEmbedder(_db(indexed), lambda: flaky, debounce=0, backoff=0.2))
    seen_failed = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        snap = bg.progress()
        if snap.state == "failed":
            seen_failed = True
            assert snap.problem is not None and "refused" in snap.problem
            assert snap.retry_in is not None and snap.retry_in <= 0.4
        if snap.state == "idle":
            break
        time.sleep(0.02)
    assert seen_failed
    assert bg.progress().state == "idle"
    assert embedding_status(indexed).complete


class _Slow(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.started.set()
        time.sleep(0.05)
        return super().embed(texts)


def test_stop_ends_between_batches_and_the_next_pass_resumes(
    indexed: sqlite3.Connection, started: list[BackgroundEmbedder]
) -> None:
    slow = _Slow()
    bg = BackgroundEmbedder(_db(indexed), lambda: slow, debounce=0, batch_size=1)
    bg.start()
    assert slow.started.wait(10)
    assert bg.stop(5.0)
    assert bg.progress().state == "stopped"
    partial = embedding_status(indexed)
    assert 0 < partial.embedded < partial.chunks

    fresh = HashEmbedder()
    report = embed_pending(indexed, fresh)
    assert report.embedded == len(fresh.seen) <= partial.chunks - partial.embedded
    assert embedding_status(indexed).complete


def test_only_one_embedder_per_index(
    indexed: sqlite3.Connection, hash_embedder: HashEmbedder, started: list[BackgroundEmbedder]
) -> None:
    db = _db(indexed)
    with EmbedLock(db, "cli") as held:
        assert held.acquire()
        assert not EmbedLock(db, "other").acquire()
        assert lock_holder(db) is not None and lock_holder(db).endswith("cli")  # type: ignore[union-attr]
        bg = _start(started, BackgroundEmbedder(db, lambda: hash_embedder, debounce=0, poll=0.1))
        snap = bg.wait_idle(10)
        assert snap.state == "busy"
        assert snap.problem is not None and "cli" in snap.problem
        assert hash_embedder.calls == 0
    assert lock_holder(db) is None
    deadline = time.monotonic() + 10
    while bg.progress().state != "idle" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bg.progress().state == "idle"
    assert embedding_status(indexed).complete


def test_the_lock_is_seen_from_another_process_and_freed_when_it_dies(
    indexed: sqlite3.Connection,
) -> None:
    db = _db(indexed)
    code = (
        "import sys; from pathlib import Path; from vaultpilot.index.background import EmbedLock;"
        f"lock = EmbedLock(Path({str(db)!r}), 'server'); assert lock.acquire();"
        "print('held', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert lock_holder(db) == f"pid {child.pid}, server"
        assert not EmbedLock(db, "cli").acquire()
    finally:
        child.kill()
        child.wait(10)
    assert lock_holder(db) is None
    assert EmbedLock(db, "cli").acquire()


def test_a_broken_index_path_fails_cleanly(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    bg = BackgroundEmbedder(blocker / "index.db", lambda: hash_embedder, debounce=0)
    bg.start()
    try:
        deadline = time.monotonic() + 10
        while bg.progress().state == "starting" and time.monotonic() < deadline:
            time.sleep(0.02)
        snap = bg.progress()
        assert snap.state == "failed"
        assert snap.problem is not None and "index" in snap.problem
    finally:
        assert bg.stop(5.0)


def test_searches_on_another_connection_run_during_a_pass(
    indexed: sqlite3.Connection, started: list[BackgroundEmbedder]
) -> None:
    slow = _Slow()
    bg = _start(started, BackgroundEmbedder(_db(indexed), lambda: slow, debounce=0, batch_size=1))
    assert slow.started.wait(10)
    reader = connect(_db(indexed))
    try:
        t0 = time.perf_counter()
        assert search(reader, "meeting")[0]
        assert time.perf_counter() - t0 < 1.0
        assert bg.progress().state == "embedding"
    finally:
        reader.close()
