"""The one reply envelope of the server, and the one mapping from errors to its codes.

Every reply, over HTTP and WebSocket, success or not, is::

    {"id": <the command's id or null>, "commandName": <its name or null>,
     "success": true|false, "result": <object or null>, "error": {"code", "message"} | null}

``error_for(err)`` maps the vaultpilot error tree (``vaultpilot.errors``) to an error code and
the HTTP status the REST routes use; it is the only place that does. Codes, most specific first:

    ============================  =======================  ======
    error class                   code                     status
    ============================  =======================  ======
    InvalidArgumentError          invalid_argument         400
    NotFoundError                 not_found                404
    AlreadyExistsError            already_exists           409
    PathRefusedError              path_refused             403
    StaleVersionError             stale_version            409
    ConfirmationRequiredError     confirmation_required    409
    RequestError (others)         request_refused          403
    SetupError                    setup_required           409
    StorageError                  storage_error            503
    UnreadableNoteError           unreadable_note          422
    ExternalError (others)        external_error           502
    ============================  =======================  ======

Codes the transport itself gives: ``unauthorized`` (401), ``forbidden`` (403: Host or Origin
refused), ``internal_error`` (500: a bug; the message never carries a traceback).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from vaultpilot.errors import (
    AlreadyExistsError,
    ConfirmationRequiredError,
    ExternalError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
    RequestError,
    SetupError,
    StaleVersionError,
    StorageError,
    UnreadableNoteError,
    VaultpilotError,
)

__all__ = [
    "ERROR_TABLE",
    "Envelope",
    "ErrorBody",
    "ErrorCode",
    "error_for",
    "failure",
    "internal_failure",
    "success",
]

ErrorCode = Literal[
    "invalid_argument",
    "not_found",
    "already_exists",
    "path_refused",
    "stale_version",
    "confirmation_required",
    "request_refused",
    "setup_required",
    "storage_error",
    "unreadable_note",
    "external_error",
    "unauthorized",
    "forbidden",
    "internal_error",
]

# Most specific first: the first class an error is an instance of decides.
ERROR_TABLE: tuple[tuple[type[VaultpilotError], ErrorCode, int], ...] = (
    (InvalidArgumentError, "invalid_argument", 400),
    (NotFoundError, "not_found", 404),
    (AlreadyExistsError, "already_exists", 409),
    (PathRefusedError, "path_refused", 403),
    (StaleVersionError, "stale_version", 409),
    (ConfirmationRequiredError, "confirmation_required", 409),
    (RequestError, "request_refused", 403),
    (SetupError, "setup_required", 409),
    (StorageError, "storage_error", 503),
    (UnreadableNoteError, "unreadable_note", 422),
    (ExternalError, "external_error", 502),
)

T = TypeVar("T")


class ErrorBody(BaseModel):
    code: ErrorCode = Field(description="What kind of failure (see the API description).")
    message: str = Field(description="What went wrong and what to do instead.")


class Envelope(BaseModel, Generic[T]):
    """The reply to every command (``result`` is null on failure, ``error`` on success)."""

    id: str | None = Field(description="The command's id, or null if it could not be read.")
    commandName: str | None = Field(description="The command's name, or null.")
    success: bool
    result: T | None
    error: ErrorBody | None


def error_for(err: VaultpilotError) -> tuple[ErrorCode, int]:
    """The envelope code and HTTP status for a vaultpilot error."""
    for cls, code, status in ERROR_TABLE:
        if isinstance(err, cls):
            return code, status
    return "internal_error", 500


def success(command_id: str | None, name: str | None, result: Any) -> dict[str, Any]:
    return {"id": command_id, "commandName": name, "success": True, "result": result, "error": None}


def failure(
    command_id: str | None, name: str | None, code: ErrorCode, message: str
) -> dict[str, Any]:
    return {
        "id": command_id,
        "commandName": name,
        "success": False,
        "result": None,
        "error": {"code": code, "message": message},
    }


def internal_failure(
    command_id: str | None, name: str | None, exc: BaseException
) -> dict[str, Any]:
    """The reply to a bug: says which command failed, never the traceback."""
    what = name or "The command"
    return failure(
        command_id,
        name,
        "internal_error",
        f"{what} failed on an internal error ({type(exc).__name__}); the server logged it. "
        "Check the vault's state before retrying.",
    )
