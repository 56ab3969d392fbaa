"""The transcript ``chat --continue`` and ``--resume ID`` show before the prompt.

Each run is replayed from its stored events (``memory.conversations.run_transcripts``) in the
lines the person saw live: ``› message``, one line a step with the words the loop gave it
(``ToolResult.outcome``, the line counts of what it wrote), declined and interrupted steps as
such, the answer (cut at ``TRANSCRIPT_CHARS``), and why a run stopped when it did not finish.
A conversation stored without events (made before they were kept) is replayed from its
messages: the person's words and the answers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, cast

from rich.console import Console
from rich.text import Text

from vaultpilot.agent.events import StepLabel
from vaultpilot.agent.model import ChatMessage
from vaultpilot.cli.agent_view import print_text, step_line
from vaultpilot.cli.steps import counts, label, outcome, render
from vaultpilot.memory.conversations import run_transcripts

__all__ = ["TRANSCRIPT_CHARS", "replay"]

TRANSCRIPT_CHARS = 600
_CONTEXT = "\n\n### Context from attached files ###"


def replay(
    conn: sqlite3.Connection, conversation_id: str, history: list[ChatMessage], out: Console
) -> None:
    """Print the conversation's transcript, then a rule."""
    runs = run_transcripts(conn, conversation_id)
    if runs:
        for _, goal, events in runs:
            _asked(goal, out)
            _run(events, out)
    else:
        for m in history:
            content = m.get("content")
            if m.get("role") == "user" and isinstance(content, str):
                _asked(content, out)
            elif m.get("role") == "assistant" and isinstance(content, str):
                _answer(content, out)
    out.print(Text("─" * min(40, out.width), "dim"))


def _asked(text: str, out: Console) -> None:
    if text:
        out.print(Text("› " + text.split(_CONTEXT, 1)[0], "bold"), soft_wrap=True)


def _answer(text: str, out: Console) -> None:
    shown = text.strip()
    if shown:
        cut = len(shown) > TRANSCRIPT_CHARS
        print_text(out, shown[: TRANSCRIPT_CHARS - 1] + "…" if cut else shown)


def _run(events: list[dict[str, Any]], out: Console) -> None:
    calls: dict[str, str] = {}
    declined: dict[str, str] = {}
    for entry in events:
        event = entry.get("event")
        if not isinstance(event, dict):
            continue
        match event.get("kind"):
            case "tool_call":
                calls[str(event.get("call_id"))] = _shown_call(event)
            case "approval_resolved" if not event.get("approved"):
                declined[str(event.get("call_id"))] = str(event.get("by") or "user")
            case "tool_result":
                call_id = str(event.get("call_id"))
                what = calls.get(call_id, str(event.get("name") or "step"))
                out.print(_step(what, event, declined.get(call_id)), soft_wrap=True)
            case "text_chunk":
                _answer(str(event.get("text") or ""), out)
            case "run_finished" if event.get("reason") not in ("done", "error"):
                out.print(Text(str(event.get("message") or ""), "yellow"), soft_wrap=True)
            case "error":
                out.print(Text(str(event.get("message") or ""), "red"), soft_wrap=True)


def _shown_call(event: Mapping[str, Any]) -> str:
    step = event.get("label")
    if isinstance(step, dict) and {"verb", "object"} <= step.keys():
        return render(cast(StepLabel, step))
    arguments = event.get("arguments")
    name = str(event.get("name"))
    return label(name, arguments) if isinstance(arguments, dict) else f"{name}(…)"


def _step(what: str, event: Mapping[str, Any], declined_by: str | None) -> Text:
    """One step's line, as the live view drew it (``agent_view.step_line``)."""
    found = event.get("result")
    result: Mapping[str, Any] = found if isinstance(found, dict) else {}
    files = event.get("files")
    said = str(event.get("outcome") or "") or outcome(result)
    if event.get("success") and isinstance(files, list) and files:
        said = counts(files)
    source = str(event.get("source") or "tool")
    return step_line(
        what, source, bool(event.get("success")), said, declined_by=declined_by or "user"
    )
