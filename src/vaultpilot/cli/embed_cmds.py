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

``run_embedding`` is the command's body, shared with ``vaultpilot index``: ``command`` names the
program the person ran, which is what the lock file shows other processes (``status``, a server)
and what the resume hints tell the person to run again, with ``--vault`` (``rerun``).
"""

from __future__ import annotations

import json
import shlex
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
from rich.text import Text

from vaultpilot.cli.common import (
    DataDirOpt,
    JsonOpt,
    VaultOpt,
    Workspace,
    console,
    err_console,
    handle_errors,
    index_connection,
    open_workspace,
)
from vaultpilot.locations import data_root
from vaultpilot.wording import plural

if TYPE_CHECKING:
    from rich.progress import Task

    from vaultpilot.index.semantic import EmbeddingStatus

__all__ = [
    "CountColumn",
    "StopOnInterrupt",
    "embed_cmd",
    "embedding_line",
    "follow",
    "register",
    "rerun",
    "run_embedding",
]

_INTERRUPTED = 130
_FOLLOW_EVERY = 0.5  # seconds between two looks at another process's progress


def register(app: typer.Typer) -> None:
    app.command("embed")(embed_cmd)


def rerun(command: str, ws: Workspace, data_dir: str | None = None) -> str:
    """``command`` with this vault (and ``--data-dir`` when one was given) as shell words, so
    a hint works from any folder: ``vaultpilot index --vault '/notes/My Vault'``."""
    words = [*command.split(), "--vault", str(ws.vault)]
    if data_dir:
        words += ["--data-dir", str(data_root(data_dir))]
    return " ".join(shlex.quote(w) if i >= 2 else w for i, w in enumerate(words))


def embedding_line(
    status: EmbeddingStatus, holder: str | None = None, *, command: str | None
) -> str:
    """One line for ``vaultpilot status`` and the end of ``embed``/``index``: coverage, who is
    embedding, and ``command`` to run when nobody is (None: no hint).

    The coverage words are ``index.background.coverage_words`` (the server's line too).
    """
    from vaultpilot.index.background import coverage_words

    line = coverage_words(status)
    if holder is not None and not status.complete:
        line += f"; being embedded by {holder}"
    elif command and not status.complete:
        line += f"; run `{command}`"
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


class CountColumn(MofNCompleteColumn):
    """``12/300``, or nothing while the total is unknown (not ``0/?``)."""

    def render(self, task: Task) -> Text:
        return Text("") if task.total is None else super().render(task)


class _Remaining(TimeRemainingColumn):
    """The time left, or nothing while the total is unknown (not ``-:--:--``)."""

    def render(self, task: Task) -> Text:
        return Text("") if task.total is None else super().render(task)


def _bar(*, quiet: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        CountColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        _Remaining(),
        console=console,
        transient=True,
        disable=not console.is_terminal or quiet,
    )


def _chunking(pending: int) -> str:
    return f"chunking {plural(pending, 'note')}…"


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

    def label(status: EmbeddingStatus) -> str:
        # While the other process chunks, its chunk count is not known yet: say what it does.
        doing = _chunking(status.notes_pending) if status.notes_pending else "embedding"
        return f"{doing} (background)"

    status = embedding_status(conn)
    with _bar(quiet=quiet) as bar:
        task = bar.add_task(
            label(status),
            total=None if status.notes_pending else status.chunks or None,
            completed=status.embedded,
        )
        while not status.complete and not stop.requested.is_set():
            if lock_holder(db_path) is None:
                break
            stop.requested.wait(every)
            status = embedding_status(conn)
            bar.update(
                task,
                description=label(status),
                completed=status.embedded,
                total=None if status.notes_pending else status.chunks or None,
            )
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
    ws = open_workspace(vault, data_dir)
    run_embedding(ws, data_dir, command="vaultpilot embed", batch=batch, as_json=as_json)


def run_embedding(
    ws: Workspace,
    data_dir: str | None,
    *,
    command: str,
    batch: int = 32,
    as_json: bool = False,
) -> None:
    """Sync, then embed what is missing (or follow the process that is embedding); ``command``
    is the program the person ran (``vaultpilot embed``, ``vaultpilot index``): the lock file
    names it to other processes, and the hints say to run it again with ``data_dir``."""
    from vaultpilot.index.background import EmbedLock, lock_holder
    from vaultpilot.index.semantic import embed_pending, embedding_status, select_embedder
    from vaultpilot.index.sync import sync_vault

    embedder = select_embedder()
    again = rerun(command, ws, data_dir)
    lock = EmbedLock(ws.db_path, command)
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
                    f"stopped watching: {embedding_line(status, holder, command=None)}",
                    soft_wrap=True,
                )
                raise typer.Exit(_INTERRUPTED)
            if status.complete:
                _print_followed(status, holder, as_json=as_json)
                return
            time.sleep(0.05)  # the holder stopped early: take over

        pending = embedding_status(conn).notes_pending
        with _bar(quiet=as_json) as bar:
            # Chunking comes first and reports nothing until it ends: say so, not "0/?".
            task = bar.add_task(_chunking(pending) if pending else "embedding", total=None)
            bar.refresh()

            def progress(done: int, total: int) -> None:
                if done == 0 and total and not as_json:
                    # A plain line too, so logs and pipes see that the work started; in a
                    # terminal it goes above the bar (same console), never into its line.
                    line = f"embedding {total} chunks with {embedder.model_name}"
                    (bar.console if bar.live.is_started else err_console).print(line)
                bar.update(task, description="embedding", completed=done, total=total)

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
                    "notes_pending": status.notes_pending,
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
        line = embedding_line(status, command=None if report.stopped else again)
        console.print(f"{done}; {escape(line)}", soft_wrap=True)
    if report.stopped:
        err_console.print(
            f"stopped: {embedding_line(status, command=None)}. Run `{again}` again to "
            "resume; keyword search works meanwhile.",
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
        line = escape(embedding_line(status, command=None))
        console.print(f"[green]embedded[/] by {escape(holder)}: {line}", soft_wrap=True)
