"""The live index: a real watcher on a real folder; every test ends with the index equal to a
rebuild of the vault. Waits are bounded (``DEADLINE``) and poll the index, never sleep blindly."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.index.helpers import dump, write
from vaultpilot.index.db import connect
from vaultpilot.index.sync import SyncReport, sync_vault
from vaultpilot.index.watch import LiveIndex, WatchSource, _rust_notify, changed_paths

DEADLINE = 20.0  # seconds: generous for a loaded 2-core machine; a pass takes well under one


def _rebuild(root: Path, tmp: Path) -> dict[str, list[tuple[object, ...]]]:
    shutil.rmtree(tmp / "fresh", ignore_errors=True)
    fresh = connect(tmp / "fresh" / "index.db")
    try:
        sync_vault(fresh, root, workers=1)
        return dump(fresh)
    finally:
        fresh.close()


def _settles(conn: sqlite3.Connection, root: Path, tmp: Path) -> None:
    """Wait until the watched index equals a rebuild of the vault as it is now."""
    want = _rebuild(root, tmp)
    end = time.monotonic() + DEADLINE
    while True:
        got = dump(conn)
        if got == want:
            return
        if time.monotonic() > end:
            assert got == want
        time.sleep(0.05)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "Alpha.md", "---\ntags: [a]\n---\n# Alpha\nSee [[Beta]] and [[Gamma#Head]].\n")
    write(root, "One/Beta.md", "# Beta\nBack to [[Alpha]]. #b\n")
    write(root, ".obsidian/app.json", "{}")
    return root


@pytest.fixture
def live(vault: Path, tmp_path: Path) -> Iterator[tuple[LiveIndex, sqlite3.Connection, list[str]]]:
    changed: list[str] = []

    def on_change(report: SyncReport, paths: list[str]) -> None:
        changed.extend(paths)

    index = LiveIndex(vault, tmp_path / "db" / "index.db", on_change=on_change, debounce_ms=200)
    status = index.start(wait=DEADLINE)
    assert status.state == "live", status
    conn = connect(tmp_path / "db" / "index.db")
    yield index, conn, changed
    assert index.stop(timeout=DEADLINE)
    assert index.status().state == "stopped"
    conn.close()


def test_start_indexes_the_vault(live: tuple[LiveIndex, sqlite3.Connection, list[str]]) -> None:
    index, conn, _ = live
    paths = sorted(p for (p,) in conn.execute("SELECT path FROM files"))
    assert paths == ["Alpha.md", "One/Beta.md"]  # .obsidian is not part of the vault
    status = index.status()
    assert status.live and status.full_syncs == 1 and status.reason is None


def test_create_edit_rename_delete(
    live: tuple[LiveIndex, sqlite3.Connection, list[str]], vault: Path, tmp_path: Path
) -> None:
    _index, conn, changed = live
    write(vault, "Gamma.md", "# Head\nnew words zebrafish\n")
    _settles(conn, vault, tmp_path)
    assert "Gamma.md" in changed
    hit = conn.execute("SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'zebrafish'").fetchall()
    assert len(hit) == 1
    write(vault, "Gamma.md", "# Head\nedited in place: okapi\n")
    _settles(conn, vault, tmp_path)
    (vault / "Gamma.md").rename(vault / "One" / "Gamma.md")
    _settles(conn, vault, tmp_path)
    (vault / "One" / "Beta.md").unlink()
    _settles(conn, vault, tmp_path)
    resolved = conn.execute(
        "SELECT l.target_text, f.path FROM links l LEFT JOIN files f ON f.id = l.target_id"
        " ORDER BY l.target_text"
    ).fetchall()
    assert resolved == [("Beta", None), ("Gamma", "One/Gamma.md")]


def test_burst_of_a_thousand_files(
    live: tuple[LiveIndex, sqlite3.Connection, list[str]], vault: Path, tmp_path: Path
) -> None:
    index, conn, _ = live
    for i in range(1000):
        write(vault, f"Burst/{i % 10}/Note {i}.md", f"# N{i}\nlinks [[Note {(i + 1) % 1000}]]\n")
    _settles(conn, vault, tmp_path)
    assert index.status().batches >= 1
    shutil.rmtree(vault / "Burst")
    _settles(conn, vault, tmp_path)


def test_folder_moved_in_and_out(
    live: tuple[LiveIndex, sqlite3.Connection, list[str]], vault: Path, tmp_path: Path
) -> None:
    _index, conn, _ = live
    outside = tmp_path / "outside"
    for i in range(30):
        write(outside, f"Sub/N{i}.md", f"# N{i}\n[[Alpha]] [[N{(i + 1) % 30}]]\n")
    outside.rename(vault / "Moved")  # a whole folder arrives at once
    _settles(conn, vault, tmp_path)
    assert conn.execute("SELECT COUNT(*) FROM files WHERE path LIKE 'Moved/%'").fetchone()[0] == 30
    (vault / "Moved").rename(vault / "Renamed")
    _settles(conn, vault, tmp_path)
    (vault / "Renamed").rename(tmp_path / "gone")  # and leaves
    _settles(conn, vault, tmp_path)
    (vault / "One").rename(vault / ".hidden")  # into a dot-folder: out of the vault
    _settles(conn, vault, tmp_path)
    assert [p for (p,) in conn.execute("SELECT path FROM files")] == ["Alpha.md"]


def test_dot_folders_and_temp_files_do_not_sync(
    live: tuple[LiveIndex, sqlite3.Connection, list[str]], vault: Path, tmp_path: Path
) -> None:
    index, conn, changed = live
    write(vault, ".obsidian/workspace.json", "{}")
    write(vault, "One/.vaultpilot-abc.tmp", "partial")
    write(vault, "Marker.md", "marker")  # a real change after them, to know they were seen
    _settles(conn, vault, tmp_path)
    assert changed == ["Marker.md"]
    assert index.status().batches >= 1


class _Blind:
    """A real watcher that loses the events of its first batch, as an overflowing queue does;
    with ``fail`` it then raises, as watchfiles does when the OS watcher reports an error."""

    def __init__(self, root: str, fail: bool) -> None:
        self._real = _rust_notify(root)
        self._fail = fail
        self._lost = False

    def watch(
        self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: threading.Event
    ) -> set[tuple[int, str]] | str:
        result = self._real.watch(debounce_ms, step_ms, timeout_ms, stop_event)
        if isinstance(result, set) and not self._lost:
            self._lost = True
            if self._fail:
                raise RuntimeError("event queue overflowed")
            return set()
        return result

    def close(self) -> None:
        self._real.close()


def _source(fail: bool, made: list[int]) -> Callable[[str], WatchSource]:
    def make(root: str) -> WatchSource:
        made.append(1)
        return _Blind(root, fail) if len(made) == 1 else _rust_notify(root)

    return make


def test_watcher_error_rescans_and_restarts(vault: Path, tmp_path: Path) -> None:
    made: list[int] = []
    index = LiveIndex(vault, tmp_path / "db" / "index.db", source=_source(True, made))
    assert index.start(wait=DEADLINE).live
    conn = connect(tmp_path / "db" / "index.db")
    try:
        write(vault, "Lost.md", "# Lost\nonly a rescan finds me\n")
        _settles(conn, vault, tmp_path)
        status = index.status()
        assert len(made) == 2 and status.errors == 1 and status.full_syncs == 2
        write(vault, "After.md", "# After\nthe new watcher sees me\n")  # watching again
        _settles(conn, vault, tmp_path)
        assert index.status().live
    finally:
        assert index.stop(timeout=DEADLINE)
        conn.close()


def test_silently_lost_events_are_caught_by_the_safety_scan(vault: Path, tmp_path: Path) -> None:
    made: list[int] = []
    index = LiveIndex(
        vault, tmp_path / "db" / "index.db", source=_source(False, made), rescan_every=1.0
    )
    assert index.start(wait=DEADLINE).live
    conn = connect(tmp_path / "db" / "index.db")
    try:
        write(vault, "Lost.md", "# Lost\nno event for me\n")
        _settles(conn, vault, tmp_path)
        assert len(made) == 1 and index.status().full_syncs >= 2
    finally:
        assert index.stop(timeout=DEADLINE)
        conn.close()


def test_a_watcher_that_cannot_start_is_reported(vault: Path, tmp_path: Path) -> None:
    def refuse(root: str) -> WatchSource:
        raise OSError(28, "inotify watch limit reached")

    index = LiveIndex(vault, tmp_path / "db" / "index.db", source=refuse, backoff=30.0)
    status = index.start(wait=DEADLINE)
    try:
        assert status.state == "failed" and not status.live
        assert status.reason is not None and "watch limit" in status.reason
        conn = connect(tmp_path / "db" / "index.db")
        assert dump(conn) == _rebuild(vault, tmp_path)  # the full sync still ran
        conn.close()
    finally:
        assert index.stop(timeout=DEADLINE)


def test_changed_paths_maps_events_to_vault_paths() -> None:
    events = {
        (1, "/v/a.md"),
        (2, "/v/.obsidian/x.json"),
        (1, "/v/f/.vaultpilot-1.tmp"),
        (3, "/v/f/b.md"),
        (1, "/elsewhere/c.md"),
    }
    assert changed_paths("/v", events) == (["a.md", "f/b.md"], False)
    assert changed_paths("/v", {(2, "/v")}) == ([], True)
