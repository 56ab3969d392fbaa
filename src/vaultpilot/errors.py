"""The one error tree of vaultpilot.

Every failure the package raises on purpose is a ``VaultpilotError``. Transports (the CLI, the
server, the stdin/stdout agents) turn these into exit codes, HTTP statuses or ActionResponse codes;
the core never does. Messages are written for the reader who must act on them (a person or a
model): what went wrong and what to do instead. They never carry a traceback.

    VaultpilotError
    ├── RequestError            the caller asked for something that cannot be done as asked;
    │   │                       a model or user can correct the call and try again
    │   ├── InvalidArgumentError    a parameter is missing, malformed or contradictory
    │   ├── NotFoundError           the named note, folder or vault does not exist
    │   ├── AlreadyExistsError      the target exists and nothing is overwritten silently
    │   ├── PathRefusedError        the path leaves the vault or names a protected folder
    │   ├── StaleVersionError       the note changed since the caller read it
    │   │   └── ConflictKeptError   ... and the change is in, the other text kept beside it
    │   └── ConfirmationRequiredError   a destructive step needs explicit confirmation
    ├── SetupError              the installation or configuration is incomplete (no vault folder,
    │                           no model configured, no embedding model built)
    ├── ExternalError           something outside us failed: the disk, a child process, a network
    │   ├── StorageError            reading or writing a file or database failed
    │   ├── UnreadableNoteError     a note is not UTF-8 text (binary, other encoding)
    │   └── VaultBusyError          another vaultpilot process holds the vault's write lock
    └── InternalError           a bug in vaultpilot itself; logged with its traceback where it is
                                caught, answered without one

Foreign exceptions become ours at one boundary each. For the file system that is
``map_os_errors`` (after httpx's ``map_exceptions``): inside ``with map_os_errors(path, "read")``
an ``OSError`` becomes the error its caller maps its kind or errno to, else a ``StorageError``
(an ``InvalidArgumentError`` for a name too long) whose message names the path, the reason and
what to do. Only ``OSError`` is mapped: a bug (``TypeError``, ``KeyError`` ...) passes through
unchanged and stays an ``InternalError`` where it is caught.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = [
    "AlreadyExistsError",
    "ConfirmationRequiredError",
    "ConflictKeptError",
    "ExternalError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "OSErrorMapping",
    "PathRefusedError",
    "RequestError",
    "SetupError",
    "StaleVersionError",
    "StorageError",
    "UnreadableNoteError",
    "VaultBusyError",
    "VaultpilotError",
    "database_advice",
    "map_os_errors",
]


class VaultpilotError(Exception):
    """Base of every error vaultpilot raises on purpose; ``str(err)`` is the whole message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class RequestError(VaultpilotError):
    """The request cannot be carried out as asked; the message says what to do instead."""


class InvalidArgumentError(RequestError):
    """A parameter is missing, malformed, or contradicts another."""


class NotFoundError(RequestError):
    """The named note, folder or vault does not exist."""


class AlreadyExistsError(RequestError):
    """The target already exists; vaultpilot never overwrites a note silently."""


class PathRefusedError(RequestError):
    """The path would leave the vault, or names a folder that note operations never write."""


class StaleVersionError(RequestError):
    """The note changed since the caller read it; the caller must read it again."""


class ConflictKeptError(StaleVersionError):
    """The change is in the note, but another program saved it in between, and that text is
    kept beside it in a conflict copy: the change must not be done again."""


class ConfirmationRequiredError(RequestError):
    """A destructive operation was asked for without explicit confirmation."""


class SetupError(VaultpilotError):
    """Installation or configuration is incomplete; the message says how to complete it."""


class ExternalError(VaultpilotError):
    """Something outside vaultpilot failed (disk, child process, network, model server)."""


class StorageError(ExternalError):
    """Reading or writing a file or database failed."""


class UnreadableNoteError(ExternalError):
    """A file named ``.md`` is not UTF-8 text, so it cannot be read or edited safely."""


class VaultBusyError(ExternalError):
    """Another vaultpilot process is writing to the vault; nothing was written, retry shortly."""


class InternalError(VaultpilotError):
    """A bug in vaultpilot (not the caller's mistake, not the disk): the message says what to do."""


# What to do about the common failures of the disk, by errno.
_ADVICE = {
    errno.EACCES: "Check that this user may read and write it and the folders above it.",
    errno.EPERM: "Check that this user may read and write it and the folders above it.",
    errno.ENOSPC: "The disk is full: free some space and retry.",
    errno.EDQUOT: "The disk quota is used up: free some space and retry.",
    errno.EROFS: "Its file system is mounted read-only: make it writable and retry.",
    errno.EMFILE: "Too many files are open in this process: retry shortly.",
    errno.ENFILE: "Too many files are open on this system: retry shortly.",
    errno.EIO: "The disk reported an input/output error: check it, then retry.",
    errno.ENAMETOOLONG: "Choose a shorter name.",
}
_CALLER_MISTAKE = {errno.ENAMETOOLONG}  # the name asked for, not the disk, is at fault

OSErrorMapping = Mapping[type[OSError] | int, VaultpilotError | type[VaultpilotError]]


@contextmanager
def map_os_errors(
    path: str | os.PathLike[str],
    doing: str,
    mapping: OSErrorMapping | None = None,
    *,
    advice: str | None = None,
) -> Iterator[None]:
    """Turn an ``OSError`` raised inside the block into one of ours (see the module doc).

    ``mapping`` keys are errno values or ``OSError`` subclasses (an errno is matched first,
    then the most specific class); a value is the error to raise, or an error class given the
    standard message "Could not {doing} '{path}': {reason}. {advice}". ``advice`` replaces the
    advice chosen by errno. Nothing else is caught.
    """
    try:
        yield
    except OSError as exc:
        raise _mapped(exc, path, doing, mapping or {}, advice) from None


def _mapped(
    exc: OSError,
    path: str | os.PathLike[str],
    doing: str,
    mapping: OSErrorMapping,
    advice: str | None,
) -> VaultpilotError:
    chosen = mapping.get(exc.errno) if exc.errno is not None else None
    if chosen is None:
        chosen = next((mapping[c] for c in type(exc).__mro__ if c in mapping), None)
    if isinstance(chosen, VaultpilotError):
        return chosen
    if chosen is None:
        chosen = InvalidArgumentError if exc.errno in _CALLER_MISTAKE else StorageError
    reason = exc.strerror or str(exc) or type(exc).__name__
    todo = advice or _ADVICE.get(exc.errno or 0, "Check the disk and retry.")
    return chosen(f"Could not {doing} '{os.fspath(path)}': {reason}. {todo}")


_LOW_SPACE = 256 * 1024  # bytes free under which a SQLite I/O failure is taken for a full disk


def database_advice(
    exc: BaseException, path: str | os.PathLike[str], *, damaged: str | None = None
) -> str:
    """What to do about a SQLite failure on the database at ``path``: SQLite reports a full disk
    as "database or disk is full", or, when its WAL cannot grow, as a bare "disk I/O error", so
    the free space is looked at too. ``damaged`` is the advice for a damaged file."""
    text = str(exc).lower()
    if "full" in text or ("i/o" in text and _low_space(path)):
        return "The disk holding it is full: free some space and retry."
    if "readonly" in text or "read-only" in text:
        return "Check that this user may write it and its folder, or pass another --data-dir."
    if "locked" in text or "busy" in text:
        return "Another vaultpilot process is using it: retry shortly."
    if "malformed" in text or "not a database" in text:
        return damaged or "The file is damaged: move it aside and retry."
    if "i/o" in text:
        return _ADVICE[errno.EIO]
    return damaged or "Check the disk and retry."


def _low_space(path: str | os.PathLike[str]) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    try:
        return shutil.disk_usage(folder or "/").free < _LOW_SPACE
    except OSError:
        return False
