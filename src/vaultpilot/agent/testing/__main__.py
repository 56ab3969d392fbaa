"""``python -m vaultpilot.agent.testing SCRIPT.json [--port N] [--record FILE]``.

Prints the server's base URL on the first line of stdout (``http://127.0.0.1:PORT/v1``), then
serves the script until SIGINT or SIGTERM, or, with ``--exit-when-done``, until every turn has been
sent. With ``--record FILE`` the requests received are written there as JSON at exit.
"""

from __future__ import annotations

import argparse
import json
import signal
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
    parser.add_argument("--port", type=int, default=0, help="0 (default): any free port")
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
    with ScriptedModelServer(script, host=args.host, port=args.port) as server:
        print(server.base_url, flush=True)
        while not stop.wait(0.05):
            if args.exit_when_done and server.finished:
                break
        if args.record:
            records = [{"path": r.path, "turn": r.turn, "body": r.body} for r in server.requests]
            args.record.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
