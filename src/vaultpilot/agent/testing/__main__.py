"""``python -m vaultpilot.agent.testing SCRIPT.json [--port N] [--record FILE]``.

Prints the server's base URL on the first line of stdout (``http://127.0.0.1:PORT/v1``), then
serves the script until SIGINT or SIGTERM, or, with ``--exit-when-done``, until every turn has been
sent. With ``--record FILE`` the requests received are written there as JSON at exit.

Every bad input (a script that cannot be read, a port in use or out of range, a host that is not
this machine's, a record file that cannot be written) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import errno
import json
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType

from pydantic import ValidationError

from vaultpilot.agent.testing.script import Script
from vaultpilot.agent.testing.server import ScriptedModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vaultpilot.agent.testing")
    parser.add_argument("script", type=Path, help='JSON: {"model": ..., "turns": [...]}')
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_port, default=0, help="0 (default): any free port")
    parser.add_argument("--record", type=Path, help="write the received requests here at exit")
    parser.add_argument("--exit-when-done", action="store_true", help="stop after the last turn")
    args = parser.parse_args(argv)
    try:
        script = Script.model_validate_json(args.script.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        print(f"error: cannot load the script {args.script}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        server = ScriptedModelServer(script, host=args.host, port=args.port)
    except OSError as exc:
        print(f"error: {_cannot_listen(args.host, args.port, exc)}", file=sys.stderr)
        return 2
    with server:
        print(server.base_url, flush=True)
        while not stop.wait(0.05):
            if args.exit_when_done and server.finished:
                break
        if args.record:
            records = [{"path": r.path, "turn": r.turn, "body": r.body} for r in server.requests]
            try:
                args.record.write_text(json.dumps(records, indent=2), encoding="utf-8")
            except OSError as exc:
                why = exc.strerror or exc
                print(f"error: cannot write the record file {args.record}: {why}", file=sys.stderr)
                return 2
    return 0


def _port(text: str) -> int:
    """``--port``: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _cannot_listen(host: str, port: int, exc: OSError) -> str:
    """One line for a failure to listen, saying what to do instead."""
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use by another program; pass another --port, "
            "or leave --port out (or 0) for any free port."
        )
    if isinstance(exc, socket.gaierror):
        return f"cannot listen on {host!r}: no such host name; use 127.0.0.1."
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host!r}: it is not an address of this machine; use 127.0.0.1."
    if exc.errno == errno.EACCES:
        return f"port {port} needs privileges here; pass a --port above 1023, or leave it out."
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}."


if __name__ == "__main__":
    sys.exit(main())
