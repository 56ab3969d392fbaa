"""Embedding in the background: one thread per index, woken by syncs, one embedder per index.

``BackgroundEmbedder(db_path, load)`` runs ``semantic.embed_pending`` in a daemon thread on its
own SQLite connection, so keyword search, syncs and tool calls on other connections go on while
it works (WAL). The thread looks for work:

* at ``start()``;
* after ``wake()`` (the server calls it after every tool call; calls within ``debounce`` seconds
  of each other make one look);
* every ``poll`` seconds, to notice another process's sync (``vaultpilot index``), after
  calling ``refresh`` when given: the server passes a sync of the vault, so notes edited in
  Obsidian are indexed and embedded without waiting for a tool call.

A look runs a pass only when another connection committed since the last pass began (SQLite's
``data_version``), so a wake with nothing new costs one PRAGMA. ``stop()`` ends the pass between
two batches; what was committed stays, and the next pass, here or in ``vaultpilot embed``,
resumes from it.

Only one process embeds an index at a time: a pass holds ``EmbedLock``, an advisory lock on
``<index>.embedding.lock`` that the OS releases if the process dies. While another process holds
it the state is ``busy`` and the thread looks again at its next poll. ``lock_holder`` tells a
status line who holds it.

Failures never escape the thread. No model (not built, no embedding server configured) makes the
state ``unavailable``; semantic search then says why and ranks by keywords. An embedding server
that fails, or a database locked for too long, makes it ``failed`` with the message, and the
pass is tried again after a back-off (``backoff``, 5 s by default, doubling up to 5 min).
``progress()`` is a snapshot of all this for status lines and the server's API.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from vaultpilot.errors import ExternalError, SetupError, StorageError
from vaultpilot.index.db import connect
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.index.semantic import EmbeddingStatus, embed_pending
from vaultpilot.locations import tighten

__all__ = [
    "BackgroundEmbedder",
    "EmbedLock",
    "EmbedProgress",
    "EmbedState",
    "describe_coverage",
    "lock_holder",
    "lock_path",
]

log = logging.getLogger(__name__)

EmbedState = Literal["starting", "idle", "embedding", "busy", "unavailable", "failed", "stopped"]
_FIRST_BACKOFF = 5.0
_MAX_BACKOFF = 300.0


# ----- the lock: one embedding process per index


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".embedding.lock")


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class EmbedLock:
    """The right to embed one index; ``acquire()`` never waits.

    The lock file holds ``"<pid> <role>"`` of its holder, for ``lock_holder``. Locks are per open
    file, so two ``EmbedLock`` of one index exclude each other within a process too.
    """

    def __init__(self, db_path: Path, role: str) -> None:
        self.path = lock_path(db_path)
        self.role = role
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock if nobody holds it; True when this object now holds it."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StorageError(
                f"Could not open the lock file {self.path}: {exc.strerror}."
            ) from None
        try:
            _try_lock(fd)
        except OSError:
            os.close(fd)
            return False
        tighten(self.path)  # created 0600 above; an older, looser one is made so here
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()} {self.role}".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> EmbedLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(db_path: Path) -> str | None:
    """Who is embedding the index now (``"pid 123, vaultpilot serve"``), or None when nobody is."""
    probe = EmbedLock(db_path, "probe")
    if not lock_path(db_path).exists():
        return None
    try:
        if probe.acquire():
            probe.release()
            return None
    except StorageError:
        return None
    try:
        pid, _, role = lock_path(db_path).read_text(encoding="utf-8").partition(" ")
    except OSError:
        return "another process"
    if not pid.isdigit():
        return "another process"
    return f"pid {pid}, {role or 'unknown'}"


# ----- the thread


@dataclass(frozen=True, slots=True)
class EmbedProgress:
    """A snapshot of a ``BackgroundEmbedder``; ``done``/``total`` count the current (else last)
    pass's chunk texts, and ``rate`` is its chunks per second."""

    state: EmbedState
    done: int = 0
    total: int = 0
    model: str | None = None
    rate: float = 0.0
    passes: int = 0  # passes that ran to the end
    problem: str | None = None  # why the state is unavailable, failed or busy
    retry_in: float | None = None  # seconds until a failed pass is tried again


class BackgroundEmbedder:
    """Keeps an index's vectors up to date from a daemon thread (see the module doc).

    ``load`` returns the embedder (called once per pass; cache it) or raises ``SetupError`` /
    ``ExternalError`` saying why there is none. ``role`` names this process in the lock file (the
    program, e.g. ``vaultpilot chat``: what ``lock_holder`` shows other processes).
    ``refresh`` runs at each poll, in this thread, before the look (its errors are logged).
    """

    def __init__(
        self,
        db_path: Path,
        load: Callable[[], Embedder],
        *,
        role: str = "background",
        debounce: float = 0.5,
        poll: float = 30.0,
        batch_size: int = 32,
        backoff: float = _FIRST_BACKOFF,
        refresh: Callable[[], None] | None = None,
    ) -> None:
        self._db_path = db_path
        self._backoff = backoff
        self._refresh = refresh
        self._load = load
        self._lock = EmbedLock(db_path, role)
        self._debounce = debounce
        self._poll = poll
        self._batch_size = batch_size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._progress = EmbedProgress("starting")
        self._looking = False  # a wake is being handled or a pass runs
        self._retry_at: float | None = None
        self._thread: threading.Thread | None = None

    # --- control, from any thread

    def start(self) -> None:
        """Start the thread; it looks for work at once."""
        if self._thread is not None:
            return
        self._wake.set()
        self._thread = threading.Thread(
            target=self._run, name=f"embed:{self._db_path.parent.name}", daemon=True
        )
        self._thread.start()

    def wake(self) -> None:
        """Look for new work soon (after ``debounce``); cheap, call it after every sync."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop after the batch in progress; True when the thread ended within ``timeout``."""
        self._stop.set()
        self._wake.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def progress(self) -> EmbedProgress:
        with self._changed:
            snap = self._progress
            retry_at = self._retry_at
        if snap.state == "failed" and retry_at is not None:
            snap = replace(snap, retry_in=max(0.0, retry_at - time.monotonic()))
        return snap

    def wait_idle(self, timeout: float) -> EmbedProgress:
        """Wait until no wake is pending and no pass runs (or ``timeout``); the progress then."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._wake.is_set() or self._looking or self._progress.state == "starting":
                left = deadline - time.monotonic()
                if left <= 0 or self._progress.state == "stopped":
                    break
                self._changed.wait(min(left, 0.1))
        return self.progress()

    # --- the thread

    def _set(self, **changes: object) -> None:
        with self._changed:
            self._progress = replace(self._progress, **changes)  # type: ignore[arg-type]
            self._changed.notify_all()

    def _run(self) -> None:
        try:
            conn = connect(self._db_path)
        except StorageError as err:
            self._set(state="failed", problem=err.message)
            return
        try:
            self._loop(conn)
        finally:
            conn.close()
            self._lock.release()
            self._set(state="stopped")

    def _loop(self, conn: sqlite3.Connection) -> None:
        seen: int | None = None  # data_version when the last complete pass began
        while not self._stop.is_set():
            timeout = self._poll
            if self._retry_at is not None:
                timeout = max(0.0, min(timeout, self._retry_at - time.monotonic()))
            woken = self._wake.wait(timeout)
            # Let a burst of wakes settle into one look; stop() cuts the wait short.
            if self._stop.is_set() or (woken and self._stop.wait(self._debounce)):
                break
            if not woken and self._refresh is not None:
                self._run_refresh()
            with self._changed:
                self._looking = True
                self._wake.clear()
            try:
                version = int(conn.execute("PRAGMA data_version").fetchone()[0])
                due = self._retry_at is not None and time.monotonic() >= self._retry_at
                waiting = self._retry_at is not None and not due
                if not waiting and (version != seen or due) and self._pass(conn):
                    seen = version
            finally:
                with self._changed:
                    self._looking = False
                    self._changed.notify_all()

    def _run_refresh(self) -> None:
        assert self._refresh is not None
        try:
            self._refresh()
        except Exception:  # a vault folder gone for a moment must not end the thread
            log.warning("refreshing the index before a look failed", exc_info=True)

    def _fail(self, state: EmbedState, message: str) -> None:
        previous = self._progress.retry_in or 0.0
        if state == "failed":
            backoff = min(_MAX_BACKOFF, max(self._backoff, previous * 2))
            self._retry_at = time.monotonic() + backoff
            self._set(state=state, problem=message, retry_in=backoff)
        else:
            self._retry_at = None
            self._set(state=state, problem=message, retry_in=None)

    def _pass(self, conn: sqlite3.Connection) -> bool:
        """One embedding pass; True when it brought the vectors up to date."""
        try:
            if not self._lock.acquire():
                holder = lock_holder(self._db_path) or "another process"
                self._set(state="busy", problem=f"another process is embedding ({holder})")
                return False
            embedder = self._load()
            started = time.perf_counter()

            def progress(done: int, total: int) -> None:
                elapsed = time.perf_counter() - started
                rate = done / elapsed if done and elapsed > 0 else 0.0
                self._set(state="embedding", done=done, total=total, rate=rate)

            self._set(state="embedding", model=embedder.model_name, problem=None, done=0, total=0)
            report = embed_pending(
                conn,
                embedder,
                progress=progress,
                should_stop=self._stop.is_set,
                batch_size=self._batch_size,
            )
        except SetupError as err:
            self._fail("unavailable", err.message)
            return False
        except ExternalError as err:
            self._fail("failed", err.message)
            return False
        except sqlite3.Error as err:
            self._fail("failed", f"The index could not be written ({err}); trying again later.")
            return False
        except Exception as err:  # a bug: keep the server up, say so, try later
            log.exception("background embedding failed")
            self._fail("failed", f"Embedding failed unexpectedly: {err!r}.")
            return False
        finally:
            self._lock.release()
        self._retry_at = None
        if report.embedded:
            log.info(
                "embedded %d chunks with %s in %.1f s",
                report.embedded,
                report.model,
                report.seconds,
            )
        self._set(
            state="idle",
            passes=self._progress.passes + 1,
            problem=None,
            retry_in=None,
        )
        return not report.stopped


def coverage_words(status: EmbeddingStatus) -> str:
    """How much is embedded, e.g. "120 of 300 chunks embedded (40%)". Notes still to chunk lead
    and no percentage is given then: their chunks are not counted yet, so "40 of 40 chunks
    (100%)" would read as done while notes wait; a few chunks left never round up to 100%."""
    if status.notes_pending:
        notes = "note" if status.notes_pending == 1 else "notes"
        line = f"{status.notes_pending} {notes} still to chunk and embed"
        if status.chunks:
            other = f"{status.embedded} of {status.chunks} chunks of the other notes embedded"
            return f"{line}; {other}"
        return line + "; nothing embedded yet"
    if status.chunks == 0:
        return "nothing embedded yet"
    share = 100 * status.embedded / status.chunks
    shown = f"{share:.0f}%" if status.complete else f"{min(share, 99.0):.0f}%"
    return f"{status.embedded} of {status.chunks} chunks embedded ({shown})"


def describe_coverage(
    status: EmbeddingStatus, progress: EmbedProgress | None = None, holder: str | None = None
) -> str:
    """One line on semantic-search coverage and what is being done about the rest.

    ``progress`` is this process's background embedder, ``holder`` another process embedding
    the index (``lock_holder``). E.g. "120 of 300 chunks embedded (40%); embedding in the
    background, 85 chunks/s".
    """
    line = coverage_words(status)
    state = progress.state if progress is not None else None
    problem = progress.problem if progress is not None else None
    if state == "embedding" and progress is not None:
        rate = f", {progress.rate:.0f} chunks/s" if progress.rate else ""
        line += f"; embedding in the background{rate}"
    elif state == "unavailable":
        line += f"; ranking by keywords only: {problem}"
    elif state == "failed" and progress is not None:
        retry = f" (next try in {progress.retry_in:.0f} s)" if progress.retry_in is not None else ""
        line += f"; embedding failed: {problem}{retry}"
    elif state == "busy" and problem:
        line += f"; {problem}"
    elif holder is not None and not status.complete:
        line += f"; being embedded by {holder}"
    return line
