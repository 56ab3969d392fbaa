"""``vaultpilot embed``: bring the index's vectors up to date, with a progress bar.

The command syncs the index with the vault, then runs ``index.semantic.embed_pending`` with the
embedder the settings choose (``VAULTPILOT_EMBEDDINGS=local|openai``, see
``semantic.select_embedder``). Ctrl-C stops after the batch in progress (a second Ctrl-C stops at
once); everything embedded so far is kept and the next run resumes (exit status 130). Keyword
search keeps working meanwhile, from any other process.

One process embeds an index at a time (``index.background.EmbedLock``). When another one holds
it, usually a running ``vaultpilot serve`` embedding in the background, the command follows that
process's progress with the same bar instead of embedding the same chunks twice, and takes over
if it stops before the end. ``follow`` is also ``vaultpilot status --watch``. ``embedding_line``
formats coverage for ``vaultpilot status``.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
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
from vaultpilot.wording import plural

if TYPE_CHECKING:
    from vaultpilot.index.semantic import EmbeddingStatus

__all__ = ["StopOnInterrupt", "embed_cmd", "embedding_line", "follow", "register"]

_INTERRUPTED = 130
_FOLLOW_EVERY = 0.5  # seconds between two looks at another process's progress


def register(app: typer.Typer) -> None:
    app.command("embed")(embed_cmd)


def embedding_line(status: EmbeddingStatus, holder: str | None = None, *, hint: bool = True) -> str:
    """One line for ``vaultpilot status``: coverage, who is embedding, what to run."""
    from vaultpilot.index.background import describe_coverage

    line = describe_coverage(status, None, holder)
    if hint and not status.complete and holder is None:
        line += "; run `vaultpilot embed`"
    return line


class StopOnInterrupt:
    """First Ctrl-C sets ``requested`` (finish the batch, stop watching); the second interrupts."""

    def __init__(self, message: str = "stopping after this batch (Ctrl-C again to stop now)…"):
        self.requested = threading.Event()
        self._message = message
        self._previous: object = None

    def __enter__(self) -> StopOnInterrupt:
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
        # In a terminal through the progress bar's console, so the line goes above the bar
        # instead of being glued to it; otherwise on stderr.
        (console if console.is_terminal else err_console).print(self._message)


def _bar(label: str, *, quiet: bool) -> Progress:
    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal or quiet,
    )


def follow(
    conn: sqlite3.Connection,
    db_path: Path,
    stop: StopOnInterrupt,
    *,
    quiet: bool = False,
    every: float = _FOLLOW_EVERY,
) -> EmbeddingStatus:
    """Show another process's embedding progress until the index is fully embedded, nobody
    embeds it any more, or Ctrl-C; returns the coverage then."""
    from vaultpilot.index.background import lock_holder
    from vaultpilot.index.semantic import embedding_status

    status = embedding_status(conn)
    with _bar("embedding (background)", quiet=quiet) as bar:
        task = bar.add_task("chunks", total=status.chunks or None, completed=status.embedded)
        while not status.complete and not stop.requested.is_set():
            if lock_holder(db_path) is None:
                break
            stop.requested.wait(every)
            status = embedding_status(conn)
            bar.update(task, completed=status.embedded, total=status.chunks or None)
    return status


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
    from vaultpilot.index.background import EmbedLock, lock_holder
    from vaultpilot.index.semantic import embed_pending, embedding_status, select_embedder
    from vaultpilot.index.sync import sync_vault

    ws = open_workspace(vault, data_dir)
    embedder = select_embedder()
    lock = EmbedLock(ws.db_path, "vaultpilot embed")
    with index_connection(ws) as conn, StopOnInterrupt() as stop, lock:
        sync_vault(conn, ws.vault)
        followed = ""
        while not lock.acquire():
            holder = lock_holder(ws.db_path) or "another process"
            if not followed and not as_json:
                err_console.print(
                    f"{holder} is embedding this index; following its progress "
                    "(Ctrl-C stops watching, not the embedding).",
                    soft_wrap=True,
                )
            followed = holder
            status = follow(conn, ws.db_path, stop, quiet=as_json)
            if stop.requested.is_set():
                err_console.print(
                    f"stopped watching: {embedding_line(status, holder)}", soft_wrap=True
                )
                raise typer.Exit(_INTERRUPTED)
            if status.complete:
                _print_followed(status, holder, as_json=as_json)
                return
            time.sleep(0.05)  # the holder stopped early: take over

        with _bar("embedding", quiet=as_json) as bar:
            task = bar.add_task("chunks", total=None)

            def progress(done: int, total: int) -> None:
                if done == 0 and total and not as_json:
                    # A plain line too, so logs and pipes see that the work started; in a
                    # terminal it goes above the bar (same console), never into its line.
                    line = f"embedding {total} chunks with {embedder.model_name}"
                    (bar.console if bar.live.is_started else err_console).print(line)
                bar.update(task, completed=done, total=total)

            report = embed_pending(
                conn,
                embedder,
                progress=progress,
                should_stop=stop.requested.is_set,
                batch_size=batch,
            )
        status = embedding_status(conn)
    if as_json:
        print(
            json.dumps(
                {
                    "model": report.model,
                    "model_changed": report.model_changed,
                    "notes_chunked": report.notes_chunked,
                    "embedded_now": report.embedded,
                    "chunks": status.chunks,
                    "chunks_embedded": status.embedded,
                    "stopped": report.stopped,
                    "seconds": round(report.seconds, 3),
                },
                indent=2,
            )
        )
    else:
        if report.model_changed:
            model = escape(report.model)
            console.print(f"[yellow]model changed[/] to {model}: every chunk re-embedded")
        model, chunked = escape(report.model), plural(report.notes_chunked, "note")
        if report.embedded:
            rate = f" ({report.embedded / report.seconds:.0f} chunks/s)" if report.seconds else ""
            done = (
                f"[green]embedded[/] {plural(report.embedded, 'chunk')} ({chunked} chunked) "
                f"with {model} in {report.seconds:.1f} s{rate}"
            )
        else:  # e.g. after index --rebuild: the notes' text is already embedded, by its hash
            done = f"[green]chunked[/] {chunked}; their text was already embedded with {model}"
        if not (report.embedded or report.notes_chunked or report.model_changed):
            done = "nothing new to embed"
        line = embedding_line(status, hint=not report.stopped)
        console.print(f"{done}; {escape(line)}", soft_wrap=True)
    if report.stopped:
        err_console.print(
            f"stopped: {status.embedded} of {status.chunks} chunks embedded. Run "
            "`vaultpilot embed` again to resume; keyword search works meanwhile.",
            soft_wrap=True,
        )
        raise typer.Exit(_INTERRUPTED)


def _print_followed(status: EmbeddingStatus, holder: str, *, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    "model": status.model,
                    "embedded_by": holder,
                    "embedded_now": 0,
                    "chunks": status.chunks,
                    "chunks_embedded": status.embedded,
                    "stopped": False,
                },
                indent=2,
            )
        )
    else:
        line = escape(embedding_line(status))
        console.print(f"[green]embedded[/] by {escape(holder)}: {line}", soft_wrap=True)
