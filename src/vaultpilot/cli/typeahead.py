"""Keys typed while an agent run holds the terminal.

``typing_held()`` wraps a run in ``vaultpilot chat``: what the person types meanwhile is not
echoed into the step lines, the spinner or the streamed answer, and is dropped at the end of the
run instead of being sent, unseen, as the next message (a "y" typed for an approval that was not
there yet once started three runs). ``Typed.discarded`` says whether anything was dropped, so the
chat can say so. The approval prompt sets the terminal up for itself and gives it back as it
found it. Off a terminal (tests, pipes) and on Windows it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Iterator
from typing import IO

try:
    import termios
except ImportError:  # Windows: the console has no such modes
    termios = None  # type: ignore[assignment]

__all__ = ["Typed", "typing_held"]


class Typed:
    """Whether keys were typed while the run held the terminal (and were dropped)."""

    discarded = False


@contextlib.contextmanager
def typing_held(stream: IO[str] | None = None) -> Iterator[Typed]:
    """No echo while the block runs; whatever was typed is dropped when it ends."""
    typed = Typed()
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        tty = os.isatty(fd)
    except (AttributeError, OSError, ValueError):
        tty = False
    if not tty or termios is None:
        yield typed
        return
    try:
        before = termios.tcgetattr(fd)
        quiet = [*before[:3], before[3] & ~termios.ECHO, *before[4:]]
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        yield typed
        return
    try:
        yield typed
    finally:
        with contextlib.suppress(OSError, termios.error):
            typed.discarded = bool(select.select([fd], [], [], 0)[0])
            termios.tcflush(fd, termios.TCIFLUSH)
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, before)
