"""Typed entry points for in-process callers: the same tool functions, without JSON in between.

The server's CreateNote and UpdateNote and GetVaultContext call these instead of building a tool
call's JSON and picking fields out of its result. Each builds the tool's parameters model (so
the same validation and limits apply) and runs the tool function; failures raise the
``VaultpilotError`` the tool raises (a transport maps it to its error code). Writes are journaled
and locked exactly as a tool call is, because they are one, and the vault's rules hold as for a
tool call (``enforce``): a write the rules forbid is refused, a denied note is never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from vaultpilot.errors import InternalError, InvalidArgumentError
from vaultpilot.tools import enforce
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.manage import obsidian_vault_manager
from vaultpilot.tools.models import QueryVaultParams, VaultManagerParams
from vaultpilot.tools.query import obsidian_query_vault
from vaultpilot.tools.registry import get_tool
from vaultpilot.tools.validation import explain

__all__ = ["Written", "append_note", "create_note", "recent_notes", "update_note"]


@dataclass(frozen=True, slots=True)
class Written:
    """A note after a single-note write: where it is and its new version."""

    path: str
    version: str


def _manage(ctx: ToolContext, subject: str, **fields: Any) -> Written:
    args = {k: v for k, v in fields.items() if v is not None}
    try:
        params = VaultManagerParams.model_validate(args)
    except ValidationError as exc:
        raise InvalidArgumentError(explain(exc, subject=subject)) from None
    enforce.before(ctx, get_tool("obsidian_vault_manager"), args)
    result = obsidian_vault_manager(ctx, params)
    if not result.get("success"):  # a request the tool refused with advice (e.g. nothing to do)
        raise InvalidArgumentError(str(result.get("message") or f"{subject} did not run."))
    paths, version = result.get("affectedPaths") or [], result.get("version")
    if not isinstance(version, str):  # a single-note write always reports its version
        raise InternalError(f"{params.operation} reported no version.")
    # An unchanged note lists no affected path: it is the target as given.
    return Written(str(paths[0]) if paths else str(params.target or ""), version)


def create_note(
    ctx: ToolContext, path: str, content: str, *, metadata: dict[str, Any] | None = None
) -> Written:
    return _manage(
        ctx, "create_note", operation="create_note", target=path, content=content,
        metadata=metadata,
    )  # fmt: skip


def update_note(
    ctx: ToolContext,
    path: str,
    *,
    content: str | None = None,
    metadata: dict[str, Any] | None = None,
    expected_version: str | None = None,
) -> Written:
    return _manage(
        ctx, "update_note", operation="update_note", target=path, content=content,
        metadata=metadata, expectedVersion=expected_version,
    )  # fmt: skip


def append_note(
    ctx: ToolContext,
    path: str,
    content: str,
    *,
    metadata: dict[str, Any] | None = None,
    expected_version: str | None = None,
) -> Written:
    return _manage(
        ctx, "append_note", operation="append_note", target=path, content=content,
        metadata=metadata, expectedVersion=expected_version,
    )  # fmt: skip


def recent_notes(ctx: ToolContext, limit: int) -> list[str]:
    """The paths of the ``limit`` most recently changed notes, newest first."""
    params = QueryVaultParams(queryType="recent_changes", limit=limit, responseFormat="concise")
    found = enforce.after(ctx, dict(obsidian_query_vault(ctx, params)))
    return [str(r["path"]) for r in found.get("results", [])]
