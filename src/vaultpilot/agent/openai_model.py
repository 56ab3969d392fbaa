"""A ``ModelClient`` on the OpenAI Chat Completions wire, through the official ``openai`` SDK.

Works with any OpenAI-compatible server through the client's ``base_url`` (OpenAI, Ollama,
LM Studio, vLLM, llama.cpp server). Each turn is one streamed ``chat.completions.create`` call with
``tools`` and ``tool_choice: "auto"`` (both left out when there are no tools) and
``stream_options.include_usage`` so the server reports tokens.

Streaming rules it follows (as real servers send them):

* tool calls arrive as deltas keyed by ``index``: the first carries ``id`` and ``function.name``,
  later ones pieces of ``function.arguments``. Servers that omit ``index`` or ``id`` (some local
  ones) get the position in the turn and a generated ``call_N`` id.
* reasoning arrives as ``delta.reasoning_content`` (DeepSeek, vLLM, LM Studio) or
  ``delta.reasoning`` (Ollama, OpenRouter); both become ``ReasoningDelta``.
* SDK errors become ``ModelError`` with one readable sentence; the stream is closed on every
  exit, including cancellation (interrupt).

The ``AsyncOpenAI`` client is passed in (I/O at the edges); ``providers.make_model`` builds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

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

__all__ = ["OpenAIChatModel", "describe_openai_error"]


def describe_openai_error(exc: openai.OpenAIError, base_url: str) -> str:
    """One sentence a person can act on, for an SDK error."""
    if isinstance(exc, openai.APITimeoutError):
        return f"The model server at {base_url} did not answer in time (timeout)."
    if isinstance(exc, openai.APIConnectionError):
        return (
            f"Could not connect to the model server at {base_url}. Is it running, and is "
            "the base URL right (`vaultpilot config` shows it)?"
        )
    if isinstance(exc, openai.APIStatusError):
        detail = _error_detail(exc)
        hint = ""
        if exc.status_code in (401, 403):
            hint = " Check the API key (`vaultpilot config` shows where it comes from)."
        elif exc.status_code == 404:
            hint = " Check the model name and the base URL."
        return f"The model server answered HTTP {exc.status_code}: {detail}.{hint}"
    return f"The model server's reply could not be read: {exc}."


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"]).rstrip(".")
        if isinstance(inner, str):
            return inner.rstrip(".")
    return str(exc.message).rstrip(".")


@dataclass(slots=True)
class _Pending:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _reasoning(delta: Any) -> str | None:
    extra = getattr(delta, "model_extra", None) or {}
    for name in ("reasoning_content", "reasoning"):
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class OpenAIChatModel:
    """Streams Chat Completions turns from ``client`` for ``model``."""

    client: openai.AsyncOpenAI
    model: str
    temperature: float | None = None
    extra_body: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.model

    def request_body(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> AsyncIterator[ModelEvent]:
        body = self.request_body(messages, tools)
        base = str(self.client.base_url)
        try:
            stream = await self.client.chat.completions.create(**body, extra_body=self.extra_body)
        except openai.OpenAIError as exc:
            raise ModelError(describe_openai_error(exc, base)) from None
        pending: dict[int, _Pending] = {}
        finish = "stop"
        usage: TokenCount | None = None
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = TokenCount(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                for choice in chunk.choices:
                    delta = choice.delta
                    reasoning = _reasoning(delta)
                    if reasoning:
                        yield ReasoningDelta(reasoning)
                    if delta.content:
                        yield TextDelta(delta.content)
                    _gather_calls(pending, delta.tool_calls or ())
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.OpenAIError as exc:
            raise ModelError(describe_openai_error(exc, base)) from None
        finally:
            await stream.close()
        calls = tuple(
            RawToolCall(p.id or f"call_{i}", p.name, "".join(p.arguments))
            for i, p in sorted(pending.items())
        )
        if calls and finish == "stop":  # some servers say "stop" even when they call tools
            finish = "tool_calls"
        yield TurnEnd(calls, finish, usage)


def _gather_calls(pending: dict[int, _Pending], parts: Sequence[Any]) -> None:
    """Add a chunk's tool-call pieces to the calls being assembled (by their ``index``)."""
    for position, part in enumerate(parts):
        index = getattr(part, "index", None)
        slot = pending.setdefault(position if index is None else index, _Pending())
        if part.id:
            slot.id = part.id
        if part.function is not None:
            if part.function.name:
                slot.name += part.function.name
            if part.function.arguments:
                slot.arguments.append(part.function.arguments)
