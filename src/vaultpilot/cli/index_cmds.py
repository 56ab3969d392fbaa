"""Index commands: ``index``, ``search``, ``links``, ``backlinks``, ``unresolved``, ``status``."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from vaultpilot.cli.common import (
    DataDirOpt,
    JsonOpt,
    VaultOpt,
    Workspace,
    console,
    handle_errors,
    index_connection,
    open_workspace,
    quoted,
)
from vaultpilot.errors import InvalidArgumentError
from vaultpilot.wording import plural

if TYPE_CHECKING:
    from vaultpilot.index.semantic import EmbeddingStatus
    from vaultpilot.index.status import IndexStatus

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("index")(index_cmd)
    app.command("search")(search_cmd)
    app.command("links")(links_cmd)
    app.command("backlinks")(backlinks_cmd)
    app.command("unresolved")(unresolved_cmd)
    app.command("status")(status_cmd)


@handle_errors
def index_cmd(
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Start from an empty index: every note is parsed and chunked again. The "
            "embeddings are kept (stored by chunk text) and reused for every unchanged chunk, so "
            "nothing is embedded twice.",
        ),
    ] = False,
    no_embed: Annotated[
        bool, typer.Option("--no-embed", help="Index only; embed later with `vaultpilot embed`.")
    ] = False,
) -> None:
    """Bring the index up to date with the vault (only changed notes are parsed again), then
    embed the new and changed notes for semantic search (resumable; --no-embed skips it)."""
    from vaultpilot.cli.embed_cmds import CountColumn, rerun, run_embedding
    from vaultpilot.errors import SetupError
    from vaultpilot.index.semantic import select_embedder
    from vaultpilot.index.sync import sync_vault
    from vaultpilot.index.vectors import stored_count

    ws = open_workspace(vault, data_dir)
    with (
        index_connection(ws) as conn,
        Progress(
            TextColumn("[bold]indexing"),
            BarColumn(),
            CountColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        ) as bar,
    ):
        task = bar.add_task("notes", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = sync_vault(conn, ws.vault, rebuild=rebuild, progress=progress, counts=True)
        kept = stored_count(conn) if rebuild else 0
    console.print(
        f"[green]indexed[/] {ws.vault}: {report.notes} notes ({report.parsed} parsed, "
        f"{report.deleted} removed), {report.attachments} attachments, {report.links} links "
        f"({report.unresolved_links} unresolved), {report.tags} tags in {report.seconds:.2f} s"
    )
    for path, why in report.skipped:
        console.print(f"[yellow]skipped[/] {escape(path)}: {escape(why)}")
    if report.notes == 0:
        console.print(
            f"[yellow]warning[/]: {escape(str(ws.vault))} holds no notes (.md files). Is it the "
            "vault you meant? Name another with --vault PATH."
        )
    embed_later = rerun("vaultpilot embed", ws, data_dir)
    if kept:
        again = f"`{escape(embed_later)}` chunks" if no_embed else "the embedding pass below chunks"
        console.print(
            f"[green]kept[/] {plural(kept, 'embedding')}: {again} the notes again and reuses them "
            "for every unchanged chunk (nothing is embedded twice).",
            soft_wrap=True,
        )
    if no_embed:
        return
    try:
        select_embedder()  # a missing model is not a failed index: say so and stop here
    except SetupError as err:
        console.print(
            f"[yellow]not embedded[/]: {escape(err.message)} Semantic search ranks by keywords "
            f"until the notes are embedded (`{escape(embed_later)}`).",
            soft_wrap=True,
        )
        return
    run_embedding(ws, data_dir, command="vaultpilot index")


@handle_errors
def search_cmd(
    query: Annotated[str, typer.Argument(help='Words to find; "quoted phrases" stay together.')],
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only notes with this tag (nested tags included).")
    ] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only notes in this folder.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 10,
    as_json: JsonOpt = False,
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Keyword search over titles, aliases, headings and text (BM25 ranking)."""
    from vaultpilot.index.search import search
    from vaultpilot.tools.models import QUERY_MAX

    if len(query) > QUERY_MAX:
        raise InvalidArgumentError(
            f"The query {quoted(query)} is too long: at most {QUERY_MAX:,} characters. Search "
            'for a few words or a "quoted phrase".'
        )
    _check_filters(tag, path)
    ws = open_workspace(vault, data_dir)
    with index_connection(ws, fresh=True) as conn:
        hits, total = search(conn, query, tag=tag, folder=path, limit=limit)
    if as_json:
        print(
            json.dumps(
                {"total": total, "results": [asdict(h) for h in hits]}, ensure_ascii=False, indent=2
            )
        )
        return
    filters = [f"tag #{tag.lstrip('#')}" if tag else "", f"folder {path}" if path else ""]
    within = " and ".join(f for f in filters if f)
    if not hits:
        where = f" with {within}" if within else ""
        hint = " (try without --tag/--path)" if within else ""
        console.print(Text(f"No notes{where} match {quoted(query)}{hint}."))
        return
    for rank, hit in enumerate(hits, 1):
        head = Text(f"{rank:>2}. ", "dim")
        head.append(hit.path, "bold cyan")
        console.print(head, soft_wrap=True)
        console.print(_highlighted("    " + " ".join(hit.snippet.split())))
    shown = (
        f"{len(hits)} of {total} matching notes"
        if total > len(hits)
        else (f"{total} matching note" + ("" if total == 1 else "s"))
    )
    console.print(Text(shown + (f" ({within})" if within else "") + ", best first", "dim"))


def _vectors_line(
    conn: sqlite3.Connection, emb: EmbeddingStatus, holder: str | None, *, hint: str
) -> str:
    """``status``'s vectors line, ending with ``hint`` (the command to run) when nobody embeds;
    after ``index --rebuild`` (notes to chunk again, their vectors kept) it says the embeddings
    are there, not "nothing embedded yet"."""
    from vaultpilot.cli.embed_cmds import embedding_line
    from vaultpilot.index.vectors import stored_count

    stored = stored_count(conn) if emb.notes_pending else 0
    if stored > emb.embedded and emb.chunks == 0 and holder is None:
        return (
            f"{plural(emb.notes_pending, 'note')} to chunk again, {plural(stored, 'embedding')} "
            f"kept for their unchanged text; run `{hint}` (nothing is embedded twice)"
        )
    line = embedding_line(emb, holder, command=None)
    if stored > emb.embedded:
        line += f" ({plural(stored - emb.embedded, 'stored embedding')} kept for unchanged text)"
    if holder is None and not emb.complete:
        line += f"; run `{hint}`"
    return line


def _check_filters(tag: str | None, folder: str | None) -> None:
    """``--tag`` and ``--path`` as the command line gives them: a tag has no spaces, and a
    folder is relative to the vault (the examples name a tag and a folder, not a note)."""
    if tag is not None and (not tag.strip("#").strip() or any(c.isspace() for c in tag)):
        raise InvalidArgumentError(
            f"--tag {quoted(tag)} is not a tag: a tag has no spaces. Give one tag, e.g. "
            "--tag project or --tag project/active."
        )
    if folder is not None and (folder.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", folder)):
        raise InvalidArgumentError(
            f"--path {quoted(folder)} is absolute: give a folder inside the vault, relative to "
            "its root, e.g. --path Projects or --path 'Projects/Mobile App'."
        )


def _highlighted(snippet: str) -> Text:
    """The snippet with the index's ``**match**`` markers shown as bold, not as asterisks."""
    out = Text()
    for i, part in enumerate(snippet.split("**")):
        out.append(part, "bold yellow" if i % 2 else "")
    return out


def _show_links(
    note: str, as_json: bool, vault: str | None, data_dir: str | None, *, backlinks: bool
) -> None:
    from vaultpilot.index.queries import backlinks as backlinks_of
    from vaultpilot.index.queries import find_note, outgoing_links
    from vaultpilot.tools.models import NAME_MAX

    if len(note) > NAME_MAX:
        raise InvalidArgumentError(
            f"No note is named {quoted(note)}: a note path or title is at most {NAME_MAX} "
            "characters. Give the note's path or title."
        )
    ws = open_workspace(vault, data_dir)
    with index_connection(ws, fresh=True) as conn:
        path = find_note(conn, note)
        rows = backlinks_of(conn, path) if backlinks else outgoing_links(conn, path)
    if as_json:
        print(json.dumps([asdict(r) for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        said = f"No notes link to {path}." if backlinks else f"{path} links to no note or file."
        console.print(Text(said), soft_wrap=True)
        return
    table = Table("from" if backlinks else "to", "line", "kind", "written as")
    for r in rows:
        shown = escape(r.source if backlinks else (r.target or f"{r.target_text} (unresolved)"))
        written = escape(r.target_text + r.subpath + (f"|{r.alias}" if r.alias else ""))
        table.add_row(shown, str(r.line), f"{r.kind} ({r.syntax})", written)
    console.print(table)


@handle_errors
def links_cmd(
    note: Annotated[str, typer.Argument(help="A note path or title.")],
    as_json: JsonOpt = False,
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Links written in a note, with where each one leads."""
    _show_links(note, as_json, vault, data_dir, backlinks=False)


@handle_errors
def backlinks_cmd(
    note: Annotated[str, typer.Argument(help="A note path or title.")],
    as_json: JsonOpt = False,
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Notes that link to a note."""
    _show_links(note, as_json, vault, data_dir, backlinks=True)


@handle_errors
def unresolved_cmd(
    as_json: JsonOpt = False, vault: VaultOpt = None, data_dir: DataDirOpt = None
) -> None:
    """Links that lead to no file, per note, with how often each is written."""
    from vaultpilot.index.queries import unresolved_links

    ws = open_workspace(vault, data_dir)
    with index_connection(ws, fresh=True) as conn:
        rows = unresolved_links(conn)
    if as_json:
        shape: dict[str, dict[str, int]] = {}
        for r in rows:
            shape.setdefault(r.source, {})[r.target_text] = r.count
        print(json.dumps(shape, ensure_ascii=False, indent=2))
        return
    table = Table("note", "unresolved link", "count")
    for r in rows:
        table.add_row(r.source, r.target_text, str(r.count))
    console.print(table)


@handle_errors
def status_cmd(
    as_json: JsonOpt = False,
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Then follow the embedding another process (the server) is doing, with a "
            "progress bar, until it ends.",
        ),
    ] = False,
) -> None:
    """Notes on disk against the index: stale files, frontmatter errors, vectors, size."""
    from vaultpilot.cli.embed_cmds import StopOnInterrupt, embedding_line, follow, rerun
    from vaultpilot.index.background import lock_holder
    from vaultpilot.index.semantic import embedding_status
    from vaultpilot.index.status import index_status

    ws = open_workspace(vault, data_dir)
    with index_connection(ws) as conn:
        st = index_status(conn, ws.vault, ws.db_path)
        emb = embedding_status(conn)
        holder = lock_holder(ws.db_path)
        if as_json:
            print(
                json.dumps(
                    {
                        **asdict(st),
                        "up_to_date": st.up_to_date,
                        "vault": str(ws.vault),
                        "index": str(ws.db_path),
                        "embedding": {**asdict(emb), "complete": emb.complete, "embedder": holder},
                    },
                    ensure_ascii=False,
                    indent=2,
                )
            )
            return
        embed = rerun("vaultpilot embed", ws, data_dir)
        vectors = _vectors_line(conn, emb, holder, hint=embed)
        _status_lines(ws, st, vectors, index_again=rerun("vaultpilot index", ws, data_dir))
        if not watch:
            return
        if holder is None:
            if not emb.complete:
                # The vectors line above gives the command in full, with --vault.
                console.print(
                    "nobody is embedding this index; run `vaultpilot embed` as said above",
                    soft_wrap=True,
                )
            return
        with StopOnInterrupt("stopped watching") as stop:
            emb = follow(conn, ws.db_path, stop)
    line = embedding_line(emb, lock_holder(ws.db_path), command=embed)
    console.print(f"[bold]vectors[/] {escape(line)}", soft_wrap=True)


def _status_lines(ws: Workspace, st: IndexStatus, vectors: str, *, index_again: str) -> None:
    vault, db_path = ws.vault, ws.db_path
    console.print(f"[bold]vault[/]   {escape(str(vault))}")
    console.print(f"[bold]index[/]   {escape(str(db_path))} ({st.db_bytes / 1024:.0f} KiB)")
    console.print(
        f"[bold]notes[/]   {st.notes_on_disk} on disk, {st.notes_indexed} indexed; "
        f"{st.attachments} attachments; {st.links} links ({st.unresolved_links} unresolved); "
        f"{st.tags} tags"
    )
    console.print(f"[bold]vectors[/] {escape(vectors)}")
    if st.up_to_date:
        console.print("[green]up to date[/]")
    else:
        console.print(
            f"[yellow]stale[/]: {len(st.stale_added)} new, {len(st.stale_changed)} changed, "
            f"{len(st.stale_deleted)} deleted; run `{escape(index_again)}`",
            soft_wrap=True,
        )
        stale = [*st.stale_added, *st.stale_changed, *st.stale_deleted]
        for p in stale[:20]:
            console.print(f"  {p}", markup=False)
        if len(stale) > 20:
            console.print(f"  … and {len(stale) - 20} more", markup=False)
    for path, err in st.frontmatter_errors:
        console.print(f"[yellow]frontmatter error[/] {escape(path)}: {escape(err)}")
    for path, err in st.unreadable:
        console.print(f"[red]not indexed[/] {escape(path)}: {escape(err)}")
