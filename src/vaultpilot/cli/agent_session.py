"""One vault's agent for the terminal, and one run of it with the person at the keyboard.

``open_session(...)`` checks the model configuration first (a fast, clear error), finds the vault
(``common.open_workspace``), opens its tool context (with the change journal) and memory.db, and
builds the agent with ``agent.build.build_agent``, the one place an agent is built.

``run_once(session, conversation_id, message, ...)`` runs one message in a stored conversation:

* Ctrl-C during a run interrupts the run (the model stream and a running tool are cancelled),
  not the program; at an approval question it interrupts the run too.
* An approval is answered by ``approvals.Approver`` (Yes / Yes, don't ask again in this run /
  No, and why: the reason goes to the model).
* The view's spinner is redrawn every 100 ms while the run waits.
* A run that failed before the model said anything, in a conversation it started, is not kept:
  ``chat --continue`` then finds the last real conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from rich.text import Text

from vaultpilot.agent import (
    Agent,
    NoteVersions,
    RunControls,
    load_config,
    make_model,
    require_model,
    run_conversation,
)
from vaultpilot.agent.build import build_agent
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.events import AgentEvent, ApprovalRequired, FinishReason
from vaultpilot.cli.approvals import Approver, Ask, Choice, NoAnswer
from vaultpilot.cli.common import Workspace, err_console, open_workspace
from vaultpilot.index.background import BackgroundEmbedder
from vaultpilot.locations import data_root, memory_db_path
from vaultpilot.memory.db import connect as connect_memory
from vaultpilot.memory.journal import new_run_id
from vaultpilot.tools import ToolContext, open_context
from vaultpilot.tools.semantic import Semantic
from vaultpilot.tools.session import live_session

__all__ = ["RunOutcome", "Session", "View", "open_session", "run_once"]


class View(Protocol):
    def show(self, event: AgentEvent) -> None: ...

    def tick(self) -> None: ...

    def pause(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Session:
    agent: Agent
    memory: sqlite3.Connection
    ctx: ToolContext
    vault: Path
    db_path: Path
    data_root: Path
    semantic: Semantic
    background: BackgroundEmbedder | None = None  # the live session's embedder (chat --embed)

    def note_paths(self) -> list[str]:
        vault = self.agent.vault
        return vault.note_paths() if vault is not None else []


@dataclass(frozen=True, slots=True)
class RunOutcome:
    reason: FinishReason
    said_something: bool  # the model wrote text or called a tool
    unapproved: int = 0  # steps not run because nobody could be asked (no terminal)


@contextlib.contextmanager
def open_session(
    vault: str | None,
    data_dir: str | None,
    *,
    yes: bool,
    flags: dict[str, Any],
    live: bool = False,
    embed: bool = False,
) -> Iterator[Session]:
    """The agent on the vault. ``live`` (chat) keeps the index fresh with a file watcher for the
    session's lifetime, so the agent's reads do not scan the vault, and with ``embed`` keeps the
    vectors up to date in the background (woken by every change); else each read syncs first."""
    cfg = require_model(load_config(flags=flags))  # before anything is opened: a fast, clear error
    ws = open_workspace(vault, data_dir)
    semantic = Semantic()
    with contextlib.ExitStack() as stack:
        background = None
        if live:
            opened = live_session(
                ws.vault,
                ws.db_path,
                source="agent",  # the journal's name for the agent's changes
                holder="vaultpilot chat",  # who embeds, as other processes show it (status)
                semantic=semantic,
                embed=embed,
            )
            runtime = stack.enter_context(opened)
            ctx = runtime.open_run_context(source="agent")
            background = runtime.background
        else:
            ctx = open_context(ws.vault, ws.db_path, semantic=semantic, source="agent")
        yield from _with_agent(ctx, cfg, ws, data_dir, semantic, background, yes=yes)


def _with_agent(
    ctx: ToolContext,
    cfg: AgentConfig,
    ws: Workspace,
    data_dir: str | None,
    semantic: Semantic,
    background: BackgroundEmbedder | None,
    *,
    yes: bool,
) -> Iterator[Session]:
    root = data_root(data_dir)
    memory = connect_memory(memory_db_path(root))
    try:
        agent = build_agent(ctx, cfg, make_model(cfg), data_root=root, auto_approve=yes)
        yield Session(agent, memory, ctx, ws.vault, ws.db_path, root, semantic, background)
    finally:
        memory.close()
        if ctx.journal is not None:
            ctx.journal.close()
        ctx.conn.close()


_NO_TERMINAL = (
    "it needs approval and there is no terminal to ask: run it in a terminal, or pass --yes "
    "to approve every step"
)


async def _read_stdin(question: str) -> str | None:
    """One line from stdin (no terminal: tests, pipes); None on Ctrl-C; ``NoAnswer`` at the
    end of input. The question goes to stderr: stdout carries the run (``--json`` lines a
    script parses), never a prompt."""
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        return None
    if not line:
        sys.stderr.write("\n")
        raise NoAnswer
    return line


async def _ticker(view: View) -> None:
    while True:
        view.tick()
        await asyncio.sleep(0.1)


def _apply(controls: RunControls, call_id: str, choice: Choice | None) -> None:
    """Pass the person's answer to the run: None (Ctrl-C at the question) interrupts it."""
    if choice is None:
        controls.interrupt()
    elif choice.kind == "no":
        controls.deny(call_id, choice.reason)
    elif choice.kind == "some":
        controls.approve(call_id, list(choice.files))
    else:
        controls.approve(call_id)


def _sigint_switch(controls: RunControls) -> Callable[[bool], None]:
    """Turns Ctrl-C into an interrupt of the run while on; on Windows (no signal handlers in
    the event loop) Ctrl-C raises ``KeyboardInterrupt`` instead and this does nothing."""
    loop = asyncio.get_running_loop()
    on_posix = sys.platform != "win32"

    def switch(enable: bool) -> None:
        if not on_posix:
            return
        if enable:
            loop.add_signal_handler(signal.SIGINT, controls.interrupt)
        else:
            loop.remove_signal_handler(signal.SIGINT)

    return switch


async def run_once(
    session: Session,
    conversation_id: str,
    message: str,
    *,
    view: View,
    versions: NoteVersions,
    ask: Ask | None = None,
    mode: Literal["ask", "auto"] = "ask",
) -> RunOutcome:
    controls = RunControls()
    approver = Approver(mode=mode)
    question = ask or _read_stdin
    catch_sigint = _sigint_switch(controls)

    async def decide(event: ApprovalRequired) -> None:
        choice = approver.preapproved(event)
        if choice is None:
            view.show(event)
            catch_sigint(False)  # Ctrl-C at the question interrupts the run
            try:
                choice = await approver.answer(event, question)
            except NoAnswer:
                err_console.print(Text(f"not run: {_NO_TERMINAL}", "yellow"), soft_wrap=True)
                controls.deny(event.call_id, "no terminal to ask", nobody=True)
                unapproved.append(event.call_id)
                return
            finally:
                catch_sigint(True)
        _apply(controls, event.call_id, choice)

    reason: FinishReason = "error"
    said = False
    unapproved: list[str] = []
    ticker = asyncio.create_task(_ticker(view))
    catch_sigint(True)
    try:
        async for event in run_conversation(
            session.memory,
            conversation_id,
            session.agent,
            message,
            controls=controls,
            versions=versions,
            run_id=new_run_id(),  # the run's change set: one id shape with the server's runs
        ):
            if event.kind == "approval_required":
                await decide(event)
                continue
            view.show(event)
            if event.kind in ("text_chunk", "tool_call"):
                said = True
            elif event.kind == "run_finished":
                reason = event.reason
    except KeyboardInterrupt:  # Windows, or a Ctrl-C between two events
        controls.interrupt()
        reason = "interrupted"
    finally:
        catch_sigint(False)
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        view.pause()
    return RunOutcome(reason, said, len(unapproved))
