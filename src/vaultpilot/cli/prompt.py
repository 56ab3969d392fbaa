"""The chat prompt: prompt_toolkit with history, note completion and multi-line input.

* History is kept across sessions in ``<data folder>/chat_history`` (private, like the rest of
  the data folder); Up/Down walk it, Ctrl-R searches it.
* ``@`` and ``[[`` complete note names: ``@Wee`` offers ``@Weekly Review`` (a name with spaces is
  written ``@[[Weekly Review]]`` so the mention is exact), ``[[Wee`` offers ``[[Weekly Review]]``.
* Enter sends; Alt-Enter (Esc then Enter), or a line ending in ``\\``, starts a new line.
* Ctrl-C clears the line; on an empty line it says how to quit, and a second Ctrl-C quits.
  Ctrl-D on an empty line quits.

``ChatPrompt.read()`` returns the text, or None to quit. ``ChatPrompt.ask(question)`` reads one
line for an approval from inside a running event loop (None on Ctrl-C).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from vaultpilot.locations import private_dir, tighten

__all__ = ["ChatPrompt", "NoteCompleter", "fitting"]

_AT = re.compile(r"(?:^|(?<=[\s(\[{]))@(\[\[)?([^\s@\]\[]*)$")
_LINK = re.compile(r"\[\[([^\]\[\n]*)$")
_SHOWN = 30
# The keys the toolbar names, longest first: the first that fits the terminal is shown.
_KEYS = (
    "Enter send · Alt-Enter new line · @ or [[ note · /help · Ctrl-C clear",
    "Enter send · Alt-Enter newline · @ note · /help · Ctrl-C clear",
    "Enter send · Alt-Enter newline · @ note · /help",
    "Enter send · /help for keys",
    "/help",
)


def fitting(choices: Iterable[str], width: int) -> str:
    """The first of ``choices`` (longest first) no wider than ``width``, else the last."""
    options = list(choices)
    return next((c for c in options if len(c) <= width), options[-1])


class NoteCompleter(Completer):
    """Note names after ``@`` or ``[[`` (``names()`` gives the vault's note paths)."""

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self.names = names

    def _matches(self, typed: str) -> list[str]:
        word = typed.lower()
        out: list[tuple[int, str]] = []
        for path in self.names():
            title = path.rsplit("/", 1)[-1].removesuffix(".md")
            low = title.lower()
            if low.startswith(word):
                out.append((0, title))
            elif word in low or word in path.lower():
                out.append((1, path.removesuffix(".md") if word in path.lower() else title))
        out.sort(key=lambda x: (x[0], len(x[1]), x[1].lower()))
        return list(dict.fromkeys(name for _, name in out))[:_SHOWN]

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        link = _LINK.search(before)
        at = _AT.search(before)
        if at is not None:
            typed = at.group(2)
            start = at.start() - len(before)
            for name in self._matches(typed):
                text = f"@[[{name}]]" if " " in name or at.group(1) else f"@{name}"
                yield Completion(text, start_position=start, display=name)
        elif link is not None:
            typed = link.group(1)
            for name in self._matches(typed):
                yield Completion(
                    f"[[{name}]]", start_position=link.start() - len(before), display=name
                )


def _bindings(on_hint: Callable[[str], None]) -> KeyBindings:
    keys = KeyBindings()
    state = {"armed": False}

    @keys.add("c-c")
    def _(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
            state["armed"] = False
        elif state["armed"]:
            event.app.exit(result=None)
        else:
            state["armed"] = True
            on_hint("Press Ctrl-C again to quit (or type /exit).")

    @keys.add("enter")
    def _(event: KeyPressEvent) -> None:
        state["armed"] = False
        buffer = event.current_buffer
        if buffer.complete_state is not None and buffer.complete_state.current_completion:
            buffer.apply_completion(buffer.complete_state.current_completion)
            return
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @keys.add("escape", "enter")
    def _(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-d")
    def _(event: KeyPressEvent) -> None:
        if not event.current_buffer.text:
            event.app.exit(result=None)
        else:
            event.current_buffer.delete(1)

    return keys


class ChatPrompt:
    def __init__(self, data_root: Path, names: Callable[[], list[str]]) -> None:
        private_dir(data_root)
        history = data_root / "chat_history"
        history.touch(exist_ok=True)
        tighten(history)
        self.hint = ""
        self.session: PromptSession[Any] = PromptSession(
            history=FileHistory(str(history)),
            completer=NoteCompleter(names),
            complete_while_typing=True,
            multiline=True,
            key_bindings=_bindings(self._set_hint),
            prompt_continuation=lambda width, line, wrap: "  " + " " * max(0, width - 2),
            bottom_toolbar=self._toolbar,
        )

    def _set_hint(self, text: str) -> None:
        self.hint = text

    def _toolbar(self) -> FormattedText:
        hint, self.hint = self.hint, ""
        width = get_app().output.get_size().columns
        shown = hint or fitting(_KEYS, width - 2)
        return FormattedText([("class:bottom-toolbar.text", " " + shown)])

    def read(self) -> str | None:
        """The next message, or None when the person quits."""
        try:
            text = self.session.prompt(FormattedText([("bold", "› ")]))
        except (EOFError, KeyboardInterrupt):
            return None
        return None if text is None else str(text)

    async def ask(self, question: str) -> str | None:
        """One line for a question asked during a run (no history, no completion)."""
        answer: PromptSession[Any] = PromptSession()
        try:
            text = await answer.prompt_async(FormattedText([("bold yellow", question)]))
        except (EOFError, KeyboardInterrupt):
            return None
        return str(text)
