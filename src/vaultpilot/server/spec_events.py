"""The specification's event shape ``{type, data}``, for sockets subscribed with format "spec".

The server's own frames carry an agent event as ``{type: "event", runId, vaultId, seq, event:
{kind, ...}}``. A socket subscribed with ``format: "spec"`` receives each of those as

    {"type": <kind>, "data": {<the event's fields>}, "runId", "vaultId", "seq"}

where ``type`` is one of the specification's four, ``thought``, ``tool_call``, ``tool_result``,
``text_chunk``, or one of these documented extra types: ``run_started``, ``context_attached``,
``status`` (data ``{message, step, source: "agent"}``), ``usage``, ``message`` (the assistant or
tool message added to the history), ``approval_required``, ``approval_resolved``, ``error`` and
``run_finished``. A ``ReportStatus`` push becomes ``{type: "status", data: {status, message,
source, time}, runId, vaultId, seq}``; ``hello``, ``reply`` and ``command`` frames are the same
in both formats.

Text the model writes in a turn that then calls tools is the model thinking aloud: it is sent as
one ``thought`` (data ``{text, step, source: "text"}``), never as ``text_chunk``. The model's
stream does not say whether tool calls will follow until the turn ends, so this format holds a
turn's text back and sends it when the turn ends (with the assistant ``message`` event, or
before ``error`` / ``run_finished``): as ``thought`` when the turn called tools, else as one
``text_chunk`` with the turn's whole text. The default format streams every chunk as it comes
(the agent view re-labels such text itself). ``seq`` is that of the event a frame comes from
(held-back chunks leave gaps; a released text shares the ``seq`` of the event that released it).

The fields the server's own events carry for its agent view (``run_started.approval_mode``,
``tool_call.label``, ``tool_result.outcome`` and ``files``: ``agent.events``) have no place in
the specification's shape and are left out of it.

``SpecStream`` is the stateful translator (one per server, fed every published frame in order);
``translate_all`` turns a run's stored frames (a reconnecting client's backlog) with a fresh one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SPEC_TYPES", "SpecStream", "translate_all"]

SPEC_TYPES = (
    "thought",
    "tool_call",
    "tool_result",
    "text_chunk",
    "run_started",
    "context_attached",
    "status",
    "usage",
    "message",
    "approval_required",
    "approval_resolved",
    "error",
    "run_finished",
)


# Per event kind, the fields the specification's shape does not have (see the module).
_NOT_IN_SPEC: dict[str, frozenset[str]] = {
    "run_started": frozenset({"approval_mode"}),
    "tool_call": frozenset({"label"}),
    "tool_result": frozenset({"outcome", "files"}),
    "approval_resolved": frozenset({"reason"}),
    "approval_required": frozenset({"per_file"}),
}


@dataclass(slots=True)
class _Held:
    step: int
    parts: list[str] = field(default_factory=list)


class SpecStream:
    """Turns the server's frames into spec-shaped frames (see the module)."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}  # run id -> text of the turn being streamed

    def translate(self, frame: dict[str, Any]) -> list[dict[str, Any]]:
        kind = frame.get("type")
        if kind == "status":
            data = {k: frame.get(k) for k in ("status", "message", "source", "time")}
            return [self._wrap(frame, "status", data)]
        event = frame.get("event")
        if kind != "event" or not isinstance(event, dict) or "kind" not in event:
            return [frame]
        name = event["kind"]
        left_out = _NOT_IN_SPEC.get(name, frozenset())
        data = {k: v for k, v in event.items() if k != "kind" and k not in left_out}
        run = frame.get("runId")
        if name == "text_chunk" and run is not None:
            held = self._held.get(run)
            if held is None or held.step != data.get("step"):
                released = self._release(frame, run, thinking=False)
                self._held[run] = held = _Held(int(data.get("step") or 0))
                held.parts.append(str(data.get("text", "")))
                return released
            held.parts.append(str(data.get("text", "")))
            return []
        out: list[dict[str, Any]] = []
        message: dict[str, Any] = (data.get("message") or {}) if name == "message" else {}
        if run is not None and message.get("role") == "assistant":
            out = self._release(frame, run, thinking=bool(message.get("tool_calls")))
        elif run is not None and name in ("error", "run_finished", "tool_call"):
            out = self._release(frame, run, thinking=name == "tool_call")
        if name == "status":
            data["source"] = "agent"
        out.append(self._wrap(frame, name, data))
        if name == "run_finished" and run is not None:
            self._held.pop(run, None)
        return out

    def _release(self, frame: dict[str, Any], run: str, *, thinking: bool) -> list[dict[str, Any]]:
        held = self._held.pop(run, None)
        if held is None or not held.parts:
            return []
        text = "".join(held.parts)
        if thinking:
            data = {"text": text, "step": held.step, "source": "text"}
            return [self._wrap(frame, "thought", data)]
        return [self._wrap(frame, "text_chunk", {"text": text, "step": held.step})]

    @staticmethod
    def _wrap(frame: dict[str, Any], kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": kind,
            "data": data,
            "runId": frame.get("runId"),
            "vaultId": frame.get("vaultId"),
            "seq": frame.get("seq"),
        }


def translate_all(frames: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored frames in the spec format, translated afresh (the held-back text included)."""
    stream = SpecStream()
    return [out for frame in frames for out in stream.translate(frame)]
