"""vault.lock: one write lock per vault across processes and threads, bounded wait, re-entrant."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vaultpilot.errors import VaultBusyError
from vaultpilot.vault.lock import try_write_lock, write_lock

HOLDER = """
import sys, time
from pathlib import Path
from vaultpilot.vault.lock import write_lock
with write_lock(Path(sys.argv[1]), timeout=5):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Another process holding the lock until its stdin closes."""
    path = tmp_path / "data" / "write.lock"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield path, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def test_a_lock_held_by_another_process_gives_busy_after_the_bounded_wait(holder) -> None:  # type: ignore[no-untyped-def]
    path, proc = holder
    started = time.monotonic()
    busy = pytest.raises(VaultBusyError, match="Another vaultpilot process is writing")
    with busy as err, write_lock(path, timeout=0.3):
        pytest.fail("the lock was taken while another process held it")
    waited = time.monotonic() - started
    assert 0.25 <= waited < 3
    assert "nothing was written" in str(err.value) and "Retry" in str(err.value)
    with try_write_lock(path) as free:
        assert free is False
    _release(proc)
    with write_lock(path, timeout=2):  # free again once the holder exits
        pass


def test_waits_for_a_holder_that_finishes_within_the_wait(holder) -> None:  # type: ignore[no-untyped-def]
    path, proc = holder
    threading.Timer(0.2, _release, args=(proc,)).start()
    with write_lock(path, timeout=5):
        pass


def test_reentrant_in_one_thread_and_exclusive_between_threads(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    outcome: list[str] = []

    def other() -> None:
        try:
            with write_lock(path, timeout=0.2):
                outcome.append("taken")
        except VaultBusyError:
            outcome.append("busy")

    with write_lock(path, timeout=1):
        with write_lock(path, timeout=1):  # one operation calling another
            thread = threading.Thread(target=other)
            thread.start()
            thread.join(timeout=5)
        assert outcome == ["busy"]
        thread = threading.Thread(target=other)  # still held by the outer level
        thread.start()
        thread.join(timeout=5)
        assert outcome == ["busy", "busy"]
    thread = threading.Thread(target=other)
    thread.start()
    thread.join(timeout=5)
    assert outcome == ["busy", "busy", "taken"]


def test_the_lock_file_and_its_folder_are_created_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "data" / "write.lock"
    with write_lock(path):
        assert path.is_file()
    assert path.stat().st_mode & 0o777 == 0o600
