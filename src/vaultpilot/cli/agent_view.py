"""How ``vaultpilot ask`` and ``chat`` show a run in a terminal.

* Thoughts (dim) and the answer stream as the model writes them, wrapped at word boundaries
  (``stream.WordWrapper``), with light Markdown.
* While nothing streams, one spinner line says what is going on (thinking, running a step), for
  how long, and the tokens so far (``tick`` redraws it; the caller calls it a few times a second).
* Each tool call is one line when its result comes: ``● Read(Meetings/Retro.md) 312 words``,
  ``● Edit(Inbox.md) +3 −1`` (counted from the change journal), ``✗ …`` with the reason when it
  failed, ``⊘ … declined by you`` when the person said no: a refusal is their choice, not an
  error.
* An approval shows what the step does and the coloured diff of each file it would change (from
  the tool's dry run); the question itself is asked by ``approvals.ask``.
* The end of a run lists the notes it changed and how to undo them, then one dim line of steps,
  tokens and time.

``TerminalView.show`` matches every event kind and ends with ``assert_never``, so a new kind
cannot go unrendered. ``JsonView`` prints one JSON line per event.
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from typing import Any, assert_never

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.text import Text

from vaultpilot.agent.events import (
    AgentEvent,
    ApprovalRequired,
    ApprovalResolved,
    ContextAttached,
    RunStarted,
    Status,
    ToolCall,
    ToolResult,
    Usage,
    event_to_dict,
)
from vaultpilot.cli.run_changes import FileStep, RunChanges
from vaultpilot.cli.steps import diff_counts, label, outcome, plural
from vaultpilot.cli.stream import Spinner, WordWrapper

__all__ = ["JsonView", "TerminalView", "approval_block", "fold", "print_text", "step_line"]

_DIFF_LINES = 60  # per file, in an approval


_HANG = "      "  # a wrapped diff line's later rows: deeper than its sign, with no sign


def _cut_words(text: str, room: int) -> tuple[str, str]:
    """The first row of ``text`` in ``room`` columns, broken at the last space that fits (cut
    mid-word only when a word is wider than the row), and the rest."""
    if cell_len(text) <= room:
        return text, ""
    head = chop_cells(text, room)[0]
    space = text.rfind(" ", 0, len(head) + 1)
    if space > 0 and text[:space].strip():
        return text[:space].rstrip(), text[space:].lstrip(" ")
    return head, text[len(head) :]


def _diff_line(line: str, width: int) -> list[str]:
    """One diff line in rows of at most ``width`` columns, broken at word boundaries: the first
    row starts with the indent and, for a content line, its sign; the later rows hang deeper
    with no sign, so a wrapped added or removed line reads as one, never as another line."""
    sign = line[:1] if line[:1] in ("+", "-", " ") and not line.startswith("@@") else ""
    lead = "    " + sign
    first, rest = _cut_words(line[len(sign) :], max(10, width - cell_len(lead) - 1))
    rows = [lead + first]
    while rest:
        piece, rest = _cut_words(rest, max(10, width - len(_HANG) - 1))
        rows.append(_HANG + piece)
    return rows


def _diff_text(diff: str, width: int = 120) -> Text:
    out = Text()
    lines = diff.splitlines()
    hunks = False  # the "---"/"+++" file lines come before the first hunk only; after it, a
    # removed "--" or an added "++" line is content and must show
    for line in lines[:_DIFF_LINES]:
        if not hunks and line.startswith(("+++", "---")):
            continue
        if line.startswith("@@"):
            hunks = True
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = "dim"
        for piece in _diff_line(line, width):
            out.append(piece + "\n", style)
    if len(lines) > _DIFF_LINES:
        out.append(f"    … {len(lines) - _DIFF_LINES} more lines\n", "dim")
    return out


def print_text(console: Console, text: str, *, style: str = "") -> None:
    """Text with light Markdown, wrapped at word boundaries, as an answer streams."""

    def emit(piece: str, piece_style: str) -> None:
        console.print(Text(piece, piece_style), end="", soft_wrap=True)

    writer = WordWrapper(emit, console.width - 1, style=style)
    writer.feed(text)
    writer.finish()


# Where a changed-notes line may break: after a '/', or at the space before or after what
# follows a path ("→ B", "(new, +3)", "+3 −1"); never inside a note's name.
_BREAK = re.compile(r"(?<=/)|(?<= )(?=[(+−→])|(?<=→ )")


def fold(text: str, width: int, *, indent: str = "    ") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken after a '/' or between a path and
    what follows it (a path is never cut inside a name); a piece with nowhere to break stays
    whole. Later lines start with ``indent``."""
    lines: list[str] = []
    rest = text
    while cell_len(rest) > width:
        head = chop_cells(rest, width)[0]
        cut = max((m.start() for m in _BREAK.finditer(head, 0, len(head))), default=0)
        if cut <= len(rest) - len(rest.lstrip(" ")):
            break  # nowhere to break after the leading spaces: the terminal shows it whole
        lines.append(head[:cut].rstrip())
        rest = indent + rest[cut:].lstrip(" ")
    return [*lines, rest]


def approval_block(event: ApprovalRequired, *, width: int = 120) -> Text:
    """What the person is asked to approve: the step, why it asks, each file's diff, in lines
    of at most ``width`` columns."""
    text = Text()
    text.append("? ", "bold yellow")
    step = label(event.name, event.arguments)
    text.append(step, "bold")
    if cell_len(step) + 4 + cell_len(event.reason) <= width - 1:
        text.append(f"  {event.reason}\n", "yellow")
    else:  # the reason on lines of its own, wrapped at words under the step
        text.append("\n")
        for line in textwrap.wrap(
            event.reason, max(20, width - 3), break_long_words=False, break_on_hyphens=False
        ):
            text.append(f"  {line}\n", "yellow")
    for d in event.diffs:
        path = str(d.get("path") or d.get("to") or "?")
        moved = d.get("from") not in (None, path)
        head = f"  {d.get('from')} → {path}" if moved else f"  {path}"
        counts = _file_counts(d, path)
        # The head is folded alone and the counts follow it whole: on its last row when they
        # fit there, else on a row of their own (never split, never said twice).
        *lines, last = fold(head, width - 1)
        if cell_len(last) + 2 + cell_len(counts) > width - 1:
            lines, last = [*lines, last], "  "
        for line in lines:
            text.append(line + "\n", "bold")
        text.append(last, "bold")
        text.append(f"  {counts}\n", "dim")
        text.append_text(_diff_text(str(d.get("diff") or ""), width))
    if not event.diffs:
        for line in _argument_lines(event.arguments, width)[:_DIFF_LINES]:
            text.append(line + "\n", "dim")
    return text


def _argument_lines(arguments: dict[str, Any], width: int) -> list[str]:
    """A step without diffs (git_agent's git_add, a tool of the user's) shows its arguments as
    ``name: value`` lines, a list as its items, folded at ``width``."""
    lines: list[str] = []
    for name, value in arguments.items():
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            shown = ", ".join(str(v) for v in value) or "(none)"
        elif isinstance(value, str):
            shown = value
        else:
            shown = json.dumps(value, ensure_ascii=False)
        for i, piece in enumerate(shown.splitlines() or [""]):
            lines += fold(f"    {name}: {piece}" if i == 0 else f"      {piece}", width - 1)
    return lines


_DECLINED = {
    "user": "declined by you",
    "policy": "refused by the approval policy",
    "nobody": "not run: nobody could approve it",
}


def step_line(
    shown: str,
    source: str,
    success: bool,
    said: str,
    *,
    declined_by: str = "user",
    width: int | None = None,
) -> Text:
    """A finished step's line, live or replayed: ``⊘`` declined or interrupted, ``✗`` failed,
    ``●`` done with ``said`` (its line counts or a few words of its outcome). With ``width``,
    a ``said`` that does not fit beside the step goes under it, wrapped at words, indented."""
    line = Text()
    if source == "denied":
        mark, style, said = "⊘ ", "yellow", _DECLINED.get(declined_by, _DECLINED["user"])
    elif source == "interrupted":
        mark, style, said = "⊘ ", "yellow", "interrupted"
    elif not success:
        mark, style = "✗ ", "red"
    else:
        mark, style = "● ", "dim"
        if source == "override":
            said += "  (result given by the user)"
    line.append(mark, "green" if mark == "● " else style)
    line.append(shown, "bold")
    if width is None or cell_len(mark + shown) + 2 + cell_len(said) <= width - 1:
        line.append(f"  {said}", style)
        return line
    wrapped = textwrap.wrap(
        said, max(20, width - 3), break_long_words=False, break_on_hyphens=False
    )
    for piece in wrapped:
        line.append(f"\n  {piece}", style)
    return line


def _file_counts(d: dict[str, Any], path: str) -> str:
    """A file's line counts, ``+3 −1``; for a file that is not a note (no hunks to count),
    what happens to it: ``binary, deleted`` rather than a ``+0 −0`` that reads as nothing."""
    diff = str(d.get("diff") or "")
    before, after = d.get("from"), d.get("to")
    moved = bool(before and after and before != after)
    if "\n@@" not in "\n" + diff and not path.lower().endswith(".md"):
        what = "deleted" if after is None else "created" if before is None else "changed"
        return f"binary, {'moved' if moved else what}"
    added, removed = diff_counts(diff)
    if moved and not added and not removed:
        return "moved, text unchanged"
    return f"+{added} −{removed}"


def _count_changed(changed: list[FileStep]) -> str:
    """'1 note', '2 notes and 1 file', '1 note and 1 folder': what a run's changed list holds
    (a note is a Markdown file; an attachment is a file)."""
    folders = sum(1 for step in changed if step.kind == "mkdir")
    notes = sum(1 for s in changed if s.kind != "mkdir" and s.path.lower().endswith(".md"))
    others = len(changed) - folders - notes
    parts = [plural(notes, "note")] if notes else []
    parts += [plural(others, "file")] if others else []
    parts += [plural(folders, "folder")] if folders else []
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


class TerminalView:
    def __init__(
        self,
        console: Console,
        *,
        verbose: bool = False,
        changes: RunChanges | None = None,
        undo_hint: str = "vaultpilot undo {id}",
    ) -> None:
        self.console = console
        self.verbose = verbose
        self.changes = changes
        self.undo_hint = undo_hint
        self.live = console.is_terminal
        self.spinner = Spinner()
        self.spinning = False  # the spinner line is on screen
        self.waiting = False  # nothing is streaming: the spinner may be drawn
        self.calls: dict[str, str] = {}
        self.declined: dict[str, str] = {}
        self.started = time.monotonic()
        self.run_id = ""
        self._stream_kind = ""
        self._chars = 0  # characters streamed since the last usage report
        self._base_tokens = 0  # the run's tokens at the last usage report
        self._writer: WordWrapper | None = None

    # ----- output helpers
    def _emit(self, text: str, style: str) -> None:
        self.console.print(Text(text, style), end="", soft_wrap=True)

    def _clear_spinner(self) -> None:
        if self.spinning:
            self.console.file.write("\r\x1b[2K")
            self.console.file.flush()
            self.spinning = False

    def tick(self) -> None:
        """Redraw the spinner line (only in a terminal, only while nothing streams)."""
        if not (self.live and self.waiting):
            return
        line = chop_cells(self.spinner.frame(), max(10, self.console.width - 1))[0]
        self.console.file.write("\r\x1b[2K\x1b[2m" + line + "\x1b[0m")
        self.console.file.flush()
        self.spinning = True

    def pause(self) -> None:
        """Stop the spinner (before a question)."""
        self.waiting = False
        self._clear_spinner()

    def _wait(self, activity: str) -> None:
        self.spinner.restart(activity)
        self.waiting = True

    def _end_stream(self) -> None:
        if self._writer is not None:
            self._writer.finish()
            self._writer = None
            self._stream_kind = ""

    def _stream(self, kind: str, text: str) -> None:
        if self._stream_kind != kind:
            self._end_stream()
            style = "dim italic" if kind == "thought" else ""
            indent = "  " if kind == "thought" else ""
            if kind == "thought":
                self._emit("✻ ", "dim")
            self._writer = WordWrapper(
                self._emit, self.console.width - 1, indent=indent, style=style
            )
            if kind == "thought":
                self._writer.column = 2
            self._stream_kind = kind
        assert self._writer is not None
        self._writer.feed(text)
        self._chars += len(text)
        self.spinner.tokens = max(self.spinner.tokens, self._base_tokens + self._chars // 4)

    def _line(self, text: Text) -> None:
        self._end_stream()
        self.console.print(text, soft_wrap=False)

    # ----- events
    # One case per event kind, each a call or two, ending in assert_never: the match is the
    # complexity, and splitting it would hide which kinds are handled.
    def show(self, event: AgentEvent) -> None:  # noqa: C901
        self._clear_spinner()
        if event.kind not in ("thought", "text_chunk"):
            self._end_stream()
        match event.kind:
            case "run_started":
                self._run_started(event)
            case "context_attached":
                self._attached(event)
            case "status":
                self._status(event)
            case "thought":
                self.waiting = False
                self._stream("thought", event.text)
            case "text_chunk":
                self.waiting = False
                self._stream("text", event.text)
            case "usage":
                self._usage(event)
            case "message":
                pass
            case "tool_call":
                self._tool_call(event)
            case "approval_required":
                self.pause()
                self.console.print(approval_block(event, width=self.console.width), end="")
            case "approval_resolved":
                self._resolved(event)
            case "tool_result":
                self._result(event)
                self._wait("Thinking")
            case "error":
                self._line(Text(f"error: {event.message}", "bold red"))
            case "run_finished":
                self.waiting = False
                self._finish(event.reason, event.message, event.steps, event.total_tokens)
            case _:
                assert_never(event)

    def _run_started(self, event: RunStarted) -> None:
        self.run_id = event.run_id
        self.started = time.monotonic()
        self.spinner.tokens = self._base_tokens = 0
        if self.changes is not None:
            self.changes.start(event.run_id)
        if self.verbose:
            tools = ", ".join(event.tools)
            self.console.print(Text(f"model {event.model} · tools: {tools}", "dim"))
        self._wait("Thinking")

    def _attached(self, event: ContextAttached) -> None:
        for note in event.notes:
            cut = " (truncated)" if note["truncated"] else ""
            self._line(Text(f"📎 {note['path']}{cut}", "cyan"))
        for name in event.unknown:  # "@X — why" when the note was there but not attached
            said = name if " — " in name else f"{name}: no such note in the vault"
            self._line(Text(f"📎 {said}", "yellow"))
        for path in event.omitted:
            self._line(Text(f"📎 {path}: over the context budget, not attached", "yellow"))

    def _status(self, event: Status) -> None:
        if self.verbose:
            self._line(Text(event.message, "dim"))
        if event.message.startswith("Thinking"):
            self._chars = 0
            self._wait("Thinking")

    def _usage(self, event: Usage) -> None:
        self._base_tokens = event.run_total_tokens
        self.spinner.tokens = event.run_total_tokens
        self._chars = 0
        if self.verbose:
            guess = " (estimated)" if event.estimated else ""
            self._line(Text(f"{event.total_tokens:,} tokens{guess}", "dim"))

    def _tool_call(self, event: ToolCall) -> None:
        shown = (
            label(event.name, event.arguments)
            if event.arguments is not None
            else (f"{event.name}(…)")
        )
        self.calls[event.call_id] = shown
        self._wait(f"Running {shown}")

    def _resolved(self, event: ApprovalResolved) -> None:
        if not event.approved:
            self.declined[event.call_id] = event.by
        else:
            self._wait(f"Running {self.calls.get(event.call_id, '')}")

    def _result(self, event: ToolResult) -> None:
        shown = self.calls.get(event.call_id, event.name)
        said = outcome(event.result)
        if event.success and event.source not in ("denied", "interrupted"):
            steps = self.changes.new() if self.changes is not None else []
            said = self._steps_or_outcome(steps, event.result)
        by = self.declined.get(event.call_id, "user")
        width = self.console.width
        self._line(step_line(shown, event.source, event.success, said, declined_by=by, width=width))

    @staticmethod
    def _steps_or_outcome(steps: list[FileStep], result: dict[str, Any]) -> str:
        if not steps:
            return outcome(result)
        if len(steps) == 1 and steps[0].kind == "update":
            said = f"+{steps[0].added} −{steps[0].removed}"
        else:
            said = "; ".join(s.describe() for s in steps[:3]) + (
                f"; +{len(steps) - 3} more" if len(steps) > 3 else ""
            )
        # What the counts do not say: notes left out or failed, links left unresolved.
        warnings = result.get("warnings")
        extra = warnings[0] if isinstance(warnings, list) and warnings else None
        if extra is None and result.get("failures"):
            extra = result.get("message")
        if not extra:
            return said
        flat = " ".join(str(extra).split())
        return f"{said} · {flat if len(flat) <= 100 else flat[:99] + '…'}"

    def _finish(self, reason: str, message: str, steps: int, tokens: int) -> None:
        c = self.console
        changed = self.changes.summary() if self.changes is not None else []
        if changed:
            c.print(Text(f"Changed {_count_changed(changed)}:", "bold"))
            for step in changed:
                for piece in fold(f"  {step.describe()}", c.width - 1):
                    c.print(Text(piece), soft_wrap=True)
            hint = self.undo_hint.format(id=self.run_id)  # the whole id, as history shows it
            which = "all of them" if len(changed) > 1 else "it"
            c.print(Text(f"  Undo {which} with: {hint}", "dim"), soft_wrap=True)
        if reason not in ("done", "error"):
            c.print(Text(message, "yellow"))
        seconds = time.monotonic() - self.started
        word = "step" if steps == 1 else "steps"
        # A run stopped mid-answer has no usage report for the text that streamed: count it.
        used = f"{tokens:,} tokens"
        if self.spinner.tokens > tokens:
            used = f"{self.spinner.tokens:,} tokens (estimated)"
        c.print(Text(f"{steps} {word} · {used} · {seconds:.1f}s · {reason}", "dim"))


class JsonView:
    """One JSON object per line (``--json``)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def show(self, event: AgentEvent) -> None:
        line = json.dumps(event_to_dict(event), ensure_ascii=False)
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def tick(self) -> None:
        pass

    def pause(self) -> None:
        pass
