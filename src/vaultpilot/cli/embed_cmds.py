"""``vaultpilot embed``: bring the index's vectors up to date, with a progress bar.

The command syncs the index with the vault, then runs ``index.semantic.embed_pending`` with the
embedder the settings choose (``VAULTPILOT_EMBEDDINGS=local|openai``, see
``semantic.select_embedder``). Ctrl-C stops after the batch in progress (a second Ctrl-C stops at
once); everything embedded so far is kept and the next run resumes (exit status 130). Keyword
search keeps working meanwhile, from any other process. ``embedding_line`` formats coverage for
``vaultpilot status``.
"""

from __future__ import annotations

import json
import signal
import threading
from types import FrameType
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vaultpilot.cli.common import (
    DataDirOpt,
    JsonOpt,
    VaultOpt,
    console,
    err_console,
    handle_errors,
    index_connection,
    open_workspace,
)

__all__ = ["embed_cmd", "embedding_line", "register"]

_INTERRUPTED = 130


def register(app: typer.Typer) -> None:
    app.command("embed")(embed_cmd)


def embedding_line(embedded: int, total: int, notes_pending: int = 0) -> str:
    """One line for ``vaultpilot status``: chunks embedded of all chunks, and what is left."""
    if total == 0 and notes_pending == 0:
        return "no chunks yet; run `vaultpilot embed`"
    share = f" ({100 * embedded / total:.0f}%)" if total else ""
    line = f"{embedded} of {total} chunks embedded{share}"
    if notes_pending:
        line += f"; {notes_pending} notes to chunk"
    if embedded < total or notes_pending:
        line += "; run `vaultpilot embed`"
    return line


class _StopOnInterrupt:
    """First Ctrl-C asks the pass to stop after its batch; the second interrupts at once."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: object = None

    def __enter__(self) -> _StopOnInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.requested.set()
        err_console.print("stopping after this batch (Ctrl-C again to stop now)…")


@handle_errors
def embed_cmd(
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=1024, help="Chunks per committed batch.")
    ] = 32,
    as_json: JsonOpt = False,
) -> None:
    """Embed the notes' chunks for semantic search (only new or changed text; resumable)."""
    from vaultpilot.index.semantic import embed_pending, embedding_coverage, select_embedder
    from vaultpilot.index.sync import sync_vault

    ws = open_workspace(vault, data_dir)
    embedder = select_embedder()
    with index_connection(ws) as conn, _StopOnInterrupt() as stop:
        sync_vault(conn, ws.vault)
        with Progress(
            TextColumn("[bold]embedding"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal or as_json,
        ) as bar:
            task = bar.add_task("chunks", total=None)

            def progress(done: int, total: int) -> None:
                if done == 0 and not as_json:
                    # A plain line too, so logs and pipes see that the work started.
                    err_console.print(f"embedding {total} chunks with {embedder.model_name}")
                bar.update(task, completed=done, total=total)

            report = embed_pending(
                conn,
                embedder,
                progress=progress,
                should_stop=stop.requested.is_set,
                batch_size=batch,
            )
        embedded, total = embedding_coverage(conn)
    if as_json:
        print(
            json.dumps(
                {
                    "model": report.model,
                    "model_changed": report.model_changed,
                    "notes_chunked": report.notes_chunked,
                    "embedded_now": report.embedded,
                    "chunks": total,
                    "chunks_embedded": embedded,
                    "stopped": report.stopped,
                    "seconds": round(report.seconds, 3),
                },
                indent=2,
            )
        )
    else:
        if report.model_changed:
            console.print(f"[yellow]model changed[/] to {report.model}: every chunk re-embedded")
        rate = report.embedded / report.seconds if report.seconds > 0 else 0.0
        console.print(
            f"[green]embedded[/] {report.embedded} chunks ({report.notes_chunked} notes "
            f"chunked) with {report.model} in {report.seconds:.1f} s ({rate:.0f} chunks/s); "
            f"{embedding_line(embedded, total)}",
            soft_wrap=True,
        )
    if report.stopped:
        err_console.print(
            f"stopped: {embedded} of {total} chunks embedded. Run `vaultpilot embed` again to "
            "resume; keyword search works meanwhile.",
            soft_wrap=True,
        )
        raise typer.Exit(_INTERRUPTED)
