"""Pieces every vault-manager operation shares: results (``done``; ``dry`` marks one as a dry
run carrying its diffs), confirmation, required parameters, property edits (``metadata`` with
null meaning "remove") and the files a person approved (``approved``)."""

from __future__ import annotations

from typing import Any

from vaultpilot.errors import ConfirmationRequiredError, InvalidArgumentError
from vaultpilot.tools.diffs import FileDiff
from vaultpilot.tools.models import VaultManagerParams
from vaultpilot.tools.results import OperationResult
from vaultpilot.vault.frontmatter_edit import edit_frontmatter, normalize_tag

__all__ = ["approved", "done", "dry", "metadata_edit", "need", "require_confirmation"]


def done(
    p: VaultManagerParams, paths: list[str], message: str, warnings: list[str] | None = None
) -> OperationResult:
    """A successful ``OperationResult``: ``paths`` are the files or folders changed."""
    out: OperationResult = {
        "success": True,
        "operation": p.operation,
        "affectedCount": len(paths),
        "affectedPaths": paths,
        "message": message,
    }
    if warnings:
        out["warnings"] = warnings
    return out


def dry(out: OperationResult, diffs: list[FileDiff]) -> OperationResult:
    """Mark ``out`` as a dry run: nothing written, ``diffs`` says what would be."""
    out["message"] = f"Dry run, nothing written: {out['message']}"
    out["dryRun"] = True
    out["diffs"] = [d.as_json() for d in diffs]
    return out


def approved(p: VaultManagerParams, path: str) -> bool:
    """Whether a person approved changing ``path`` (always, without a per-file approval)."""
    return p.approved_files is None or path in p.approved_files


def require_confirmation(p: VaultManagerParams) -> None:
    if not p.confirm_destructive:
        raise ConfirmationRequiredError(
            f"Invalid operation: {p.operation} requires confirmDestructive=true. This prevents "
            "accidental data loss. Set confirmDestructive=true to proceed."
        )


def need(value: str | None, name: str, op: str, example: str) -> str:
    """A required string parameter, or a message naming it with an example."""
    if value is None or not value.strip():
        raise InvalidArgumentError(f"operation='{op}' needs '{name}', e.g. {name}={example}.")
    return value.strip()


def metadata_edit(text: str, metadata: dict[str, Any]) -> str:
    """Set the properties in ``metadata`` on a note's text; a null value removes the property."""
    sets = {k: v for k, v in metadata.items() if v is not None}
    for key in [k for k in sets if k.lower() in ("tags", "tag")]:
        raw = sets[key]
        sets[key] = [normalize_tag(str(t)) for t in (raw if isinstance(raw, list) else [raw])]
    removes = [k for k, v in metadata.items() if v is None]
    return edit_frontmatter(text, set_values=sets, remove_keys=removes).text
