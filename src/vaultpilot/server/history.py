"""The change journal over the server: ``ChangeHistory``, ``ShowChangeSet``, ``UndoChangeSet``.

Each function takes the vault's ``ToolContext`` (lent by ``VaultHandle.run``) and returns the
command's result as plain JSON (the shapes ``models.ChangeHistoryResult``, ``ShowChangeSetResult``
and ``UndoChangeSetResult`` describe, pinned by ``tests/server/snapshots/rpc_history_*.json``):

* a change set (``ChangeSet.as_json``, as ``vaultpilot history --json`` shows it too): ``id``,
  ``when`` (ISO 8601, local time), ``source`` (cli, server, mcp, agent), ``runId`` (an agent
  run's id: its change set has that id), ``summary`` (the operations), ``undoOf``,
  ``undoneBy`` (the undo that undid every change of it and still stands, else null) and
  ``files`` (``kind``, ``operation``, ``from``, ``to`` per file change);
* ``ShowChangeSet`` adds ``diffs``: the unified diff of each file change (a move or a folder names
  its two paths);
* ``UndoChangeSet`` restores every file of a set (or the latest, ``last``) as a new change set
  (``memory.undo``): ``undone``, ``changeSetId`` (null when nothing was restored), ``restored``,
  ``skipped``. Files changed since the set make it refuse and write nothing (``stale_version``),
  unless ``skipChanged``. An unknown id is ``not_found``; a lost journal blob is a
  ``storage_error`` raised before anything is written. The change set of an agent run that is
  still going (``running``: the server's active runs) is refused: stop the run first.

``conversation_transcript`` (``GET /conversations/{id}``, read-only) gives a stored conversation
back to the agent view: per run, in order, the person's message (``goal``), the run's stored
events (the agent events its frames carried, streamed text merged per step, each with ``time``)
and its change set (``changeSet``: the files, each saying whether it ``exists`` now, and
``undoneBy``, the id of the set that undid it, or null), so the page can show the run again and
offer Undo for a change set not undone yet. A conversation of another vault is ``not_found``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from vaultpilot.errors import (
    NotFoundError,
    RequestError,
    SetupError,
    StorageError,
    UnreadableNoteError,
)
from vaultpilot.memory.conversations import get_conversation, run_transcripts
from vaultpilot.memory.db import connect as connect_memory
from vaultpilot.memory.journal import Journal, StoredChange, without_parent_folders
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.diffs import binary, unified
from vaultpilot.tools.manage import check_undo_target, undo_change_set
from vaultpilot.vault.files import decode_note

__all__ = ["change_history", "conversation_transcript", "show_change_set", "undo_changes"]


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
    ctx: ToolContext,
    set_id: str | None,
    *,
    last: bool,
    skip_changed: bool,
    running: Collection[str] = (),
) -> dict[str, Any]:
    check_undo_target(set_id, last=last)
    journal = _journal(ctx)
    vault = str(ctx.root)
    target = journal.get(vault, set_id).id if set_id is not None else journal.last_to_undo(vault)
    if target in running:
        raise RequestError(
            f"The agent run {target} is still going, so its changes cannot be undone yet: stop "
            "it first (InterruptAgent with force: true), then undo."
        )
    undone, new, report = undo_change_set(ctx, target, skip_changed=skip_changed)
    return {
        "undone": undone,
        "changeSetId": new,
        "restored": report.restored,
        "skipped": report.skipped,
        "summary": report.summary(),  # in words, for a person
    }


def _change_set(ctx: ToolContext, journal: Journal, run_id: str) -> dict[str, Any] | None:
    try:
        cs = journal.get(str(ctx.root), run_id)
    except NotFoundError:
        return None  # the run changed nothing
    if cs.id != run_id:
        return None  # a prefix of another set's id, not this run's
    # What the run changed as a person counts it: a folder made only to hold a note is not one.
    shown = replace(cs, changes=without_parent_folders(cs.changes)).as_json()
    for f in shown["files"]:
        path = f["to"] if f["kind"] != "delete" else f["from"]
        f["exists"] = bool(path) and (ctx.root / path).exists()
    return {k: shown[k] for k in ("id", "summary", "files", "undoneBy")}


def conversation_transcript(ctx: ToolContext, conversation_id: str) -> dict[str, Any]:
    journal = _journal(ctx)
    try:
        conn = connect_memory(journal.path)
    except sqlite3.Error as exc:
        raise StorageError(f"Could not open '{journal.path}': {exc}.") from None
    try:
        conv = get_conversation(conn, conversation_id)
        if conv.vault != str(ctx.root):
            raise NotFoundError(
                f"No conversation '{conversation_id}' in this vault; GET /conversations?vaultId= "
                "lists the vault's conversations."
            )
        runs = run_transcripts(conn, conv.id)
    except sqlite3.Error as exc:
        problem = f"Could not read the conversations in '{journal.path}': {exc}."
        raise StorageError(problem) from None
    finally:
        conn.close()
    return {
        "id": conv.id,
        "title": conv.title,
        "updated": round(conv.updated_at * 1000),
        "runs": [
            {
                "runId": run_id,
                "goal": goal,
                "events": events,
                "changeSet": _change_set(ctx, journal, run_id),
            }
            for run_id, goal, events in runs
        ],
    }
