"""Structured logs for the agent programs: one JSON object per line on stderr.

stdout belongs to the ``ActionResponse``; everything else goes here. Every line carries the
agent's name and the request's ``correlation_id`` (``null`` until the request is parsed), so an
orchestrator can join the agent's logs with its own spans, as the contract's tracing section asks.

    {"ts": "2025-01-31T12:00:00.123Z", "level": "info", "agent": "obsidian_agent",
     "event": "request.done", "correlation_id": "…", "request_id": "…", "code": 0, …}

Writing a log line never raises: a closed or broken stderr must not cost the caller its reply.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TextIO

__all__ = ["JsonLog", "Level"]

Level = Literal["debug", "info", "warning", "error"]


def _timestamp(now: float) -> str:
    millis = int(now * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{millis:03d}Z"


@dataclass(frozen=True, slots=True)
class JsonLog:
    """A logger bound to one agent and, after ``bind``, to one request's ids."""

    agent: str
    stream: TextIO
    context: dict[str, Any] = field(
        default_factory=lambda: {"correlation_id": None, "request_id": None}
    )

    def bind(self, **fields: Any) -> JsonLog:
        """A logger whose lines also carry ``fields`` (e.g. the request's ids)."""
        return replace(self, context={**self.context, **fields})

    def log(self, level: Level, event: str, **fields: Any) -> None:
        line = {
            "ts": _timestamp(time.time()),
            "level": level,
            "agent": self.agent,
            "event": event,
            **self.context,
            **fields,
        }
        try:
            self.stream.write(json.dumps(line, default=str) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # closed or broken stderr: logging is best effort
            pass

    def info(self, event: str, **fields: Any) -> None:
        self.log("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log("error", event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        """An error line carrying the traceback of the exception being handled, as a string."""
        import traceback  # only on this path: it costs the agents ~10 ms at start-up

        self.log("error", event, traceback=traceback.format_exc(), **fields)
