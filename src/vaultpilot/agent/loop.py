"""The ReAct loop: ``run(agent, message) -> AsyncIterator[AgentEvent]``.

Each step sends the system prompt, the history and the tool list to the model, streams its
thoughts and text as events, then runs the tool calls it made, in its order, and feeds every
result back (a ``tool`` message with the call's ``tool_call_id``). The run ends when the model
answers without calling a tool (``done``), at ``max_steps`` model calls, when the tokens used
reach ``token_budget`` (both checked before each model call), on an interrupt, or on an error.
``run_finished`` is always the last event; the event order is documented in ``events``.

Tool calls, one at a time:

* arguments that are not a JSON object, and unknown tool names, are answered with a failure
  result saying what to do (the valid tool names, the JSON problem) without running anything;
* the ``ApprovalPolicy`` decides: "allow" runs it, "deny" refuses it, "ask" emits
  ``approval_required`` and waits for ``RunControls`` (with no controls, nobody can approve and
  the call is refused); a call the policy allows still asks when the vault's rules say so
  (``RunGuard``: ``mode = "ask"``, an ``ask`` folder, the run's note limit, a change after the
  run read an untrusted note) or when, with no rule deciding it, its dry run would remove many
  of a note's words, counted with what the run's earlier writes removed from it
  (``approvals.drops_words``), unless the policy approves everything
  (``ask --yes``);
* results reach the model with note text between boundary markers (``tools.untrusted``), added
  to tool messages as each request is made; the events and stored messages keep plain results;
* ``RunControls.override`` supplies the result instead of running the tool;
* a per-file approval: when the verdict names the files a person ticked of a multi-file change
  (``RunControls.approve(call_id, files)``, the diffs' paths), the call runs with ``approvedFiles``
  set to them and the tool changes only those (``tools.manage``); ``approvedFiles`` written by the
  model itself is dropped, so only a person chooses it;
* ``NoteVersions`` adds ``expectedVersion`` to writes of notes the agent read, so a note changed
  meanwhile is refused instead of overwritten;
* the tool runs in a worker thread (tools are synchronous; ``VaultTools`` serialises access to
  its SQLite connection).

What a person is shown of each call travels with its events (``agent.steps``; see ``events``).

A ``StepGate`` pauses a run at its next step boundary: before the next model call the loop
emits ``status`` "Paused before step N ..." and waits until the gate is resumed (then ``status``
"Resumed"); an interrupt still ends a paused run at once.

The run drives itself in a task that feeds a queue the generator yields from, so ``interrupt``
can cancel it at any await (model stream, approval wait, tool thread). The caller's ``history``
is never mutated: each message added to the conversation comes out as a ``message`` event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from vaultpilot.agent.approvals import ApprovalPolicy, operation_of, words_question
from vaultpilot.agent.controls import RunControls, Verdict
from vaultpilot.agent.events import (
    AgentEvent,
    ApprovalRequired,
    ApprovalResolved,
    ContextAttached,
    ErrorEvent,
    FinishReason,
    MessageAdded,
    RunFinished,
    RunStarted,
    Status,
    TextChunk,
    Thought,
    ToolCall,
    ToolResult,
    ToolResultSource,
    Usage,
)
from vaultpilot.agent.guard import RunGuard, changed_paths
from vaultpilot.agent.mentions import attach
from vaultpilot.agent.model import (
    ChatMessage,
    ModelClient,
    ModelError,
    ModelEvent,
    RawToolCall,
    TurnEnd,
)
from vaultpilot.agent.results import parse_arguments, preview
from vaultpilot.agent.schemas import tool_entry
from vaultpilot.agent.steps import JournalCounts, approval_mode, describe, outcome
from vaultpilot.agent.toolset import ToolSet, failure, for_run, result_ok
from vaultpilot.agent.vault_tools import VaultTools
from vaultpilot.agent.versions import NoteVersions
from vaultpilot.memory.journal import new_run_id
from vaultpilot.tools import TOOLS
from vaultpilot.tools.registry import call_operation, is_dry_run
from vaultpilot.tools.rules import VaultRules
from vaultpilot.tools.untrusted import mark, seal

__all__ = [
    "PAUSED_PREFIX",
    "Agent",
    "RunLimits",
    "StepGate",
    "VaultAccess",
    "run",
]

PAUSED_PREFIX = "Paused before step"
_VAULT_TOOLS = {t.name: t for t in TOOLS}
# A dry run's diffs, its failure (the call cannot run as asked) and its warnings.
_Preview = tuple[tuple[dict[str, Any], ...], dict[str, Any] | None, list[str]]
_CHOSEN = ("approvedFiles", "approved_files")  # set from a person's answer, never by the model


class VaultAccess(Protocol):
    """What ``@`` mentions need: the vault's note paths (``hidden``: with the notes the rules
    keep from the agent) and a note's text and version as the rules let the model see it; and
    what the vault's asking rules need: the notes a call's names lead to (``RunGuard``)."""

    def note_paths(self, *, hidden: bool = False) -> list[str]: ...

    def read_note(self, path: str) -> tuple[str, str]: ...

    def resolve(self, names: list[str]) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class RunLimits:
    max_steps: int = 20
    token_budget: int | None = 200_000
    attach_budget: int = 6_000  # tokens of @-attached notes per message
    # Seconds a model turn may go without sending anything (text, reasoning, a tool call, its
    # end): a server sending only keep-alive comments never trips the HTTP read timeout.
    quiet: float | None = None


@dataclass(frozen=True, slots=True)
class Agent:
    """Everything a run needs that outlives it."""

    model: ModelClient
    tools: ToolSet
    system_prompt: str
    policy: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    limits: RunLimits = field(default_factory=RunLimits)
    vault: VaultAccess | None = None
    # The vault's rules (their approvals are kept per run by ``RunGuard``) and the token of the
    # boundary markers around note text in tool results (none: results go to the model as is).
    rules: VaultRules = field(default_factory=VaultRules)
    note_token: str = ""


class StepGate:
    """Holds a run at its next step boundary while paused (see the module). Use it from the
    event loop's thread."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def pause(self) -> None:
        self._open.clear()

    def resume(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


_Item = tuple[AgentEvent, "asyncio.Future[None] | None"] | None


class _Run:
    def __init__(
        self,
        agent: Agent,
        message: str,
        history: Sequence[ChatMessage],
        controls: RunControls | None,
        versions: NoteVersions,
        run_id: str,
        queue: asyncio.Queue[_Item],
        gate: StepGate | None = None,
    ) -> None:
        self.agent = agent
        self.gate = gate
        self.message = message
        self.messages: list[ChatMessage] = list(history)
        self.controls = controls
        self.versions = versions
        self.run_id = run_id
        self.queue = queue
        self.step = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.text = ""
        self.streaming: list[str] | None = None  # text of the turn being streamed
        self.open_calls: list[RawToolCall] = []  # announced by the model, no tool message yet
        self.waited = 0.0  # of the call running now, seconds spent waiting for its approval
        # Every change the run makes joins one change set, named by the run id (for undo).
        self.tools = for_run(agent.tools, run_id)
        self.counts = _journal_counts(agent, run_id)
        self.guard = RunGuard(
            agent.rules,
            agent.vault.resolve if agent.vault else None,
            lambda name, arguments: changed_paths(
                self.tools.call(name, {**arguments, "dryRun": True})
            ),
        )
        # Words the run's unasked writes removed, per note: many small cuts ask like one large.
        self.dropped: dict[str, int] = {}
        self.uncounted: dict[str, int] = {}  # the running call's, counted once it succeeds
        self.marked: dict[str, str] = {}  # a tool message's content -> its marked form, once
        specs = self.tools.specs()
        self.names = [s.name for s in specs]
        self.tool_list = [tool_entry(s.name, s.description, s.parameters) for s in specs]

    # ----- output
    def emit(self, event: AgentEvent) -> None:
        self.queue.put_nowait((event, None))

    async def emit_and_wait(self, event: AgentEvent) -> None:
        """Emit, and return once the consumer has handled the event (asked for the next)."""
        ack: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((event, ack))
        await ack

    def add(self, message: ChatMessage) -> None:
        self.messages.append(message)
        self.emit(MessageAdded(message))

    def finish(self, reason: FinishReason, message: str) -> None:
        total = self.prompt_tokens + self.completion_tokens
        self.emit(
            RunFinished(
                reason,
                self.step,
                self.prompt_tokens,
                self.completion_tokens,
                total,
                self.text,
                message,
            )
        )

    # ----- the run
    async def drive(self) -> None:
        try:
            await self._steps()
        except asyncio.CancelledError:
            self._close_interrupted()
            self.finish("interrupted", "Interrupted.")
        except ModelError as exc:
            self._close_open_calls("Not run: the model server failed.")
            self.emit(ErrorEvent(exc.message, "model"))
            self.finish("error", exc.message)
        except Exception as exc:  # a bug: end the run with a readable error, not a hang
            message = f"The agent loop stopped on an internal error: {type(exc).__name__}: {exc}"
            self._close_open_calls("Not run: the agent loop failed.")
            self.emit(ErrorEvent(message, "internal"))
            self.finish("error", message)
        finally:
            self.queue.put_nowait(None)

    def start(self) -> None:
        limits = self.agent.limits
        self.emit(
            RunStarted(
                self.run_id,
                self.agent.model.name,
                tuple(self.names),
                limits.max_steps,
                limits.token_budget,
                approval_mode(self.agent.policy, self.agent.rules),
            )
        )

    def cancelled_before_start(self, task: asyncio.Task[None]) -> None:
        # A task cancelled before its first step never enters drive(): finish here.
        if task.cancelled():
            self.finish("interrupted", "Interrupted.")
            self.queue.put_nowait(None)

    async def _steps(self) -> None:
        limits = self.agent.limits
        self.add({"role": "user", "content": await self._with_attachments()})
        while True:
            used = self.prompt_tokens + self.completion_tokens
            if self.step >= limits.max_steps:
                return self.finish(
                    "max_steps",
                    f"Stopped after {self.step} steps, the most a run may take (max_steps). "
                    "Ask again to let the agent continue.",
                )
            if limits.token_budget is not None and used >= limits.token_budget:
                return self.finish(
                    "budget",
                    f"Stopped: the run used {used:,} tokens, reaching its budget of "
                    f"{limits.token_budget:,} (token_budget).",
                )
            if self.gate is not None and self.gate.paused:
                self.emit(
                    Status(
                        f"{PAUSED_PREFIX} {self.step + 1}: send ResumeAgent to continue.",
                        self.step,
                    )
                )
                await self.gate.wait()
                self.emit(Status("Resumed", self.step))
            self.step += 1
            end = await self._model_turn()
            if not end.tool_calls:
                steps = "1 step" if self.step == 1 else f"{self.step} steps"
                return self.finish("done", f"Done in {steps}.")
            for call in end.tool_calls:
                await self._tool_call(call)

    async def _with_attachments(self) -> str:
        vault = self.agent.vault
        if vault is None or "@" not in self.message:
            return self.message

        def gather() -> Any:
            return attach(
                self.message,
                vault.note_paths(hidden=True),  # a mention of a hidden note is refused, saying so
                vault.read_note,
                budget_tokens=self.agent.limits.attach_budget,
            )

        found = await asyncio.to_thread(gather)
        for note in found.notes:
            self.versions.record(note.path, note.version)
        self.guard.saw(n.path for n in found.notes)  # an attached clipping is a read like any
        if found.notes or found.unknown or found.omitted:
            notes = tuple(
                {"mention": n.mention, "path": n.path, "tokens": n.tokens, "truncated": n.truncated}
                for n in found.notes
            )
            self.emit(ContextAttached(notes, found.unknown, found.omitted))
        return f"{self.message}\n\n{found.section}" if found.section else self.message

    async def _model_turn(self) -> TurnEnd:
        self.emit(Status(f"Thinking (step {self.step})", self.step))
        request = [
            {"role": "system", "content": self.agent.system_prompt},
            *(self._for_model(m) for m in self.messages),
        ]
        parts: list[str] = []
        self.streaming = parts
        end: TurnEnd | None = None
        async for event in _within(
            self.agent.model.stream(request, self.tool_list), self.agent.limits.quiet
        ):
            if event.kind == "text":
                parts.append(event.text)
                self.emit(TextChunk(event.text, self.step))
            elif event.kind == "reasoning":
                self.emit(Thought(event.text, self.step))
            else:
                end = event
        self.streaming = None
        if end is None:
            raise ModelError("The model's stream ended without finishing its turn.")
        self.text = "".join(parts)
        self._count(end, request)
        message: ChatMessage = {"role": "assistant", "content": self.text or None}
        if end.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in end.tool_calls
            ]
            self.open_calls = list(end.tool_calls)
        self.add(message)
        return end

    def _count(self, end: TurnEnd, request: list[ChatMessage]) -> None:
        if end.usage is not None:
            prompt, completion = end.usage.prompt_tokens, end.usage.completion_tokens
            estimated = False
        else:  # the server reported none: about four characters a token
            sent = json.dumps(request, ensure_ascii=False) + json.dumps(self.tool_list)
            written = self.text + "".join(c.name + c.arguments for c in end.tool_calls)
            prompt, completion, estimated = len(sent) // 4, (len(written) + 3) // 4, True
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        total = self.prompt_tokens + self.completion_tokens
        self.emit(Usage(self.step, prompt, completion, prompt + completion, total, estimated))

    async def _tool_call(self, call: RawToolCall) -> None:
        arguments, problem = parse_arguments(call.name, call.arguments)
        if call.name not in self.names:
            problem = f"Unknown tool '{call.name}'. Valid tools: {', '.join(self.names)}."
        added = {}
        if arguments is not None and call.name in _VAULT_TOOLS:
            arguments = {k: v for k, v in arguments.items() if k not in _CHOSEN}
        if problem is None and arguments is not None:
            added = self.versions.precondition(call.name, arguments)
        said = describe(call.name, arguments)
        event = ToolCall(call.id, call.name, arguments, call.arguments, self.step, added, said)
        await self.emit_and_wait(event)
        started = time.perf_counter()
        self.waited = 0.0  # seconds spent waiting for a person: not the step's own time
        source: ToolResultSource
        if problem is not None or arguments is None:
            result, source = failure(problem or "Invalid arguments."), "invalid"
        else:
            result, source = await self._decide_and_run(call, {**arguments, **added})
        ok = result_ok(result)
        if ok and source in ("tool", "override") and arguments is not None:
            self.versions.observe(call.name, {**arguments, **added}, result)
        if source == "tool" and arguments is not None:
            self.guard.observe(call.name, arguments, result)
        duration = round((time.perf_counter() - started - self.waited) * 1000, 2)
        files = None  # what a write changed, from the journal it was recorded in
        if self.counts and source == "tool" and self._wrote(call.name, arguments or {}):
            files = await asyncio.to_thread(self.counts.take)
        self.emit(
            ToolResult(
                call.id,
                call.name,
                ok,
                result,
                preview(result),
                source,
                duration,
                outcome(result, files),
                tuple(files) if files is not None else None,
            )
        )
        self._tool_message(call.id, result)

    @staticmethod
    def _wrote(name: str, arguments: dict[str, Any]) -> bool:
        """A vault-tool call whose operation writes, not as a dry run."""
        op = call_operation(name, arguments)
        return op is not None and op.writes and not is_dry_run(arguments)

    async def _decide_and_run(
        self, call: RawToolCall, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], ToolResultSource]:
        controls = self.controls
        operation = operation_of(arguments)
        what = f"{call.name} {operation}" if operation else call.name
        override = controls.take_override(call.id) if controls else None
        if override is not None:
            return override, "override"
        dry = is_dry_run(arguments)
        decision = self.agent.policy.decide(call.name, operation, dry_run=dry)
        ruled = None  # why the vault's rules, or the words it drops, ask when the policy would not
        seen: _Preview | None = None  # the dry run that found the words it drops, made once
        if decision == "allow" and not self.agent.policy.auto_approve:
            # In a thread: resolving a title may look it up in the index.
            ruled = await asyncio.to_thread(self.guard.needs_approval, call.name, arguments)
            if ruled is None:
                ruled, seen = await self._drops(call.name, arguments, operation)
            decision = "ask" if ruled else decision
        if decision == "deny":
            self.emit(ApprovalResolved(call.id, False, "policy"))
            return failure(
                f"Refused: the approval policy does not allow {what}. Don't retry it; tell the "
                "user what you wanted to do."
            ), "denied"
        if decision == "ask":
            reason = (  # a sentence for the person, as the policy's own reasons are
                f"{ruled[:1].upper()}{ruled[1:]}."
                if ruled
                else self.agent.policy.reason(call.name, operation)
            )
            answered = await self._ask(call, arguments, operation, what, reason, seen)
            if isinstance(answered, tuple):
                return answered
            arguments = answered
        if controls:
            controls.started(call.id)
        self.emit(Status(f"Running {call.name}", self.step))
        try:
            result = await asyncio.to_thread(self.tools.call, call.name, arguments)
            if result_ok(result):  # a failed call removed nothing
                self.dropped.update(self.uncounted)
        finally:
            self.uncounted = {}
        return result, "tool"

    async def _ask(
        self,
        call: RawToolCall,
        arguments: dict[str, Any],
        operation: str | None,
        what: str,
        reason: str,
        seen: _Preview | None = None,
    ) -> dict[str, Any] | tuple[dict[str, Any], ToolResultSource]:
        """Put the call to the person: the arguments to run it with (the files they chose), or
        the result to give the model instead (refused, overridden, or it cannot run)."""
        controls = self.controls
        diffs, cannot, warned = seen or await self._preview(call.name, arguments)
        if cannot is not None:  # it would fail as asked: the person is not asked for it
            return cannot, "tool"
        if warned:  # what the change would do beside its diffs (links left unresolved, ...)
            reason = " ".join([reason, *warned])
        per_file = _per_file(call.name, arguments, diffs)
        self.emit(
            ApprovalRequired(call.id, call.name, operation, arguments, reason, diffs, per_file)
        )
        asked = time.perf_counter()
        verdict = await controls.verdict(call.id) if controls else Verdict(False)
        self.waited += time.perf_counter() - asked
        if verdict.override is not None:
            self.emit(ApprovalResolved(call.id, True, "override"))
            return verdict.override, "override"
        why = "" if verdict.approved else (verdict.reason or "")
        by: Literal["user", "nobody"] = "user" if controls and not verdict.nobody else "nobody"
        self.emit(ApprovalResolved(call.id, verdict.approved, by, why))
        because = f" ({verdict.reason})" if verdict.reason else ""
        if not verdict.approved and by == "nobody":
            return failure(
                f"Not run: {what} needs the user's approval and nobody could give it"
                f"{because}. Don't retry it; tell the user what you would have done."
            ), "denied"
        if not verdict.approved:
            return failure(
                f"The user refused {what}{because}. Don't retry it; say what you would have "
                "done, or ask the user how to go on."
            ), "denied"
        self.guard.approved(call.name, arguments)
        for diff in diffs:  # the person saw these notes' change: their count starts again
            self.dropped.pop(str(diff.get("path") or ""), None)
        override = controls.take_override(call.id) if controls else None
        if override is not None:
            return override, "override"
        if diffs and (await self._preview(call.name, arguments))[0] != diffs:
            # The person approved the change they saw: a note edited meanwhile (in Obsidian)
            # would make it another one.
            return failure(
                f"Not run: the notes {what} changes were edited while the user was asked, so "
                "the approved change is no longer the one it would make. Nothing was changed; "
                "read the notes again and redo the call."
            ), "tool"
        if verdict.files is not None and call.name in _VAULT_TOOLS:
            return {**arguments, "approvedFiles": list(verdict.files)}
        return arguments

    async def _drops(
        self, name: str, arguments: dict[str, Any], operation: str | None
    ) -> tuple[str | None, _Preview | None]:
        """Why a write the policy lets run asks anyway: the words it would remove from a note
        (``approvals.drops_words``), with the dry run that found them; None for a call that
        cannot drop text, or drops little."""
        op = call_operation(name, arguments)
        if op is None or not op.drops_text or is_dry_run(arguments):
            return None, None
        seen = await self._preview(name, arguments)
        why, total = words_question(self.agent.policy, name, operation, seen[0], self.dropped)
        # It runs unasked: once it has, its cuts count toward the next call's question.
        self.uncounted = total if why is None else {}
        return why, seen

    async def _preview(self, name: str, arguments: dict[str, Any]) -> _Preview:
        """The diffs a note change would write, from the tool's dry run (nothing is written),
        the dry run's failure when it failed (the call cannot run as asked, so there is nothing
        to approve), and its warnings (a delete's notes left with unresolved links). Nothing of
        the three when the operation has no dry run."""
        op = call_operation(name, arguments)
        if op is None or not op.dry_run or is_dry_run(arguments):
            return (), None, []
        dry = {**arguments, "dryRun": True}
        result = await asyncio.to_thread(self.tools.call, name, dry)
        if not result_ok(result):
            return (), result, []
        found = result.get("diffs")
        diffs = tuple(d for d in found if isinstance(d, dict)) if isinstance(found, list) else ()
        warned = result.get("warnings")
        notes = [w for w in warned if isinstance(w, str)] if isinstance(warned, list) else []
        return diffs, None, notes

    def _for_model(self, message: ChatMessage) -> ChatMessage:
        """A tool message with its note text between this agent's boundary markers (stored
        messages stay plain, so a conversation continued later is marked with the new token).
        Each message is marked once per run, not again at every step."""
        token = self.agent.note_token
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return {**message, "content": seal(content, token)}  # its attached notes' markers
        if not token or message.get("role") != "tool" or not isinstance(content, str):
            return message
        marked = self.marked.get(content)
        if marked is None:
            try:
                marked = json.dumps(mark(json.loads(content), token), ensure_ascii=False)
            except json.JSONDecodeError:
                marked = content
            self.marked[content] = marked
        return {**message, "content": marked}

    def _tool_message(self, call_id: str, result: dict[str, Any]) -> None:
        self.open_calls = [c for c in self.open_calls if c.id != call_id]
        content = json.dumps(result, ensure_ascii=False)
        self.add({"role": "tool", "tool_call_id": call_id, "content": content})

    def _close_open_calls(self, why: str) -> None:
        for call in list(self.open_calls):
            self._tool_message(call.id, failure(why))

    def _close_interrupted(self) -> None:
        if self.streaming is not None:  # keep what the model wrote before the interrupt
            partial = "".join(self.streaming)
            self.streaming = None
            self.text = partial
            if partial:
                self.add({"role": "assistant", "content": partial})
        self._close_open_calls(
            "Interrupted by the user: this call did not run, or its outcome is unknown. "
            "Check the vault before retrying."
        )


def _journal_counts(agent: Agent, run_id: str) -> JournalCounts | None:
    """What each write of the run changed, read from its change set (the run's id) in the vault
    tools' change journal; None when no journal records the run."""
    vault = agent.vault
    if not isinstance(vault, VaultTools) or vault.ctx.journal is None:
        return None
    return JournalCounts(vault.ctx.journal, str(vault.ctx.root), run_id)


async def run(
    agent: Agent,
    message: str,
    *,
    history: Sequence[ChatMessage] = (),
    controls: RunControls | None = None,
    versions: NoteVersions | None = None,
    run_id: str | None = None,
    gate: StepGate | None = None,
) -> AsyncIterator[AgentEvent]:
    """Run the agent on ``message`` after ``history``; yields every event of the run.
    ``gate`` (optional) pauses it between steps."""
    queue: asyncio.Queue[_Item] = asyncio.Queue()
    state = _Run(
        agent,
        message,
        history,
        controls,
        versions if versions is not None else NoteVersions(),
        run_id or new_run_id(),
        queue,
        gate,
    )
    state.start()
    task = asyncio.create_task(state.drive())
    task.add_done_callback(state.cancelled_before_start)
    if controls is not None:
        controls.bind(task)
    try:
        while True:
            item = await queue.get()
            if item is None:
                break
            event, ack = item
            yield event
            if ack is not None and not ack.done():
                ack.set_result(None)
    finally:
        if not task.done():
            task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def _within(
    events: AsyncIterator[ModelEvent], quiet: float | None
) -> AsyncIterator[ModelEvent]:
    """The model's events, failing with ``ModelError`` when ``quiet`` seconds pass without one
    (the stream is closed either way)."""
    iterator = aiter(events)
    try:
        while True:
            try:
                async with asyncio.timeout(quiet):
                    event = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ModelError(
                    f"The model server sent nothing for {quiet:g} s (its stream stayed open "
                    "with no text); stopped waiting. Try again, or raise `timeout` in the "
                    "config (`vaultpilot config` shows it)."
                ) from None
            yield event
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def _per_file(name: str, arguments: dict[str, Any], diffs: tuple[dict[str, Any], ...]) -> bool:
    """Whether a person may approve part of the change: its operation can be applied file by
    file and the preview names more than one file."""
    op = call_operation(name, arguments)
    paths = {d.get("path") for d in diffs if d.get("path")}
    return op is not None and op.per_file and len(paths) > 1
