"""A live index: a file watcher that keeps ``index.db`` in line with the vault as it changes.

``LiveIndex(root, db_path, on_change=...)`` runs one daemon thread with its own SQLite
connection. ``start()`` starts the OS watcher (inotify, FSEvents, ReadDirectoryChangesW, through
``watchfiles``) and then runs a full sync, so no change made during that scan is lost; after
that, changes are grouped (a batch is handed over once ``step_ms`` pass without a new event, or
``debounce_ms`` after its first event during a burst) and synced incrementally with
``sync_paths``: only the paths that changed are stat'ed and parsed. While ``status().live`` is
true, the ``tools.session.VaultRuntime`` that runs one lets read tool calls skip their sync and
has a write sync only the paths it changed.

A full sync also runs as a safety net:

* every ``rescan_every`` seconds (events can be lost without a word: inotify drops them when its
  queue overflows, and watchfiles does not pass the overflow on);
* when a batch holds more than ``full_above`` paths (a full sync is then cheaper);
* after the watcher fails (it is started again) or a sync fails (retried after a back-off).

``status()`` says which: ``starting``, ``live``, ``rescanning`` (with the reason), ``failed``
(with the reason; the thread keeps retrying, with a full sync each time), ``stopped``.
Dot-folders, dot-files and ``.vaultpilot-*.tmp`` files never trigger a sync: they are not part of
the vault. ``on_change(report, paths)`` is called after every sync that changed the index (from
the watcher thread: keep it short, e.g. wake the background embedder). Nothing escapes the
thread; failures are in ``status()`` and the log.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from vaultpilot.index.db import connect
from vaultpilot.index.sync import SyncReport, sync_paths, sync_vault

__all__ = ["LiveIndex", "LiveState", "LiveStatus", "WatchSource", "changed_paths"]

log = logging.getLogger(__name__)

LiveState = Literal["starting", "live", "rescanning", "failed", "stopped"]
ChangeFn = Callable[[SyncReport, list[str]], None]
Changes = set[tuple[int, str]]


class WatchSource(Protocol):
    """What the thread needs of a watcher: ``watchfiles.RustNotify``'s two methods."""

    def watch(
        self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: threading.Event
    ) -> Changes | str: ...

    def close(self) -> None: ...


def _rust_notify(root: str) -> WatchSource:
    # Imported here: only long-running processes watch, and one-shot commands skip the import.
    from watchfiles._rust_notify import RustNotify

    # (paths, debug, force_polling, poll_delay_ms, recursive, ignore_permission_denied)
    notify: WatchSource = RustNotify([root], False, False, 300, True, True)
    return notify


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """A snapshot of the live index for status lines and the server's API."""

    state: LiveState
    reason: str | None = None  # why rescanning or failed
    last_sync: float | None = None  # time.time() of the last sync that finished
    last_full_sync: float | None = None
    batches: int = 0  # incremental syncs run
    full_syncs: int = 0
    errors: int = 0

    @property
    def live(self) -> bool:
        """Whether tool calls may skip their own sync (the watcher is running and caught up)."""
        return self.state == "live"


def changed_paths(root: str, changes: Iterable[tuple[int, str]]) -> tuple[list[str], bool]:
    """The vault paths of watcher events under ``root`` (a real path), dot-named ones left out.

    The flag is true when an event names the vault folder itself (moved or deleted): then
    only a full sync can say what is left.
    """
    prefix = root.rstrip(os.sep) + os.sep
    out: set[str] = set()
    whole = False
    for _kind, full in changes:
        if not full.startswith(prefix):
            whole = whole or full.rstrip(os.sep) == root.rstrip(os.sep)
            continue
        rel = full[len(prefix) :].replace(os.sep, "/")
        if rel and not any(part.startswith(".") for part in rel.split("/")):
            out.add(rel)
    return sorted(out), whole


class LiveIndex:
    """Keeps the index at ``db_path`` in sync with the vault at ``root`` (see the module doc)."""

    def __init__(
        self,
        root: Path,
        db_path: Path,
        *,
        on_change: ChangeFn | None = None,
        rescan_every: float = 600.0,
        debounce_ms: int = 400,
        step_ms: int = 50,
        full_above: int = 5000,
        backoff: float = 1.0,
        source: Callable[[str], WatchSource] = _rust_notify,
    ) -> None:
        self._root = Path(os.path.realpath(root))
        self._db_path = db_path
        self._on_change = on_change
        self._rescan_every = rescan_every
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._full_above = full_above
        self._backoff = backoff
        self._source = source
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._status = LiveStatus("stopped")
        self._thread: threading.Thread | None = None

    def start(self, *, wait: float | None = None) -> LiveStatus:
        """Start watching; with ``wait``, block up to that many seconds for the first full sync."""
        if self._thread is not None:
            return self.status()
        self._stop.clear()
        self._ready.clear()
        self._set(state="starting", reason=None)
        self._thread = threading.Thread(target=self._run, name="vaultpilot-watch", daemon=True)
        self._thread.start()
        if wait is not None:
            self._ready.wait(wait)
        return self.status()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the thread (between two syncs); true if it ended within ``timeout``."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def status(self) -> LiveStatus:
        with self._lock:
            return self._status

    def _set(self, **changes: object) -> None:
        with self._lock:
            self._status = replace(self._status, **changes)  # type: ignore[arg-type]

    def _run(self) -> None:
        try:
            conn = connect(self._db_path)
        except Exception as exc:  # reported in status, never raised in the thread
            self._fail(f"could not open the index: {exc}")
            self._ready.set()
            return
        try:
            self._loop(conn)
        finally:
            conn.close()
            self._set(state="stopped", reason=None)
            self._ready.set()

    def _loop(self, conn: sqlite3.Connection) -> None:
        delay = self._backoff
        reason = "start-up"
        while not self._stop.is_set():
            try:
                notify = self._source(str(self._root))
            except Exception as exc:  # e.g. the OS limit on watches is reached
                self._fail(f"the file watcher could not start: {exc}")
                self._full_sync(conn, "watcher unavailable", keep_state=True)
                self._ready.set()
                self._stop.wait(delay)
                delay = min(delay * 2, self._rescan_every)
                continue
            try:
                if self._full_sync(conn, reason):
                    delay = self._backoff
                self._ready.set()
                reason = self._watch(conn, notify)
            finally:
                notify.close()
            if reason:
                self._stop.wait(min(delay, 1.0))

    def _watch(self, conn: sqlite3.Connection, notify: WatchSource) -> str:
        """Sync batches of changes until stopped (returns "") or the watcher fails (the reason)."""
        root = str(self._root)
        next_full = time.monotonic() + self._rescan_every
        pending: set[str] = set()  # paths of a batch whose sync failed, tried again
        while not self._stop.is_set():
            if pending and self.status().state == "failed":  # the last batch failed: rescan
                if self._full_sync(conn, "retrying after a failed sync"):
                    pending.clear()
                    next_full = time.monotonic() + self._rescan_every
                else:
                    self._stop.wait(self._backoff)
                continue
            wait_ms = max(1, int((next_full - time.monotonic()) * 1000))
            try:
                result = notify.watch(self._debounce_ms, self._step_ms, wait_ms, self._stop)
            except Exception as exc:  # the watcher failed: rescan, start again
                log.warning("file watcher failed: %s", exc)
                self._set(errors=self.status().errors + 1)
                return f"the file watcher failed ({exc}); rescanning the vault"
            if result == "stop":
                return ""
            if result == "timeout":
                if self._full_sync(conn, "periodic safety scan"):
                    pending.clear()
                next_full = time.monotonic() + self._rescan_every
                continue
            if not isinstance(result, set):
                continue  # "signal": only the main thread handles signals
            paths, whole = changed_paths(root, result)
            pending.update(paths)
            if whole or len(pending) > self._full_above:
                if self._full_sync(conn, "large batch of changes"):
                    pending.clear()
                continue
            if pending and self._batch(conn, sorted(pending)):
                pending.clear()
        return ""

    def _batch(self, conn: sqlite3.Connection, paths: list[str]) -> bool:
        try:
            report = sync_paths(conn, self._root, paths, workers=1)
        except Exception as exc:  # reported; the next event or scan retries
            self._fail(f"syncing {len(paths)} changed paths failed: {exc}")
            return False
        status = self.status()
        self._set(state="live", reason=None, last_sync=time.time(), batches=status.batches + 1)
        self._notify(report, paths)
        return True

    def _full_sync(
        self, conn: sqlite3.Connection, reason: str, *, keep_state: bool = False
    ) -> bool:
        if not keep_state:
            self._set(state="rescanning", reason=reason)
        try:
            report = sync_vault(conn, self._root)
        except Exception as exc:  # reported; retried after the back-off
            self._fail(f"a full sync ({reason}) failed: {exc}")
            return False
        now = time.time()
        status = self.status()
        changes: dict[str, object] = {
            "last_sync": now,
            "last_full_sync": now,
            "full_syncs": status.full_syncs + 1,
        }
        if not keep_state:
            changes.update(state="live", reason=None)
        self._set(**changes)
        self._notify(report, [])
        return True

    def _notify(self, report: SyncReport, paths: list[str]) -> None:
        touched = report.added or report.deleted or report.parsed or report.unchanged_content
        if self._on_change is None or not (touched or report.skipped):
            return
        try:
            self._on_change(report, paths)
        except Exception:  # a listener's bug must not stop the watcher
            log.exception("on_change listener failed")

    def _fail(self, reason: str) -> None:
        log.warning("live index: %s", reason)
        status = self.status()
        self._set(state="failed", reason=reason, errors=status.errors + 1)
