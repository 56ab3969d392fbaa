"""Text streamed to a terminal as it comes: wrapped at word boundaries, with light Markdown.

``WordWrapper(emit, width)`` takes pieces of text cut anywhere (a model streams tokens, not
words) and writes whole words: a word is held until the whitespace after it arrives (or
``flush``), then written on the current line if it fits, else on the next one. ``**bold**``,
``*em*``/``_em_`` around a word and `` `code` `` change the style instead of being printed, a
leading ``#``/``##`` makes the line bold, so an answer reads as text while it streams. A fenced
code block (a line starting with three backticks, to the next such line) is written line by line
as it is, spaces and all, never re-wrapped, its fences dimmed, so code can be read and copied.
``emit(text, style)`` does the writing (the terminal view passes a Rich console's print), which
keeps this module free of I/O and easy to test.

``Spinner`` is the one line shown while nothing streams: a braille frame, what is going on, the
seconds since it started and the tokens so far. The terminal view draws it with ``frame()`` and
removes it before anything else is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.cells import cell_len

__all__ = ["Spinner", "WordWrapper"]

Emit = Callable[[str, str], None]
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class WordWrapper:
    def __init__(self, emit: Emit, width: int, *, indent: str = "", style: str = "") -> None:
        self.emit = emit
        self.width = max(20, width)
        self.indent = indent
        self.base = style
        self.column = 0  # cells written on the current line (0: at the start of a line)
        self._word = ""
        self._bold = False
        self._em = False
        self._code = False
        self._heading = False
        self._space = False  # a space is owed before the next word on this line
        self._probe: str | None = None  # backticks at a line's start: maybe a code fence
        self._fenced = False  # inside a fenced code block
        self._raw = ""  # the code line being received

    # ----- input
    def feed(self, text: str) -> None:
        for ch in text:
            if self._fenced:
                if ch == "\n":
                    self._code_line()
                elif ch != "\r":
                    self._raw += ch
            elif self._probe is not None:
                self._probe += ch
                if self._probe.startswith("```"):  # a fence: the rest of its line is the info
                    if ch == "\n":
                        self._open_fence()
                elif not "```".startswith(self._probe):
                    held, self._probe = self._probe, None
                    self._plain(held)  # not a fence after all
            elif ch == "`" and self.column == 0 and not self._word and not self._code:
                self._probe = ch
            else:
                self._plain(ch)

    def _plain(self, text: str) -> None:
        for ch in text:
            if ch in " \t\n\r":
                self._end_word()
                if ch == "\n":
                    self.newline()
                    self._heading = False
                elif self.column > len(self.indent):
                    self._space = True
            else:
                self._word += ch

    def flush(self) -> None:
        """Write the word held back; the line stays open."""
        self._end_word()

    def newline(self) -> None:
        self.emit("\n", "")
        self.column = 0
        self._space = False

    def finish(self) -> None:
        """Flush and end the line, if anything is on it."""
        if self._probe is not None:
            held, self._probe = self._probe, None
            if held.startswith("```"):
                self._open_fence(held)
            else:
                self._plain(held)
        if self._fenced:
            if self._raw:
                self._code_line()
            self._fenced = False
        self.flush()
        if self.column:
            self.newline()
        self._bold = self._em = self._code = self._heading = False

    # ----- output
    def _open_fence(self, line: str | None = None) -> None:
        line = (self._probe if line is None else line) or "```"
        self._probe = None
        self._write_line(line.rstrip("\r\n"), "dim")
        self._fenced = True

    def _code_line(self) -> None:
        line, self._raw = self._raw, ""
        if line.lstrip().startswith("```"):
            self._write_line(line.strip(), "dim")
            self._fenced = False
        else:
            self._write_line(line, " ".join(p for p in (self.base, "cyan") if p))

    def _write_line(self, text: str, style: str) -> None:
        """One whole line as it is (no wrapping, spaces kept), on a line of its own."""
        if self.column:
            self.newline()
        if self.indent:
            self.emit(self.indent, "")
        if text:
            self.emit(text, style)
        self.newline()

    def _end_word(self) -> None:
        word, self._word = self._word, ""
        if not word:
            return
        if self.column == 0 and not self._code and set(word) == {"#"}:
            self._heading = True  # a Markdown heading: the rest of the line in bold
            return
        parts = self._styled(word)
        shown = sum(cell_len(text) for text, _ in parts)
        if not shown:
            return
        space = 1 if self._space else 0
        if self.column and self.column + space + shown > self.width:
            self.newline()
            space = 0
        if self.column == 0 and self.indent:
            self.emit(self.indent, "")
            self.column = cell_len(self.indent)
        if space:
            self.emit(" ", self.base)
            self.column += 1
        for text, style in parts:
            self.emit(text, style)
        self.column += shown
        self._space = False

    def _styled(self, word: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        buf = ""
        i = 0
        while i < len(word):
            ch = word[i]
            if word.startswith("**", i) and not self._code:
                buf = self._cut(out, buf)
                self._bold = not self._bold
                i += 2
                continue
            if ch == "`":
                buf = self._cut(out, buf)
                self._code = not self._code
            elif ch in "*_" and not self._code and self._em_edge(word, i):
                buf = self._cut(out, buf)
                self._em = not self._em
            else:
                buf += ch
            i += 1
        self._cut(out, buf)
        return out

    @staticmethod
    def _em_edge(word: str, i: int) -> bool:
        """``*``/``_`` marks emphasis only at a word's edge (not in snake_case or 2*3)."""
        return i == 0 or i == len(word) - 1 or not word[i - 1].isalnum()

    def _cut(self, out: list[tuple[str, str]], buf: str) -> str:
        if buf:
            out.append((buf, self._style()))
        return ""

    def _style(self) -> str:
        parts = [self.base] if self.base else []
        if self._bold or self._heading:
            parts.append("bold")
        if self._em:
            parts.append("italic")
        if self._code:
            parts.append("cyan")
        return " ".join(parts)


class Spinner:
    """What the one waiting line says; ``frame()`` renders it at the current time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.activity = "Thinking"
        self.tokens = 0
        self._frame = 0

    def restart(self, activity: str) -> None:
        self.activity = activity
        self.started = self.clock()

    def frame(self) -> str:
        self._frame = (self._frame + 1) % len(_FRAMES)
        seconds = self.clock() - self.started
        tokens = f" · {self.tokens:,} tokens" if self.tokens else ""
        return f"{_FRAMES[self._frame]} {self.activity}… {seconds:.0f}s{tokens} · Ctrl-C to stop"
