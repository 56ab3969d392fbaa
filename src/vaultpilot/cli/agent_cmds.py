"""``vaultpilot ask``, ``vaultpilot chat`` and ``vaultpilot config``: the agent in a terminal.

``register(app)`` adds the three commands. Configuration → model client, the vault's
``ToolContext`` → ``build_agent`` (the one place an agent is built), and every run is stored as a
conversation in memory.db.

* ``ask "..."``: one run; ``--conversation ID`` continues a stored conversation. Exit codes: 0
  done, 1 the run failed (model server error), 2 setup or usage problem (e.g. no model
  configured: the message says how to configure one), 3 stopped by max steps or the token
  budget, 130 interrupted.
* ``chat``: one conversation, message after message (``--resume ID``, ``--continue`` for the
  latest, ``--list`` to list them). ``/exit`` or Ctrl-D leaves.
* Ctrl-C during a run interrupts the run (the model stream and the running tool are
  cancelled), not the program. Destructive steps (and git_agent's ``git_add``/``git_commit``)
  ask y/n unless ``--yes``.
* The agent is built by ``agent.build.build_agent``, as the server's is: the vault tools, the
  process tools bound to the run's vault (git_agent's ``repo_path`` is the vault, whatever the
  model sends), the configured instructions, approval rules and limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from vaultpilot.agent import (
    Agent,
    NoteVersions,
    RunControls,
    get_conversation,
    list_conversations,
    load_config,
    make_model,
    new_conversation,
    require_model,
    run_conversation,
)
from vaultpilot.agent.build import build_agent
from vaultpilot.agent.events import FinishReason
from vaultpilot.cli.agent_view import JsonView, TerminalView, approval_question
from vaultpilot.cli.common import DataDirOpt, VaultOpt, console, handle_errors, open_workspace
from vaultpilot.index.background import BackgroundEmbedder
from vaultpilot.locations import data_root, memory_db_path
from vaultpilot.memory.db import connect as connect_memory
from vaultpilot.tools import open_context
from vaultpilot.tools.semantic import Semantic

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


@dataclass(frozen=True, slots=True)
class _Session:
    agent: Agent
    memory: Any  # sqlite3.Connection
    vault: Path
    db_path: Path
    semantic: Semantic


@contextlib.contextmanager
def _session(
    vault: str | None, data_dir: str | None, *, yes: bool, flags: dict[str, Any]
) -> Iterator[_Session]:
    cfg = require_model(load_config(flags=flags))  # before anything is opened: a fast, clear error
    ws = open_workspace(vault, data_dir)
    semantic = Semantic()
    ctx = open_context(ws.vault, ws.db_path, semantic=semantic, source="agent")
    root = data_root(data_dir)
    memory = connect_memory(memory_db_path(root))
    try:
        agent = build_agent(ctx, cfg, make_model(cfg), data_root=root, auto_approve=yes)
        yield _Session(agent, memory, ws.vault, ws.db_path, semantic)
    finally:
        memory.close()
        ctx.conn.close()


def _ask_user(question: str, out: Console) -> bool | None:
    """y/n from stdin; None when the user pressed Ctrl-C."""
    try:
        out.print(Text(question + " [y/N] ", "bold yellow"), end="")
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        out.print()
        return None
    return answer.strip().lower() in ("y", "yes")


async def _one_run(
    session: _Session,
    conversation_id: str,
    message: str,
    versions: NoteVersions,
    show: Callable[[Any], None],
    out: Console,
) -> FinishReason:
    controls = RunControls()
    loop = asyncio.get_running_loop()
    on_posix = sys.platform != "win32"

    def catch_sigint(enable: bool) -> None:
        if not on_posix:
            return
        if enable:
            loop.add_signal_handler(signal.SIGINT, controls.interrupt)
        else:
            loop.remove_signal_handler(signal.SIGINT)

    reason: FinishReason = "error"
    catch_sigint(True)
    try:
        async for event in run_conversation(
            session.memory,
            conversation_id,
            session.agent,
            message,
            controls=controls,
            versions=versions,
        ):
            show(event)
            if event.kind == "approval_required":
                catch_sigint(False)  # Ctrl-C at the question interrupts the run
                answer = _ask_user(approval_question(event), out)
                catch_sigint(True)
                if answer is None:
                    controls.interrupt()
                elif answer:
                    controls.approve(event.call_id)
                else:
                    controls.deny(event.call_id, "the user said no")
            elif event.kind == "run_finished":
                reason = event.reason
    except KeyboardInterrupt:  # Windows, or a Ctrl-C between two events
        controls.interrupt()
        reason = "interrupted"
    finally:
        catch_sigint(False)
    return reason


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
    """Ask the agent once: it searches, reads and edits the vault, showing each step."""
    with _session(vault, data_dir, yes=yes, flags=_flags(model, base_url, max_steps)) as s:
        if conversation:
            conv_id = get_conversation(s.memory, conversation).id
        else:
            conv_id = new_conversation(
                s.memory, title=prompt, vault=str(s.vault), model=s.agent.model.name
            ).id
        view = JsonView(console) if as_json else TerminalView(console, verbose=verbose)
        err = Console(stderr=True, highlight=False)
        reason = asyncio.run(_one_run(s, conv_id, prompt, NoteVersions(), view.show, err))
        if not as_json:
            console.print(Text(f"conversation {conv_id}", "dim"))
    if _EXIT[reason]:
        raise typer.Exit(_EXIT[reason])


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
    with (
        _session(vault, data_dir, yes=yes, flags=_flags(model, base_url, None)) as s,
        _background(s, enabled=embed) as background,
    ):
        conv_id: str | None = None
        if resume:
            conv_id = get_conversation(s.memory, resume).id
        elif latest:
            found = list_conversations(s.memory, vault=str(s.vault), limit=1)
            conv_id = found[0].id if found else None
        if conv_id:
            console.print(Text(f"resuming conversation {conv_id}", "dim"))
        console.print(Text(f"vaultpilot chat · {s.agent.model.name} · /exit to leave", "dim"))
        view = TerminalView(console, verbose=verbose)
        versions = NoteVersions()
        while True:
            _embedding_note(background)
            try:
                console.print(Text("you › ", "bold"), end="")
                line = sys.stdin.readline()
            except KeyboardInterrupt:
                console.print()
                break
            if not line or line.strip() in ("/exit", "/quit"):
                break
            message = line.strip()
            if not message:
                continue
            if conv_id is None:
                conv_id = new_conversation(
                    s.memory, title=message, vault=str(s.vault), model=s.agent.model.name
                ).id
            asyncio.run(_one_run(s, conv_id, message, versions, view.show, console))
            if background is not None:
                background.wake()  # embed what the run wrote
        if conv_id:
            console.print(Text(f"conversation {conv_id}", "dim"))


@contextlib.contextmanager
def _background(s: _Session, *, enabled: bool) -> Iterator[BackgroundEmbedder | None]:
    """A background embedder for the chat's index, stopped (after its batch) when it ends."""
    if not enabled:
        yield None
        return
    background = BackgroundEmbedder(s.db_path, s.semantic.require, role="vaultpilot chat")
    background.start()
    try:
        yield background
    finally:
        background.stop()


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
        where = str(open_workspace(vault, data_dir).vault) if vault else None
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
