"""The child side of the server's read workers (``server.readers``): ``python -m
vaultpilot.tools.readworker`` answers read tool calls on one vault until its stdin closes.

Its first frame on stdin is a ``Setup`` (the vault and its index); it then answers "ready" and, for
each ``(tool name, arguments)`` frame, the call's ``ToolOutcome`` as a ``(result, error)`` pair, in
order (a frozen dataclass with slots pickles through ``dataclasses.fields`` on both sides, ~10 µs a
call). A ``VaultRules`` frame (the person's rules, sent before the first call and again whenever
they change) holds for the calls after it and is not answered. Frames are a 4-byte length and a
pickle (parent and child are the same program); anything else the child prints goes to stderr. It
opens the index read-only and never syncs it (the server keeps it live and sends reads only while it
is); a write sent by mistake fails with an ``InternalError``. It lives in ``tools`` so that it
starts without the server's modules.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import struct
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from vaultpilot.errors import InternalError
from vaultpilot.tools.rules import VaultRules

__all__ = ["Setup", "frame", "main"]

_LENGTH = struct.Struct(">I")
HEADER = _LENGTH.size


@dataclass(frozen=True)
class Setup:
    root: Path
    db_path: Path


def frame(obj: object) -> bytes:
    """``obj`` as one frame: its pickle's length, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def frame_size(header: bytes | bytearray) -> int:
    return int(_LENGTH.unpack(header)[0])


def _read(stream: IO[bytes]) -> Any:
    head = stream.read(HEADER)
    if len(head) < HEADER:
        return None
    return pickle.loads(stream.read(frame_size(head)))  # noqa: S301 (our own parent's frames)


class _ReadOnly:
    """The child's upkeep: the server keeps the index fresh (calls come only while live)."""

    def fresh(self, *, force: bool, paths: object = None) -> None:
        if force:
            raise InternalError("A read worker was sent a write; writes run in the server.")

    def writing(self) -> contextlib.AbstractContextManager[None]:
        raise InternalError("A read worker was sent a write; writes run in the server.")


def main() -> None:
    """Answer the parent's read tool calls until stdin closes."""
    from vaultpilot.index.db import connect
    from vaultpilot.tools.context import open_context
    from vaultpilot.tools.registry import run_tool
    from vaultpilot.tools.semantic import live

    logging.basicConfig(level=logging.WARNING, format="read worker: %(levelname)s %(message)s")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the frames
    stdin = sys.stdin.buffer
    setup: Setup = _read(stdin)
    semantic = live()
    ctx = open_context(setup.root, setup.db_path, semantic=semantic, journal=None, source="server")
    ctx.conn.close()
    ctx = replace(ctx, conn=connect(setup.db_path, read_only=True), upkeep=_ReadOnly())
    out.write(frame("ready"))
    out.flush()
    while (call := _read(stdin)) is not None:
        if isinstance(call, VaultRules):
            ctx = replace(ctx, rules=call)
            continue
        name, arguments = call
        outcome = run_tool(ctx, name, arguments)
        out.write(frame((outcome.result, outcome.error)))
        out.flush()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        main()
