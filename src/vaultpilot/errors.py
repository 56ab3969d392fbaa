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
    │   └── ConfirmationRequiredError   a destructive step needs explicit confirmation
    ├── SetupError              the installation or configuration is incomplete (no vault folder,
    │                           no model configured, no embedding model built)
    ├── ExternalError           something outside us failed: the disk, a child process, a network
    │   ├── StorageError            reading or writing a file or database failed
    │   ├── UnreadableNoteError     a note is not UTF-8 text (binary, other encoding)
    │   └── VaultBusyError          another vaultpilot process holds the vault's write lock
    └── InternalError           a bug in vaultpilot itself; logged with its traceback where it is
                                caught, answered without one
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "ConfirmationRequiredError",
    "ExternalError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PathRefusedError",
    "RequestError",
    "SetupError",
    "StaleVersionError",
    "StorageError",
    "UnreadableNoteError",
    "VaultBusyError",
    "VaultpilotError",
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
