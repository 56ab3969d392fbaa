"""``vaultpilot ask``, ``vaultpilot chat`` and ``vaultpilot config``: the agent in a terminal.

``register(app)`` adds the three commands. Configuration → model client, the vault's
``ToolContext`` → ``build_agent`` (the one place an agent is built), and every run is stored as a
conversation in memory.db.

* ``ask "..."``: one run; ``--conversation ID`` continues a stored conversation. Exit codes: 0
  done, 1 the run failed (model server error), 2 setup or usage problem (e.g. no model
  configured: the message says how to configure one), 3 stopped by max steps or the token
  budget, 4 a step needed approval and there was no terminal to ask (pass ``--yes``), 130
  interrupted.
* ``chat``: one conversation, message after message (``--resume ID``, ``--continue`` for the
  latest with its transcript, ``--list`` to list them); see ``cli.chat`` for the prompt and the
  slash commands.
* Runs are shown by ``cli.agent_view`` and run by ``cli.agent_session.run_once`` (Ctrl-C,
  approvals); destructive steps (and git_agent's ``git_add``/``git_commit``) ask unless ``--yes``.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from vaultpilot.agent import (
    NoteVersions,
    get_conversation,
    list_conversations,
    load_config,
    new_conversation,
)
from vaultpilot.agent.conversations import delete_conversation
from vaultpilot.agent.events import FinishReason
from vaultpilot.cli.agent_session import Session, open_session, run_once
from vaultpilot.cli.agent_view import JsonView, TerminalView
from vaultpilot.cli.chat import ChatState, header, run_chat, stdin_reader
from vaultpilot.cli.common import (
    DataDirOpt,
    VaultOpt,
    console,
    err_console,
    handle_errors,
    open_workspace,
)
from vaultpilot.cli.run_changes import RunChanges
from vaultpilot.index.background import BackgroundEmbedder
from vaultpilot.locations import data_root, memory_db_path
from vaultpilot.memory.db import connect as connect_memory

__all__ = ["register"]

ModelOpt = Annotated[str | None, typer.Option("--model", help="Model name (overrides config).")]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible server URL (overrides config).")
]
YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Approve destructive steps without asking.")
]
MaxStepsOpt = Annotated[int | None, typer.Option("--max-steps", help="Most model calls per run.")]
JsonEvents = Annotated[bool, typer.Option("--json", help="Print each event as a JSON line.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show status and tokens.")]
_EXIT: dict[FinishReason, int] = {
    "done": 0,
    "error": 1,
    "max_steps": 3,
    "budget": 3,
    "interrupted": 130,
}


def _flags(model: str | None, base_url: str | None, max_steps: int | None) -> dict[str, Any]:
    return {"model": model, "base_url": base_url, "max_steps": max_steps}


@handle_errors
def ask(
    prompt: Annotated[str, typer.Argument(help="What to do, in plain language.")],
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    yes: YesOpt = False,
    max_steps: MaxStepsOpt = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="Continue this stored conversation.")
    ] = None,
    as_json: JsonEvents = False,
    verbose: VerboseOpt = False,
) -> None:
    """Ask the agent once: it searches, reads and edits the vault, showing each step.

    Exit status: 0 done; 1 failed (the model or a setting: the message says which); 3 stopped
    at max_steps or the token budget (continue it with --conversation ID); 4 a step was not
    approved; 130 interrupted.
    """
    with open_session(vault, data_dir, yes=yes, flags=_flags(model, base_url, max_steps)) as s:
        fresh = not conversation
        if conversation:
            conv_id = get_conversation(s.memory, conversation).id
        else:
            conv_id = new_conversation(
                s.memory, title=prompt, vault=str(s.vault), model=s.agent.model.name
            ).id
        changes = RunChanges(s.ctx.journal, str(s.vault))
        view = (
            JsonView(console)
            if as_json
            else TerminalView(console, verbose=verbose, changes=changes)
        )
        if not as_json:
            _warn_if_empty(s)
        result = asyncio.run(run_once(s, conv_id, prompt, view=view, versions=NoteVersions()))
        if fresh and not result.said_something and result.reason in ("error", "interrupted"):
            delete_conversation(s.memory, conv_id)  # nothing worth continuing
        elif not as_json:
            console.print(Text(f"conversation {conv_id}", "dim"))
            if result.reason in ("max_steps", "budget"):
                where = f" --vault {shlex.quote(str(vault))}" if vault is not None else ""
                again = f"vaultpilot ask{where} --conversation {conv_id} 'go on'"
                console.print(Text(f"Continue it with: {again}"), soft_wrap=True)
    if _EXIT[result.reason]:
        raise typer.Exit(_EXIT[result.reason])
    if result.unapproved:
        raise typer.Exit(4)


def _warn_if_empty(s: Session) -> None:
    if not s.note_paths():
        err_console.print(
            Text(f"warning: the vault {s.vault} has no notes (.md files) yet.", "yellow"),
            soft_wrap=True,
        )


@handle_errors
def chat(
    vault: VaultOpt = None,
    data_dir: DataDirOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    yes: YesOpt = False,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Resume this conversation.")
    ] = None,
    latest: Annotated[
        bool, typer.Option("--continue", help="Resume the latest conversation of this vault.")
    ] = False,
    list_only: Annotated[bool, typer.Option("--list", help="List stored conversations.")] = False,
    embed: Annotated[
        bool,
        typer.Option(
            "--embed/--no-embed",
            help="Embed new and changed notes for semantic search in the background while you "
            "chat (default: on).",
        ),
    ] = True,
    verbose: VerboseOpt = False,
) -> None:
    """Talk with the agent about the vault; each message is a run in one conversation."""
    if list_only:
        _list(vault, data_dir)
        return
    flags = _flags(model, base_url, None)
    with open_session(vault, data_dir, yes=yes, flags=flags, live=True, embed=embed) as s:
        background = s.background
        conv_id: str | None = None
        if resume:
            conv_id = get_conversation(s.memory, resume).id
        elif latest:
            found = list_conversations(s.memory, vault=str(s.vault), limit=1)
            conv_id = found[0].id if found else None
            if conv_id is None:
                console.print(Text("No earlier conversation in this vault: starting one.", "dim"))
        header(s, console)
        state = ChatState(conv_id, "auto" if yes else "ask")
        if sys.stdin.isatty() and console.is_terminal:
            from vaultpilot.cli.prompt import ChatPrompt

            prompt = ChatPrompt(s.data_root, s.note_paths)

            def read() -> str | None:
                _embedding_note(background)
                return prompt.read()

            run_chat(
                s,
                state,
                console,
                read=read,
                ask=prompt.ask,
                verbose=verbose,
                after_run=_woken(background),
            )
        else:
            run_chat(
                s,
                state,
                console,
                read=stdin_reader(console),
                ask=None,
                verbose=verbose,
                after_run=_woken(background),
            )


def _woken(background: BackgroundEmbedder | None) -> Callable[[], None]:
    def wake() -> None:
        if background is not None:
            background.wake()  # embed what the run wrote

    return wake


def _embedding_note(background: BackgroundEmbedder | None) -> None:
    """One dim line before the prompt while embedding runs, so slow answers are explained."""
    if background is None:
        return
    snap = background.progress()
    if snap.state == "embedding" and snap.total:
        rate = f", {snap.rate:.0f} chunks/s" if snap.rate else ""
        console.print(
            Text(
                f"semantic search: embedding in the background, {snap.done} of {snap.total} "
                f"new chunks{rate}; notes not embedded yet are found by their words",
                "dim",
            )
        )


def _list(vault: str | None, data_dir: str | None) -> None:
    memory = connect_memory(memory_db_path(data_root(data_dir)))
    try:
        where = str(open_workspace(vault, data_dir, indexes=False).vault) if vault else None
        rows = list_conversations(memory, vault=where, limit=50)
    finally:
        memory.close()
    table = Table("id", "title", "messages", "model", box=None)
    for conv in rows:
        table.add_row(conv.id, conv.title, str(conv.messages), conv.model)
    console.print(table if rows else Text("No conversations yet.", "dim"))


@handle_errors
def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the agent settings, each with where it came from (flag, env, file, default)."""
    loaded = load_config()
    rows = loaded.shown()
    if as_json:
        data = {
            "file": str(loaded.path),
            "settings": {n: {"value": v, "source": s} for n, v, s in rows},
        }
        console.print(json.dumps(data, indent=2), markup=False, highlight=False)
        return
    exists = "" if loaded.path.exists() else " (does not exist)"
    console.print(Text(f"config file: {loaded.path}{exists}", "dim"))
    table = Table("setting", "value", "from", box=None)
    for name, value, source in rows:
        table.add_row(name, value, source)
    console.print(table)
    if not loaded.config.model:
        console.print(Text("\nNo model is configured: `vaultpilot ask` explains how.", "yellow"))


def register(app: typer.Typer) -> None:
    """Add ``ask``, ``chat`` and ``config`` to the ``vaultpilot`` command."""
    app.command("ask")(ask)
    app.command("chat")(chat)
    app.command("config")(config)
