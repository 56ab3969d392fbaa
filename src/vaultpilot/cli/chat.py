"""``vaultpilot chat``: a conversation with the agent, message after message.

The header names the vault, its note count (warning when it has none) and the model. In a
terminal the prompt is ``prompt.ChatPrompt`` (history across sessions, ``@``/``[[`` completion,
multi-line input, Ctrl-C clears the line and twice quits); otherwise lines are read from stdin.
Slash commands are answered here, never sent to the model (``SLASH``). ``--continue`` and
``--resume ID`` replay the conversation's transcript before the prompt. A conversation is
created by its first message; one whose first run failed before the model said anything is
deleted again.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vaultpilot.agent import NoteVersions, get_conversation, list_conversations, load_history
from vaultpilot.agent import new_conversation as create_conversation
from vaultpilot.agent.conversations import delete_conversation
from vaultpilot.cli.agent_session import RunOutcome, Session, run_once
from vaultpilot.cli.agent_view import TerminalView
from vaultpilot.cli.approvals import Ask
from vaultpilot.cli.replay import replay
from vaultpilot.cli.run_changes import RunChanges
from vaultpilot.cli.typeahead import typing_held
from vaultpilot.errors import VaultpilotError
from vaultpilot.memory.journal import ChangeSet

__all__ = ["SLASH", "ChatState", "header", "run_chat"]

SLASH: dict[str, str] = {
    "/help": "this list",
    "/new": "start a new conversation (the vault stays)",
    "/history": "the recent conversations of this vault",
    "/undo": "undo the last change set the agent made in this chat; /undo ID undoes that one",
    "/mode": "ask before risky steps (ask) or approve them all (auto): /mode auto",
    "/exit": "leave (also /quit, Ctrl-D, or Ctrl-C twice)",
}


class ChatState:
    def __init__(self, conversation_id: str | None, mode: Literal["ask", "auto"]) -> None:
        self.conversation_id = conversation_id
        self.mode: Literal["ask", "auto"] = mode
        self.change_sets: list[str] = []  # this chat's runs that changed the vault, oldest first


def header(session: Session, out: Console) -> None:
    count = len(session.note_paths())
    notes = "1 note" if count == 1 else f"{count:,} notes"
    line = Text("vaultpilot chat", "bold")
    line.append(f" · {session.vault.name} ({notes}) · {session.agent.model.name}", "dim")
    line.append(" · /help for commands", "dim")
    out.print(line)  # wrapped at a space, never inside a word
    out.print(Text(f"vault: {session.vault}", "dim"), soft_wrap=True)
    if count == 0:
        out.print(
            Text(
                "warning: this vault has no notes (.md files) yet; the agent can create some, "
                "or restart with --vault PATH to use another folder.",
                "yellow",
            )
        )


def _help(out: Console) -> None:
    table = Table(box=None, show_header=False, padding=(0, 2))
    for name, what in SLASH.items():
        table.add_row(name, what)
    out.print(table)
    for line in (
        "Mention a note with @Name (or @[[Name with spaces]]) to attach it: @ and [[ offer "
        "note names as you type, and Tab goes through them.",
        "Enter sends; Alt-Enter or a trailing \\ starts a new line. Up/Down bring back earlier "
        "messages (Ctrl-R searches them).",
        "Ctrl-C stops a running answer; at the prompt it clears the line, and twice quits.",
    ):
        out.print(Text(line, "dim"))


def _history(session: Session, out: Console) -> None:
    rows = list_conversations(session.memory, vault=str(session.vault), limit=10)
    if not rows:
        out.print(Text("No conversations in this vault yet.", "dim"))
        return
    table = Table("id", "title", "messages", box=None)
    for conv in rows:
        table.add_row(conv.id, conv.title, str(conv.messages))
    out.print(table)
    out.print(Text("Resume one with: vaultpilot chat --resume ID", "dim"))


_REDO = "/undo {id}"  # how chat says "undo that undo": a command that works here


def _undo(session: Session, state: ChatState, out: Console, set_id: str = "") -> None:
    """Undo change set ``set_id`` (as ``vaultpilot undo ID``), or else the newest of this
    chat's runs that still stands (``memory.undo``'s rules)."""
    from vaultpilot.memory.journal import Journal
    from vaultpilot.memory.undo import already_undone
    from vaultpilot.tools.manage import undo_change_set

    journal = session.ctx.journal
    if journal is None or not (state.change_sets or set_id):
        out.print(Text("Nothing to undo: the agent has changed no notes in this chat.", "dim"))
        return
    vault = str(session.vault)
    try:
        standing: ChangeSet | None
        if set_id:
            standing = journal.get(vault, set_id)
            refusal = already_undone(journal, standing, redo=_REDO)
            if refusal is not None:
                raise refusal
        else:
            newest_first = [journal.get(vault, s) for s in reversed(state.change_sets)]
            standing = next((s for s in newest_first if s.undone_by is None), None)
            refusal = (
                already_undone(journal, newest_first[0], redo=_REDO) if standing is None else None
            )
    except VaultpilotError as err:
        out.print(Text(f"Could not undo: {err.message}", "yellow"))
        return
    if standing is None:  # every run already undone: say by whom and when
        runs = "run's changes were" if len(state.change_sets) == 1 else "runs' changes were"
        why = f" {refusal.message}" if refusal is not None else ""
        text = Text(f"Nothing to undo: this chat's {runs} already undone.{why}", "dim")
        out.print(text)
        return
    # Recorded as the chat's undo, not as one of the agent's changes (history's source column).
    by_chat = Journal(journal.path, source="chat")
    try:
        undone, redo_id, report = undo_change_set(
            replace(session.ctx, journal=by_chat), standing.id
        )
    except VaultpilotError as err:
        out.print(Text(f"Could not undo: {err.message}", "yellow"))
        return
    finally:
        by_chat.close()
    named = [f"restored {', '.join(report.put_back())}"] if report.put_back() else []
    if report.trashed:
        named.append(f"moved {', '.join(report.trashed)} (made by it) to .trash/")
    if report.removed:
        kind = "folder" if len(report.removed) == 1 else "folders"
        named.append(f"removed the empty {kind} {', '.join(report.removed)}")
    said = ", ".join(named[:-1]) + (" and " if len(named) > 1 else "") + named[-1] if named else ""
    out.print(Text(f"Undid change set {undone}: {said or 'nothing to change'}.", "green"))
    if redo_id:  # a line of its own, so the command is never wrapped apart
        out.print(Text(f"  To bring the changes back: /undo {redo_id}", "dim"))
    lost = [*report.lost, *report.differ]
    if report.skipped or lost:
        out.print(Text(report.summary(), "yellow"))


_NO_ARGUMENT = ("/exit", "/quit", "/help", "/new", "/history")


def slash(command: str, session: Session, state: ChatState, out: Console) -> bool:
    """Handle a slash command; False when the chat should end. A command given an argument
    it does not take says so and does nothing (the argument is never silently dropped)."""
    word, _, rest = command.strip().partition(" ")
    rest = rest.strip()
    if word in _NO_ARGUMENT and rest:
        out.print(
            Text(f"{word} takes no argument (got '{rest}'): type {word} alone.", "yellow"),
        )
        return True
    if word == "/undo" and len(rest.split()) > 1:
        out.print(
            Text(
                f"/undo takes one change-set id at most (got '{rest}'), e.g. /undo 3572fff0e0a6.",
                "yellow",
            ),
        )
        return True
    match word:
        case "/exit" | "/quit":
            return False
        case "/help":
            _help(out)
        case "/new":
            state.conversation_id = None
            state.change_sets.clear()
            out.print(Text("New conversation: the next message starts it.", "dim"))
        case "/history":
            _history(session, out)
        case "/undo":
            _undo(session, state, out, rest)
        case "/mode":
            wanted = rest.strip() or ("auto" if state.mode == "ask" else "ask")
            if wanted not in ("ask", "auto"):
                out.print(
                    Text(
                        f"'{wanted}' is not a mode. Modes: /mode ask (ask before risky steps) "
                        "or /mode auto (approve them all).",
                        "yellow",
                    )
                )
            else:
                state.mode = "auto" if wanted == "auto" else "ask"
                what = "approves every step" if state.mode == "auto" else "asks before risky steps"
                out.print(Text(f"Mode {state.mode}: the agent {what}.", "dim"))
        case _:
            out.print(Text(f"Unknown command {word}. /help lists the commands.", "yellow"))
    return True


def _recorded_runs(session: Session, conversation_id: str) -> list[str]:
    """The runs of a resumed conversation that changed the vault (their change sets), oldest
    first, so /undo reaches them as it reaches the runs of this chat."""
    from vaultpilot.memory.conversations import run_ids

    journal = session.ctx.journal
    if journal is None:
        return []
    known = {cs.id for cs in journal.change_sets(str(session.vault), limit=500)}
    return [r for r in run_ids(session.memory, conversation_id) if r in known]


def _run(
    session: Session,
    state: ChatState,
    message: str,
    versions: NoteVersions,
    out: Console,
    *,
    ask: Ask | None,
    verbose: bool,
) -> RunOutcome:
    """One run of the agent on ``message``, keys typed meanwhile held back (``typeahead``)."""
    assert state.conversation_id is not None
    changes = RunChanges(session.ctx.journal, str(session.vault))
    view = TerminalView(out, verbose=verbose, changes=changes, undo_hint="/undo")
    with typing_held() as typed:
        result = asyncio.run(
            run_once(
                session,
                state.conversation_id,
                message,
                view=view,
                versions=versions,
                ask=ask,
                mode=state.mode,
            )
        )
    if typed.discarded:
        out.print(Text("(what you typed during the run was not sent; type it again)", "dim"))
    if changes.summary():
        state.change_sets.append(view.run_id)
    return result


def run_chat(
    session: Session,
    state: ChatState,
    out: Console,
    *,
    read: Callable[[], str | None],
    ask: Ask | None,
    verbose: bool,
    after_run: Callable[[], None] = lambda: None,
) -> None:
    """The loop: read a message, answer slash commands, run everything else."""
    if state.conversation_id:
        get_conversation(session.memory, state.conversation_id)
        out.print(Text(f"resuming conversation {state.conversation_id}", "dim"))
        history = load_history(session.memory, state.conversation_id)
        replay(session.memory, state.conversation_id, history, out)
        state.change_sets = _recorded_runs(session, state.conversation_id)
    versions = NoteVersions()
    while True:
        line = read()
        if line is None:
            break
        message = line.strip()
        if not message:
            continue
        if message.startswith("/") and message.split()[0] in (*SLASH, "/quit"):
            if not slash(message, session, state, out):
                break
            continue
        if message.startswith("/") and " " not in message:
            slash(message, session, state, out)
            continue
        fresh = state.conversation_id is None
        if state.conversation_id is None:
            state.conversation_id = create_conversation(
                session.memory,
                title=message,
                vault=str(session.vault),
                model=session.agent.model.name,
            ).id
        result = _run(session, state, message, versions, out, ask=ask, verbose=verbose)
        if fresh and not result.said_something and result.reason in ("error", "interrupted"):
            delete_conversation(session.memory, state.conversation_id)
            state.conversation_id = None
        after_run()
    if state.conversation_id:
        conv = state.conversation_id
        out.print(
            Text(
                f"Conversation {conv} saved: `vaultpilot chat --continue` resumes it "
                f"(`vaultpilot chat --resume {conv}` once you have started another).",
                "dim",
            )
        )


def stdin_reader(out: Console) -> Callable[[], str | None]:
    def read() -> str | None:
        out.print(Text("› ", "bold"), end="")
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            out.print()
            return None
        return line or None

    return read
