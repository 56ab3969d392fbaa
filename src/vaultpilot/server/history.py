"""The change journal over the server: ``ChangeHistory``, ``ShowChangeSet``, ``UndoChangeSet``.

Each function takes the vault's ``ToolContext`` (lent by ``VaultHandle.run``) and returns the
command's result as plain JSON (the shapes ``models.ChangeHistoryResult``, ``ShowChangeSetResult``
and ``UndoChangeSetResult`` describe, pinned by ``tests/server/snapshots/rpc_history_*.json``):

* a change set: ``id``, ``when`` (ISO 8601, local time), ``source`` (cli, server, mcp, agent),
  ``runId`` (an agent run's id: its change set has that id), ``summary`` (the operations),
  ``undoOf`` and ``files`` (``kind``, ``operation``, ``from``, ``to`` per file change);
* ``ShowChangeSet`` adds ``diffs``: the unified diff of each file change (a move or a folder names
  its two paths);
* ``UndoChangeSet`` restores every file of a set (or the latest, ``last``) as a new change set
  (``memory.undo``): ``undone``, ``changeSetId`` (null when nothing was restored), ``restored``,
  ``skipped``. Files changed since the set make it refuse and write nothing (``stale_version``),
  unless ``skipChanged``. An unknown id is ``not_found``; a lost journal blob is a
  ``storage_error`` raised before anything is written.
"""

from __future__ import annotations

from typing import Any

from vaultpilot.errors import InvalidArgumentError, SetupError, UnreadableNoteError
from vaultpilot.memory.journal import Journal, StoredChange
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.diffs import binary, unified
from vaultpilot.tools.manage import undo_change_set
from vaultpilot.vault.files import decode_note

__all__ = ["change_history", "show_change_set", "undo_changes"]


def _journal(ctx: ToolContext) -> Journal:
    if ctx.journal is None:
        raise SetupError(
            "This vault has no change journal (its index is not in a vaultpilot data folder); "
            "start the server with the default data folder or --data-dir."
        )
    return ctx.journal


def _text(journal: Journal, digest: str | None, path: str) -> str | None:
    """A stored version's text; None when it is not text (an attachment)."""
    if digest is None:
        return ""
    try:
        return decode_note(journal.blob(digest, path), path)[0]
    except UnreadableNoteError:
        return None


def _diff(journal: Journal, c: StoredChange) -> dict[str, Any]:
    if c.kind in ("move", "mkdir") or (c.kind == "delete" and c.hash_before is None):
        return binary(c.path_before, c.path_after).as_json()
    old_path = c.path_before if c.kind != "create" else None
    new_path = c.path_after if c.kind != "delete" else None
    old = _text(journal, c.hash_before, c.path_before or "")
    new = _text(journal, c.hash_after, c.path_after or "")
    if old is None or new is None:
        return binary(old_path, new_path).as_json()
    return unified(old_path, new_path, old, new).as_json()


def change_history(ctx: ToolContext, *, limit: int) -> dict[str, Any]:
    sets = _journal(ctx).change_sets(str(ctx.root), limit=limit)
    return {"changeSets": [s.as_json() for s in sets]}


def show_change_set(ctx: ToolContext, set_id: str) -> dict[str, Any]:
    journal = _journal(ctx)
    cs = journal.get(str(ctx.root), set_id)
    return {**cs.as_json(), "diffs": [_diff(journal, c) for c in cs.changes]}


def undo_changes(
    ctx: ToolContext, set_id: str | None, *, last: bool, skip_changed: bool
) -> dict[str, Any]:
    if (set_id is None) == (not last):
        raise InvalidArgumentError(
            "Give the change set to undo in 'id' (see ChangeHistory), or last=true for the "
            "latest one, not both."
        )
    _journal(ctx)
    undone, new, report = undo_change_set(ctx, set_id, skip_changed=skip_changed)
    return {
        "undone": undone,
        "changeSetId": new,
        "restored": report.restored,
        "skipped": report.skipped,
    }
