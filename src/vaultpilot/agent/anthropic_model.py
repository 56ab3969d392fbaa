"""A ``ModelClient`` for Anthropic's Messages API through the official ``anthropic`` SDK (optional).

Install with ``pip install 'vaultpilot[anthropic]'``; ``providers.make_model`` imports this module
only when the provider is "anthropic". The loop speaks OpenAI's chat shape, so this client
converts: the system message becomes ``system``; an assistant message's ``tool_calls`` become
``tool_use`` blocks; ``tool`` messages become ``tool_result`` blocks of one user message
(consecutive user-side messages are merged, as the API requires alternation); OpenAI ``tools``
entries become ``{name, description, input_schema}``. Streamed ``thinking`` becomes
``ReasoningDelta``, ``text`` ``TextDelta``, ``tool_use`` input deltas are assembled per block.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic

from vaultpilot.agent.model import (
    ChatMessage,
    ModelError,
    ModelEvent,
    RawToolCall,
    ReasoningDelta,
    TextDelta,
    TokenCount,
    TurnEnd,
)

__all__ = ["AnthropicModel", "to_anthropic"]


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {"_unparsed_arguments": arguments}
    return value if isinstance(value, dict) else {"_arguments": value}


def to_anthropic(
    messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system, messages, tools)`` in Anthropic's shapes."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m.get("role")
        if role == "system":
            system.append(str(m.get("content") or ""))
        elif role == "user":
            push("user", [{"type": "text", "text": str(m.get("content") or "")}])
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m["tool_call_id"],
                "content": str(m.get("content") or ""),
            }
            push("user", [block])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": str(m["content"])})
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": fn["name"],
                        "input": _input(fn.get("arguments", "")),
                    }
                )
            push("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
    converted = [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"].get("parameters") or {"type": "object"},
        }
        for t in tools
    ]
    return "\n\n".join(system), out, converted


def _describe(exc: anthropic.AnthropicError, base_url: str) -> str:
    if isinstance(exc, anthropic.APITimeoutError):
        return f"The model server at {base_url} did not answer in time (timeout)."
    if isinstance(exc, anthropic.APIConnectionError):
        return f"Could not connect to the model server at {base_url}. Is the base URL right?"
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        detail = str((error or {}).get("message") or exc.message).rstrip(".")
        return f"The model server answered HTTP {exc.status_code}: {detail}."
    return f"The model server's reply could not be read: {exc}."


@dataclass(frozen=True, slots=True)
class AnthropicModel:
    client: anthropic.AsyncAnthropic
    model: str
    max_tokens: int = 4096
    temperature: float | None = None

    @property
    def name(self) -> str:
        return self.model

    def request_body(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        system, converted, tool_list = to_anthropic(messages, tools)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": converted,
            "stream": True,
        }
        if system:
            body["system"] = system
        if tool_list:
            body["tools"] = tool_list
            body["tool_choice"] = {"type": "auto"}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> AsyncIterator[ModelEvent]:
        body = self.request_body(messages, tools)
        base = str(self.client.base_url)
        try:
            stream = await self.client.messages.create(**body)
        except anthropic.AnthropicError as exc:
            raise ModelError(_describe(exc, base)) from None
        calls: dict[int, list[str]] = {}
        pieces: dict[int, list[str]] = {}
        prompt = completion = 0
        stop = "end_turn"
        try:
            async for event in stream:
                if event.type == "message_start":
                    prompt = event.message.usage.input_tokens
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        calls[event.index] = [block.id, block.name]
                        pieces[event.index] = []
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        yield TextDelta(delta.text)
                    elif delta.type == "thinking_delta":
                        yield ReasoningDelta(delta.thinking)
                    elif delta.type == "input_json_delta":
                        pieces.setdefault(event.index, []).append(delta.partial_json)
                elif event.type == "message_delta":
                    completion = event.usage.output_tokens
                    stop = event.delta.stop_reason or stop
        except anthropic.AnthropicError as exc:
            raise ModelError(_describe(exc, base)) from None
        finally:
            await stream.close()
        tool_calls = tuple(
            RawToolCall(calls[i][0], calls[i][1], "".join(pieces.get(i, [])) or "{}")
            for i in sorted(calls)
        )
        finish = "tool_calls" if tool_calls else ("length" if stop == "max_tokens" else "stop")
        yield TurnEnd(tool_calls, finish, TokenCount(prompt, completion))
