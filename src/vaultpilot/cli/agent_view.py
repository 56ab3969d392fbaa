"""How ``vaultpilot ask`` and ``chat`` show a run: one rich line or block per step.

Thoughts are streamed dimmed; a tool call shows its name and arguments; its result a ✓ or ✗ and a
short preview; the answer is rendered as Markdown when the model's turn ends; approvals are a y/n
question (``ask_approval``). ``TerminalView.show`` matches every event kind and ends with
``assert_never``, so a new kind cannot go unrendered. ``JsonView`` prints one JSON line per event.
"""

from __future__ import annotations

import json
from typing import assert_never

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from vaultpilot.agent.events import AgentEvent, ApprovalRequired, event_to_dict

__all__ = ["JsonView", "TerminalView", "approval_question"]

_ARGS_CHARS = 240


def _short(value: object, limit: int = _ARGS_CHARS) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def approval_question(event: ApprovalRequired) -> str:
    return f"Allow {event.name} {event.operation or ''} {_short(event.arguments, 160)}?"


class TerminalView:
    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self._answer: list[str] = []
        self._thinking = False

    def _end_thought(self) -> None:
        if self._thinking:
            self.console.print()
            self._thinking = False

    def _flush_answer(self) -> None:
        text = "".join(self._answer).strip()
        self._answer = []
        if text:
            self.console.print(Markdown(text))

    def show(self, event: AgentEvent) -> None:
        if event.kind != "thought":
            self._end_thought()
        c = self.console
        match event.kind:
            case "run_started":
                if self.verbose:
                    c.print(Text(f"model {event.model} · tools: {', '.join(event.tools)}", "dim"))
            case "context_attached":
                for note in event.notes:
                    cut = " (truncated)" if note["truncated"] else ""
                    c.print(Text(f"📎 {note['path']}{cut}", "cyan"))
                for name in event.unknown:
                    c.print(Text(f"📎 {name}: no such note in the vault", "yellow"))
                for path in event.omitted:
                    c.print(Text(f"📎 {path}: over the context budget, not attached", "yellow"))
            case "status":
                if self.verbose:
                    c.print(Text(event.message, "dim"))
            case "thought":
                if not self._thinking:
                    c.print(Text("💭 ", "dim"), end="")
                    self._thinking = True
                c.print(Text(event.text, "dim italic"), end="")
            case "text_chunk":
                self._answer.append(event.text)
            case "usage":
                if self.verbose:
                    guess = " (estimated)" if event.estimated else ""
                    c.print(Text(f"{event.total_tokens:,} tokens{guess}", "dim"))
            case "message":
                if event.message.get("role") == "assistant":
                    self._flush_answer()
            case "tool_call":
                line = Text("→ ", "cyan")
                line.append(event.name, "bold cyan")
                shown: object = event.arguments
                if shown is None:
                    shown = event.raw_arguments
                line.append(" " + _short(shown), "cyan")
                c.print(line)
            case "approval_required":
                c.print(Text(f"⚠ {event.reason}", "yellow"))
            case "approval_resolved":
                if not event.approved:
                    c.print(Text(f"  refused ({event.by})", "yellow"))
            case "tool_result":
                mark, style = ("✓", "green") if event.success else ("✗", "red")
                line = Text(f"{mark} {event.name}", style)
                if event.source != "tool":
                    line.append(f" [{event.source}]", "dim")
                line.append(f"  {event.preview}", "dim" if event.success else "red")
                c.print(line)
            case "error":
                c.print(Text(f"error: {event.message}", "bold red"))
            case "run_finished":
                self._flush_answer()
                if event.reason not in ("done", "error"):
                    c.print(Text(event.message, "yellow"))
                c.print(
                    Text(
                        f"{event.steps} step(s) · {event.total_tokens:,} tokens · {event.reason}",
                        "dim",
                    )
                )
            case _:
                assert_never(event)


class JsonView:
    """One JSON object per line (``--json``)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def show(self, event: AgentEvent) -> None:
        line = json.dumps(event_to_dict(event), ensure_ascii=False)
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)
