"""Scripted model turns, and the exact stream chunks a real provider would send for each.

A ``Script`` is a list of ``ScriptedTurn``: what the model says (``reasoning``, ``text``,
``tool_calls``) or how it fails (``status`` with an error body, ``delay`` before answering,
``stall_after`` chunks then silence until the client goes away). It loads from JSON:

    {"model": "scripted", "turns": [
        {"tool_calls": [{"name": "obsidian_get_context",
                         "arguments": {"contextType": "read_note", "target": "test.md"}}]},
        {"text": "The first line is: # Test"}]}

``openai_chunks`` renders a turn as Chat Completions stream chunks the way OpenAI does: a role
delta, reasoning and text in word-sized pieces, each tool call as a first delta with ``id``,
``type`` and ``function.name`` followed by its ``arguments`` in three pieces cut anywhere (even
inside a string or an escape), a finish chunk, then a usage chunk when the request asked for it.
``anthropic_events`` renders the same turn as Anthropic Messages stream events.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CREATED",
    "Script",
    "ScriptedCall",
    "ScriptedTurn",
    "anthropic_events",
    "completion_body",
    "openai_chunks",
    "usage_of",
]

CREATED = 1_700_000_000  # a fixed timestamp keeps recorded streams reproducible
_PIECES = re.compile(r"\S+\s*|\s+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedCall(_Model):
    name: str
    arguments: str | dict[str, Any] = Field(
        "", description="A JSON object, or raw text (to script malformed arguments)."
    )
    id: str | None = None

    def argument_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ScriptedTurn(_Model):
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    status: int = Field(200, description="Not 200: answer with this HTTP status and 'error'.")
    error: str = "Scripted server error"
    delay: float = Field(0.0, ge=0, description="Seconds to wait before answering.")
    chunk_delay: float = Field(0.0, ge=0, description="Seconds between stream chunks.")
    stall_after: int | None = Field(
        None, ge=0, description="Send this many chunks, then nothing until the client leaves."
    )
    usage: bool = Field(True, description="Report token usage when the client asks for it.")


class Script(_Model):
    model: str = "scripted"
    turns: list[ScriptedTurn]


def _pieces(text: str) -> list[str]:
    return _PIECES.findall(text)


def _thirds(text: str) -> list[str]:
    if len(text) < 3:
        return [text] if text else []
    a, b = len(text) // 3, 2 * len(text) // 3
    return [text[:a], text[a:b], text[b:]]


def _call_id(turn_index: int, call_index: int, call: ScriptedCall) -> str:
    return call.id or f"call_{turn_index}_{call_index}"


def usage_of(turn: ScriptedTurn, body: dict[str, Any]) -> tuple[int, int]:
    """Deterministic token counts: about four characters a token of what was sent and written."""
    sent = json.dumps(body.get("messages", []), ensure_ascii=False, sort_keys=True)
    sent += json.dumps(body.get("tools", []), ensure_ascii=False, sort_keys=True)
    written = turn.reasoning + turn.text + "".join(c.argument_text() for c in turn.tool_calls)
    return len(sent) // 4, len(written) // 4 + 1


def openai_chunks(
    turn: ScriptedTurn, turn_index: int, body: dict[str, Any], model: str
) -> list[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-scripted-{turn_index}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in _pieces(turn.reasoning)]
    out += [chunk({"content": p}) for p in _pieces(turn.text)]
    for i, call in enumerate(turn.tool_calls):
        first = {
            "index": i,
            "id": _call_id(turn_index, i, call),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        for piece in _thirds(call.argument_text()):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    if turn.usage and (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = usage_of(turn, body)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        out.append({**base, "choices": [], "usage": usage})
    return out


def completion_body(
    turn: ScriptedTurn, turn_index: int, body: dict[str, Any], model: str
) -> dict[str, Any]:
    """The whole (non-streamed) Chat Completions response for a turn."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(turn_index, i, c),
                "type": "function",
                "function": {"name": c.name, "arguments": c.argument_text()},
            }
            for i, c in enumerate(turn.tool_calls)
        ]
    prompt, completion = usage_of(turn, body)
    return {
        "id": f"chatcmpl-scripted-{turn_index}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def anthropic_events(
    turn: ScriptedTurn, turn_index: int, body: dict[str, Any], model: str
) -> list[tuple[str, dict[str, Any]]]:
    """The Anthropic Messages stream for a turn: ``[(event name, data), ...]``."""
    prompt, completion = usage_of(turn, body)
    message: dict[str, Any] = {
        "id": f"msg_scripted_{turn_index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": 1},
    }
    out: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if turn.reasoning:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(turn.reasoning)]
        deltas.append({"type": "signature_delta", "signature": "scripted"})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if turn.text:
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(turn.text)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for i, call in enumerate(turn.tool_calls):
        start = {"type": "tool_use", "id": _call_id(turn_index, i, call), "name": call.name}
        deltas = [
            {"type": "input_json_delta", "partial_json": p} for p in _thirds(call.argument_text())
        ]
        blocks.append(({**start, "input": {}}, deltas))
    for index, (block, deltas) in enumerate(blocks):
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        for delta in deltas:
            out.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if turn.tool_calls else "end_turn"
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": completion},
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return out
