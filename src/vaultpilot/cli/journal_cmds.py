"""``vaultpilot history``, ``show`` and ``undo``: the change journal of a vault.

    vaultpilot history [--json]            change sets, newest first (id, when, source, summary)
    vaultpilot show ID                     the unified diffs of one change set
    vaultpilot undo ID | --last [--skip-changed]

Undo restores every file of the change set to its state before it, as a new change set (so it
can be undone too), and removes the folders the set created once they are empty. The rules
(already undone, files changed since, ``--skip-changed``) are ``memory.undo``'s, shared with the
server and chat. ``history`` marks each undone set with the undo that undid it, and a set that grew
after its undo (a run still writing) as partly undone. Ids may be
shortened to a unique prefix. A vault with no journal yet gets nothing created by these commands.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

import typer

from vaultpilot.cli.common import (
    DataDirOpt,
    JsonOpt,
    VaultOpt,
    console,
    handle_errors,
    open_workspace,
)
from vaultpilot.errors import NotFoundError, UnreadableNoteError
from vaultpilot.locations import data_root, memory_db_path
from vaultpilot.memory.journal import ChangeSet, Journal, StoredChange
from vaultpilot.memory.undo import UndoReport

__all__ = ["register"]


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def _text(journal: Journal, digest: str | None, path: str) -> str:
    if digest is None:
        return ""
    data = journal.blob(digest, path)
    try:
        from vaultpilot.vault.files import decode_note

        return decode_note(data, path)[0]
    except UnreadableNoteError:
        return f"(binary content, {len(data)} bytes)\n"


def _diff(journal: Journal, c: StoredChange) -> str:
    from vaultpilot.tools.diffs import unified

    if c.kind in ("move", "mkdir") or (c.kind == "delete" and c.hash_before is None):
        return f"{c.kind}: {c.path_before or ''} -> {c.path_after or ''}\n"
    old_path = c.path_before if c.kind != "create" else None
    new_path = c.path_after if c.kind != "delete" else None
    old = _text(journal, c.hash_before, c.path_before or "")
    new = _text(journal, c.hash_after, c.path_after or "")
    return unified(old_path, new_path, old, new).diff


def _existing(journal: Journal | None, set_id: str | None) -> Journal:
    if journal is None:
        raise NotFoundError(
            (f"No change set '{set_id}': " if set_id else "")
            + "nothing has been recorded for any vault with this data folder yet, so there is "
            "nothing to undo or show (`vaultpilot history` lists what has been)."
        )
    return journal


def _undone_mark(cs: ChangeSet) -> str:
    if cs.undone_by:
        return f"undone by {cs.undone_by}"
    later = len(cs.remaining)
    stand = "later change stands" if later == 1 else "later changes stand"
    return f"partly undone by {cs.last_undo}: {later} {stand}"


def _undone_line(undone: str, new: str | None, report: UndoReport) -> str:
    made = f" (recorded as change set {new}: undo that to bring the changes back)" if new else ""
    return f"Undid change set {undone}{made}: {report.summary()}."


_HEADER = ("ID", "WHEN", "SOURCE", "OPERATIONS", "FILES")


def _history_row(s: ChangeSet) -> tuple[str, ...]:
    paths = s.paths()
    shown = ", ".join(paths[:3]) + (f" (+{len(paths) - 3})" if len(paths) > 3 else "")
    undone = f"  [{_undone_mark(s)}]" if s.last_undo else ""
    return (s.id, _when(s.created_at), s.source, s.summary, shown + undone)


def register(app: typer.Typer) -> None:
    """Add ``history``, ``show`` and ``undo`` to ``app``."""

    def journal_for(data_dir: str | None) -> Journal | None:
        """The change journal, or None when there is no memory.db yet (nothing recorded)."""
        path = memory_db_path(data_root(data_dir))
        return Journal(path) if path.is_file() else None

    @app.command("history")
    @handle_errors
    def history(
        as_json: JsonOpt = False,
        limit: Annotated[
            int, typer.Option("--limit", min=1, help="How many change sets (at least 1).")
        ] = 20,
        vault: VaultOpt = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """List the vault's change sets, newest first."""
        ws = open_workspace(vault, data_dir, indexes=False)
        journal = journal_for(data_dir)
        try:
            sets = journal.change_sets(str(ws.vault), limit=limit) if journal else []
        finally:
            if journal:
                journal.close()
        if as_json:
            typer.echo(json.dumps([s.as_json() for s in sets], ensure_ascii=False, indent=2))
            return
        if not sets:
            console.print("No changes recorded for this vault yet.")
            return
        rows = [_history_row(s) for s in sets]
        widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER) - 1)]
        for row in [_HEADER, *rows]:
            cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
            console.print("  ".join([*cells, row[-1]]).rstrip(), soft_wrap=True, markup=False)

    @app.command("show")
    @handle_errors
    def show(
        set_id: Annotated[str, typer.Argument(help="Change-set id (from `vaultpilot history`).")],
        vault: VaultOpt = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Print the unified diffs of one change set."""
        ws = open_workspace(vault, data_dir, indexes=False)
        journal = _existing(journal_for(data_dir), set_id)
        try:
            cs = journal.get(str(ws.vault), set_id)
            diffs = [_diff(journal, c) for c in cs.changes]
        finally:
            journal.close()
        undone = f"  ({_undone_mark(cs)})" if cs.last_undo else ""
        typer.echo(f"change set {cs.id}  {_when(cs.created_at)}  {cs.source}  {cs.summary}{undone}")
        for d in diffs:
            typer.echo(d, nl=not d.endswith("\n"))

    @app.command("undo")
    @handle_errors
    def undo_cmd(
        set_id: Annotated[str | None, typer.Argument(help="Change-set id to undo.")] = None,
        last: Annotated[
            bool, typer.Option("--last", help="Undo the latest change set not undone yet.")
        ] = False,
        skip_changed: Annotated[
            bool,
            typer.Option("--skip-changed", help="Leave files changed since; undo the rest."),
        ] = False,
        vault: VaultOpt = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Restore every file of a change set to its state before it (as a new change set)."""
        from vaultpilot.tools import open_context
        from vaultpilot.tools.manage import check_undo_target, undo_change_set

        check_undo_target(set_id, last=last, last_word="--last")
        ws = open_workspace(vault, data_dir, indexes=False)
        journal = _existing(journal_for(data_dir), set_id)
        try:
            # Look the set up before the index is opened: an unknown id (or a folder that was
            # never a vault) creates no data folder.
            wanted = journal.get(str(ws.vault), set_id or journal.last_to_undo(str(ws.vault)))
            ctx = open_context(ws.vault, ws.db_path, journal=journal)
            try:
                undone, new, report = undo_change_set(
                    ctx, wanted.id if set_id else None, skip_changed=skip_changed
                )
            finally:
                ctx.conn.close()
        finally:
            journal.close()
        console.print(_undone_line(undone, new, report), soft_wrap=True, markup=False)
        if report.skipped:
            console.print(
                f"Left as they are (changed since): {', '.join(report.skipped)}",
                soft_wrap=True,
                markup=False,
            )
