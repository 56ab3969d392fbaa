"""The model side of the loop: what a model client streams back for one turn.

A ``ModelClient`` takes the conversation (OpenAI chat messages) and the tool list (OpenAI
``tools`` entries) and streams ``ModelEvent`` values: ``ReasoningDelta`` and ``TextDelta`` as
they arrive, then exactly one ``TurnEnd`` with the assembled tool calls (arguments still as the
raw text the model wrote), the finish reason and the token usage the server reported (or None).

A client raises ``ModelError`` (an ``ExternalError``) when the server fails: an HTTP error, a
timeout, a refused connection, a malformed stream. Cancelling the iteration (interrupt) must close
the HTTP stream; clients do it in ``finally``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from vaultpilot.errors import ExternalError

__all__ = [
    "ChatMessage",
    "ModelClient",
    "ModelError",
    "ModelEvent",
    "RawToolCall",
    "ReasoningDelta",
    "TextDelta",
    "TokenCount",
    "TurnEnd",
]

ChatMessage = dict[str, Any]  # OpenAI chat shape: {"role": ..., "content": ..., ...}


class ModelError(ExternalError):
    """The model server failed (HTTP error, timeout, connection refused, broken stream)."""


@dataclass(frozen=True, slots=True)
class TokenCount:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class RawToolCall:
    """One tool call as the model wrote it; ``arguments`` is unparsed JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class TurnEnd:
    tool_calls: tuple[RawToolCall, ...]
    finish_reason: str
    usage: TokenCount | None
    kind: Literal["end"] = "end"


ModelEvent = ReasoningDelta | TextDelta | TurnEnd


class ModelClient(Protocol):
    """Streams one model turn. ``name`` is the model's name as configured."""

    @property
    def name(self) -> str: ...

    def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]
    ) -> AsyncIterator[ModelEvent]: ...
