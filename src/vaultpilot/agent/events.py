"""What an agent run tells its interface: a tagged union of frozen events.

Every event has ``kind`` (a ``Literal``); consumers ``match`` on it and end with ``assert_never``.
``event_to_dict`` gives the JSON shape the server, the conversation store and the snapshot tests
use (``{"kind": ..., fields...}``). The order of a run's events:

    run_started
    context_attached                      when the message @-mentions notes
    per step:
        status ("Thinking (step N)")
        thought* / text_chunk*            streamed as the model writes
        usage                             one per model call (estimated when the server sends none)
        message                           the assistant message added to the history
        per tool call, in the model's order:
            tool_call
            approval_required, approval_resolved     when the policy says "ask" (or "deny")
            tool_result
            message                       the tool message added to the history
    error                                 when the run fails (a model server error, ...)
    run_finished                          always last, with the reason

``message`` events carry each message appended to the conversation history (OpenAI chat shape),
so a store can persist the conversation without knowing the loop.

What a person is shown of a step is described once (``agent.steps``) and travels with the
events: ``tool_call.label`` (``{kind, verb, object, object_is_path}``: ``Edit`` ``Inbox.md``, the
kind picking an icon), ``tool_result.outcome`` (a few words: ``7 found``, ``170 words``) and,
for a vault-tool write that ran, ``tool_result.files`` (``{path, added, removed}`` per file it
changed, ``from`` when it moved, read from the change journal; absent when nothing was written
or no journal records the run). ``run_started.approval_mode`` says when the run asks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from vaultpilot.tools.operations import Kind

__all__ = [
    "AgentEvent",
    "ApprovalMode",
    "ApprovalRequired",
    "ApprovalResolved",
    "ContextAttached",
    "ErrorEvent",
    "FileCount",
    "FinishReason",
    "MessageAdded",
    "RunFinished",
    "RunStarted",
    "Status",
    "StepKind",
    "StepLabel",
    "TextChunk",
    "Thought",
    "ToolCall",
    "ToolResult",
    "ToolResultSource",
    "Usage",
    "event_to_dict",
]

FinishReason = Literal["done", "interrupted", "max_steps", "budget", "error"]
ToolResultSource = Literal["tool", "override", "denied", "invalid", "interrupted"]
StepKind = Kind | Literal["other"]  # an operation's kind (tools.operations), or another tool
# read-only: the vault's rules allow no change; ask: every change asks; auto: the approval rules
# decide (destructive steps ask); auto-approve: every step the rules would ask about runs.
ApprovalMode = Literal["read-only", "ask", "auto", "auto-approve"]


class StepLabel(TypedDict):
    """How a tool call reads: ``verb`` and its ``object`` (``Edit`` ``Inbox.md``)."""

    kind: StepKind
    verb: str
    object: str
    object_is_path: bool  # the object names notes or folders (shown as paths)


# One file a write changed: lines added and removed, and ``from``, the path before a move
# (a Python keyword, hence the functional form).
FileCount = TypedDict(
    "FileCount",
    {"path": str, "added": int, "removed": int, "from": NotRequired[str]},
)


@dataclass(frozen=True, slots=True)
class RunStarted:
    run_id: str
    model: str
    tools: tuple[str, ...]
    max_steps: int
    token_budget: int | None
    approval_mode: ApprovalMode = "auto"
    kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, slots=True)
class ContextAttached:
    """Notes attached with ``@`` mentions, and mentions that named no note (reported, not lost)."""

    notes: tuple[dict[str, Any], ...]  # {"mention", "path", "tokens", "truncated"}
    unknown: tuple[str, ...]
    omitted: tuple[str, ...]  # found, but over the token budget
    kind: Literal["context_attached"] = "context_attached"


@dataclass(frozen=True, slots=True)
class Status:
    message: str
    step: int
    kind: Literal["status"] = "status"


@dataclass(frozen=True, slots=True)
class Thought:
    """Reasoning the model streamed (``reasoning_content``, Anthropic thinking)."""

    text: str
    step: int
    kind: Literal["thought"] = "thought"


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str
    step: int
    kind: Literal["text_chunk"] = "text_chunk"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call, and the run's running total."""

    step: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    run_total_tokens: int
    estimated: bool
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class MessageAdded:
    message: dict[str, Any]
    kind: Literal["message"] = "message"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model made. ``arguments`` is None when they were not a JSON object
    (``raw_arguments`` has the text); ``added`` names arguments the loop supplied (the
    ``expectedVersion`` of a note the agent read); ``label`` is how the call reads to a person
    (``agent.steps``; left out of the JSON when None)."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    step: int
    added: dict[str, Any] = dataclasses.field(default_factory=dict)
    label: StepLabel | None = None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ApprovalRequired:
    """A call waiting for a person. ``diffs`` (``{path, diff, ...}`` per file, from the tool's
    dry run) shows what a note change would write; it is left out of the JSON when empty.
    ``per_file``: the change touches several files and may be approved for some of them (the
    operation's ``per_file`` fact), so a view offers a choice of files."""

    call_id: str
    name: str
    operation: str | None
    arguments: dict[str, Any]
    reason: str
    diffs: tuple[dict[str, Any], ...] = ()
    per_file: bool = False
    kind: Literal["approval_required"] = "approval_required"


@dataclass(frozen=True, slots=True)
class ApprovalResolved:
    call_id: str
    approved: bool
    by: Literal["user", "policy", "override", "nobody"]
    reason: str = ""  # why the person said no, when they said (kept for a reopened run)
    kind: Literal["approval_resolved"] = "approval_resolved"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call returned. ``outcome``: a few words for a person (``agent.steps``); ``files``:
    the files a vault-tool write changed with their line counts (None, and left out of the
    JSON, when it wrote nothing or nothing records what it wrote)."""

    call_id: str
    name: str
    success: bool
    result: dict[str, Any]
    preview: str
    source: ToolResultSource
    duration_ms: float
    outcome: str = ""
    files: tuple[FileCount, ...] | None = None
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A failure that ends the run; ``source`` says whose: the model server, a tool, or ours."""

    message: str
    source: Literal["model", "tool", "internal"]
    kind: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class RunFinished:
    reason: FinishReason
    steps: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    text: str  # the text of the last model turn (the answer when reason is "done")
    message: str  # one sentence for the person: why the run stopped
    kind: Literal["run_finished"] = "run_finished"


AgentEvent = (
    RunStarted
    | ContextAttached
    | Status
    | Thought
    | TextChunk
    | Usage
    | MessageAdded
    | ToolCall
    | ApprovalRequired
    | ApprovalResolved
    | ToolResult
    | ErrorEvent
    | RunFinished
)


_OPTIONAL = frozenset({"label", "files"})


def event_to_dict(event: AgentEvent) -> dict[str, Any]:
    """The JSON shape of an event: ``kind`` first, then the fields in declaration order."""
    out: dict[str, Any] = {"kind": event.kind}
    for f in dataclasses.fields(event):
        if f.name != "kind":
            value = getattr(event, f.name)
            if (f.name == "diffs" and not value) or (f.name in _OPTIONAL and value is None):
                continue  # optional: absent rather than empty
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out
