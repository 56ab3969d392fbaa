"""The one reply envelope of the server, and the one mapping from errors to its codes.

Every reply, over HTTP and WebSocket, success or not, is::

    {"id": <the command's id or null>, "commandName": <its name or null>,
     "success": true|false, "result": <object or null>, "error": {"code", "message"} | null}

``error_for(err)`` maps the vaultpilot error tree (``vaultpilot.errors``) to an error code and
the HTTP status the REST routes use; it is the only place that does (``POST /rpc`` answers 200
whatever the command's outcome). Codes, most specific first:

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
    VaultBusyError                vault_busy               503 + Retry-After
    ExternalError (others)        external_error           502
    InternalError                 internal_error           500
    ============================  =======================  ======

``vault_busy`` is the one retryable failure: another vaultpilot process holds the vault's write
lock, nothing was written, and the same command succeeds a moment later; its replies carry
``Retry-After: RETRY_AFTER_S`` (``retry_headers``), on ``/rpc`` too. ``internal_error`` is a bug
in vaultpilot (an ``InternalError``, or any exception nothing else caught): it is logged with its
traceback where it is caught and answered with a message that never carries one.

Codes the transport itself gives: ``unauthorized`` (401), ``forbidden`` (403: Host or Origin
refused), ``payload_too_large`` (413: the body or WebSocket message is over ``max_body_size``;
see ``limits``), ``invalid_argument`` (400) for a body that is not JSON or not valid text.
"""

from __future__ import annotations

import logging
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from vaultpilot.errors import (
    AlreadyExistsError,
    ConfirmationRequiredError,
    ExternalError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
    RequestError,
    SetupError,
    StaleVersionError,
    StorageError,
    UnreadableNoteError,
    VaultBusyError,
    VaultpilotError,
)

__all__ = [
    "ERROR_TABLE",
    "RETRY_AFTER_S",
    "Envelope",
    "ErrorBody",
    "ErrorCode",
    "error_for",
    "error_reply",
    "failure",
    "internal_failure",
    "retry_headers",
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
    "vault_busy",
    "external_error",
    "internal_error",
    "unauthorized",
    "forbidden",
    "payload_too_large",
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
    (VaultBusyError, "vault_busy", 503),
    (ExternalError, "external_error", 502),
    (InternalError, "internal_error", 500),
)
# Seconds a client should wait before retrying a ``vault_busy`` command: writes hold the vault's
# lock for milliseconds, so one second is ample and keeps a retrying client polite.
RETRY_AFTER_S = 1

T = TypeVar("T")
log = logging.getLogger(__name__)


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


def retry_headers(code: ErrorCode) -> dict[str, str] | None:
    """The headers of a reply with error ``code``: ``Retry-After`` for ``vault_busy``."""
    return {"Retry-After": str(RETRY_AFTER_S)} if code == "vault_busy" else None


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


def error_reply(
    command_id: str | None, name: str | None, err: VaultpilotError
) -> tuple[dict[str, Any], int]:
    """The envelope and HTTP status answering ``err``; an internal error is logged here.

    Call it in the ``except`` block that caught ``err``. An ``internal_error`` (our own bug) is
    logged with its traceback and answered with its message only; a ``vault_busy`` message
    always tells the client to retry.
    """
    code, status = error_for(err)
    message = err.message
    if code == "internal_error":
        log.error("%s failed on an internal error: %s", name or "a request", message, exc_info=err)
        if not message or "Traceback" in message:
            return internal_failure(command_id, name, err), status
    elif code == "vault_busy" and "retry" not in message.lower():
        message = f"{message.rstrip()} Nothing was written; retry in a moment."
    return failure(command_id, name, code, message), status
