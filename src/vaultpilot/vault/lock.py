"""One write lock per vault, shared by every vaultpilot process and thread that writes to it.

Contract:

* ``write_lock(path, timeout=...)`` is a context manager holding an OS file lock on ``path`` (a
  file in the vault's data folder, never in the vault): ``fcntl.flock`` on POSIX,
  ``msvcrt.locking`` on Windows. The server, ``vaultpilot tool``, ``obsidian_agent`` and any
  later entry point take the same file, so only one of them writes to a vault at a time.
* The wait is bounded: after ``timeout`` seconds ``VaultBusyError`` says another process is
  writing and nothing was written. ``timeout=0`` tries once (``try_write_lock`` answers with a
  bool instead of raising).
* It is safe across threads of one process and re-entrant in the thread that holds it: an
  operation that calls another takes it again without waiting on itself.

Why a per-process table: ``flock`` conflicts between two open file descriptions even inside one
process, and closing any descriptor of a file drops a POSIX ``fcntl`` lock, so each lock file has
exactly one state per process (a thread lock, the holder and one descriptor while held). Only the
standard library is imported, so ``obsidian_agent`` stays light.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vaultpilot.errors import VaultBusyError, map_os_errors

__all__ = ["DEFAULT_WAIT", "LOCK_NAME", "try_write_lock", "write_lock"]

LOCK_NAME = "write.lock"
DEFAULT_WAIT = 10.0
_BUSY = (
    "Another vaultpilot process is writing to this vault; nothing was written. Retry in a moment."
)

try:  # POSIX
    import fcntl

    def _try_os_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _os_unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # Windows
    import msvcrt

    def _try_os_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True

    def _os_unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]


@dataclass(slots=True)
class _State:
    """One lock file's state in this process."""

    mutex: threading.Lock = field(default_factory=threading.Lock)
    owner: int | None = None  # the thread holding it
    depth: int = 0
    fd: int = -1


# The one unavoidable module-level table: lock state must be shared by every caller in the
# process (see the module docstring), whoever opened the vault.
_TABLE: dict[str, _State] = {}
_TABLE_GUARD = threading.Lock()


def _state(path: Path) -> _State:
    key = os.path.abspath(path)
    with _TABLE_GUARD:
        state = _TABLE.get(key)
        if state is None:
            state = _TABLE[key] = _State()
        return state


def _open(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return os.open(path, flags, 0o600)


def _acquire(path: Path, timeout: float) -> bool:
    state = _state(path)
    me = threading.get_ident()
    if state.owner == me:
        state.depth += 1
        return True
    deadline = time.monotonic() + max(timeout, 0.0)
    got = state.mutex.acquire(timeout=timeout) if timeout > 0 else state.mutex.acquire(False)
    if not got:
        return False
    try:
        with map_os_errors(path, "open the vault's write lock"):
            fd = _open(path)
    except BaseException:
        state.mutex.release()
        raise
    pause = 0.001
    while not _try_os_lock(fd):
        left = deadline - time.monotonic()
        if left <= 0:
            os.close(fd)
            state.mutex.release()
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.02)  # short polls: a vault write takes milliseconds
    state.fd, state.owner, state.depth = fd, me, 1
    return True


def _release(path: Path) -> None:
    state = _state(path)
    state.depth -= 1
    if state.depth:
        return
    fd, state.fd, state.owner = state.fd, -1, None
    try:
        with contextlib.suppress(OSError):
            _os_unlock(fd)
        os.close(fd)
    finally:
        state.mutex.release()


@contextlib.contextmanager
def write_lock(path: Path, *, timeout: float = DEFAULT_WAIT) -> Iterator[None]:
    """Hold the vault's write lock at ``path``; VaultBusyError after ``timeout`` seconds."""
    if not _acquire(path, timeout):
        raise VaultBusyError(_BUSY)
    try:
        yield
    finally:
        _release(path)


@contextlib.contextmanager
def try_write_lock(path: Path) -> Iterator[bool]:
    """Take the lock only if it is free right now; yields whether it was taken."""
    got = _acquire(path, 0.0)
    try:
        yield got
    finally:
        if got:
            _release(path)
