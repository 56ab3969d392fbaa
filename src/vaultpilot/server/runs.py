"""Agent runs the server starts and steers: StartAgent, InterruptAgent, ToolOverride, approvals.

Which agent runs a ``StartAgent``:

* **external, spawned**: ``[server.agent] command`` is set. The server starts that program in the
  vault's root with a scrubbed environment plus ``VAULTPILOT_API_KEY`` (the key),
  ``VAULTPILOT_SERVER_URL``, ``VAULTPILOT_VAULT_ID``, ``VAULTPILOT_RUN_ID`` and
  ``VAULTPILOT_GOAL``; the program calls back over ``/rpc`` or ``/ws``. The StartAgent command is
  also pushed to ``agent`` subscribers.
* **external, subscribed**: no command, but a socket subscribed with role ``agent``: the command
  is pushed to it.
* **built-in**: otherwise, the ReAct loop of ``vaultpilot.agent`` with the model, approval rules,
  limits and instructions of the agent configuration (``vaultpilot.agent.config``) and the three
  vault tools on a private connection to the vault's index. Every event is published
  to every subscriber as ``{type: "event", runId, vaultId, event, time}`` (``time``: seconds
  since the epoch, when the event happened).

A built-in run belongs to a conversation stored in ``memory.db`` (the same store as
``vaultpilot chat``, keyed by the vault's folder): a new one titled after the goal, or the one
StartAgent names with ``conversationId`` (its history goes to the model first). ``conversations``
lists a vault's, marking those with a run going.

``InterruptAgent`` with ``force`` stops a built-in run at once; without it the run pauses at its
next step boundary (``loop.StepGate``) until ``ResumeAgent``. Both are forwarded to an external
agent. Every frame of a built-in run is kept by the hub while the run goes (``Hub.open_run``), so a
client that connects mid-run receives it.

One run per vault at a time (a second StartAgent is refused until the first ends). An external
run ends when its agent reports a final status (``done``, ``error``, ``stopped``, ...), its
process exits, or it is interrupted with ``force``.

``Runs`` tracks, per run, the calls announced and not yet answered (for ToolOverride), the calls
waiting for approval (for ApproveToolCall), the notes the run named (``activeFiles``) and the
client that started it: a run started over plain HTTP (a non-interactive client) has its steps
approved only from a WebSocket client, never over HTTP; a run started from a socket may be
approved from that socket too (see ``approvals`` for why).

An approval of a multi-file change (``ApproveToolCall`` with ``files``) may name a subset of the
files the approval event listed (its diffs' paths): the run's controls hand the subset to the loop
(``RunControls.approve(call_id, files)``) and the tool changes only those files; ticking none is a
refusal. A file not in the change, or a subset of an operation applied whole (its facts say not
``per_file``), is refused with the list of the change's files, and the call keeps waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vaultpilot.agent.approvals import Approvals
from vaultpilot.agent.build import build_agent
from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.controls import RunControls
from vaultpilot.agent.conversations import (
    Conversation,
    get_conversation,
    list_conversations,
    new_conversation,
    run_conversation,
)
from vaultpilot.agent.events import AgentEvent, event_to_dict
from vaultpilot.agent.loop import Agent, StepGate
from vaultpilot.agent.model import ModelClient
from vaultpilot.agent.vault_tools import VaultTools
from vaultpilot.errors import (
    InvalidArgumentError,
    NotFoundError,
    RequestError,
    SetupError,
    map_os_errors,
)
from vaultpilot.memory.db import connect as connect_memory
from vaultpilot.memory.journal import new_run_id
from vaultpilot.server.approvals import approver_problem
from vaultpilot.server.keyfile import KEY_ENV
from vaultpilot.server.settings import ServerSettings, ShellPolicy
from vaultpilot.server.shell import scrubbed_env
from vaultpilot.server.vaults import VaultHandle
from vaultpilot.server.ws import Hub, Subscriber
from vaultpilot.tools import TOOLS
from vaultpilot.tools.registry import call_operation

__all__ = ["FINAL_STATUSES", "SERVER_URL_ENV", "RunRecord", "Runs"]

SERVER_URL_ENV = "VAULTPILOT_SERVER_URL"
FINAL_STATUSES = frozenset(
    {"done", "completed", "finished", "error", "failed", "stopped", "interrupted", "idle"}
)
_VAULT_TOOLS = {t.name: t for t in TOOLS}
_AGENT_ADVICE = "Check [server.agent] command in the config file."


def named_files(name: str, arguments: dict[str, Any] | None) -> list[str]:
    """The notes and folders a vault-tool call names (none for other tools)."""
    tool = _VAULT_TOOLS.get(name)
    return tool.files(arguments) if tool is not None else []


def changed_files(name: str, arguments: dict[str, Any] | None) -> list[str]:
    """The notes and folders a call would change (for per-file approval)."""
    op = call_operation(name, arguments)
    return named_files(name, arguments) if op is not None and op.writes else []


@dataclass(slots=True)
class RunRecord:
    run_id: str
    vault_id: str
    goal: str
    agent: Literal["builtin", "external"]
    controls: RunControls | None = None
    task: asyncio.Task[None] | None = None
    child: asyncio.subprocess.Process | None = None
    pending: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    awaiting: set[str] = field(default_factory=set)  # call ids waiting for approval
    files: list[str] = field(default_factory=list)
    active: bool = True
    started_by: Subscriber | None = None  # the socket that sent StartAgent; None: over HTTP
    conversation_id: str | None = None
    gate: StepGate | None = None
    approval_files: dict[str, list[str]] = field(default_factory=dict)  # call id -> paths
    per_file: set[str] = field(default_factory=set)  # calls a subset of files may be approved of

    def note_files(self, paths: list[str]) -> None:
        self.files.extend(p for p in dict.fromkeys(paths) if p and p not in self.files)


class Runs:
    """Every run of one server, the active ones and the last one per vault."""

    def __init__(
        self,
        *,
        settings: ServerSettings,
        hub: Hub,
        key: Callable[[], str],
        model: ModelClient | None,
        config: AgentConfig | None = None,
        memory_path: Path | None = None,
    ) -> None:
        self._settings = settings
        self._memory_path = memory_path
        self._memory: sqlite3.Connection | None = None
        self._hub = hub
        self._key = key
        self._model = model
        self._config = config or AgentConfig()
        self._no_model = (
            "No model is configured for the built-in agent (see `vaultpilot config`), and no "
            "external agent is connected (a WebSocket that sends Subscribe with role 'agent')."
        )
        self._by_vault: dict[str, RunRecord] = {}  # the latest run of each vault
        # The [approvals] rules, read again when the config file changes: the vault tool calls
        # of /rpc and /ws clients are held to them (``server.approvals.hold_to_rules``).
        self.approvals = Approvals.read(
            settings.config_path, config.approvals if config is not None else None
        )

    def set_model(self, model: ModelClient | None, config: AgentConfig, problem: str = "") -> None:
        """The built-in agent's model and settings (made at start-up from the agent config);
        ``problem`` says why there is no model, for StartAgent to report."""
        self._model = model
        self._config = config
        if problem:
            self._no_model = problem

    # ----- queries
    @property
    def config(self) -> AgentConfig:
        """The built-in agent's settings (its instructions join every system prompt)."""
        return self._config

    @property
    def model_name(self) -> str | None:
        """What answers StartAgent: the built-in model's name, an external agent, or None."""
        if self._settings.agent.command:
            return f"external agent ({Path(self._settings.agent.command[0]).name})"
        return self._model.name if self._model is not None else None

    def _memory_conn(self) -> sqlite3.Connection:
        # Opened on first use, on the event loop's thread, which every run records from.
        if self._memory is None:
            if self._memory_path is None:
                raise SetupError("This server keeps no conversations (no memory database).")
            self._memory = connect_memory(self._memory_path)
        return self._memory

    def conversations(self, vault: VaultHandle, *, limit: int = 50) -> list[Conversation]:
        """The vault's stored conversations, the latest first."""
        return list_conversations(self._memory_conn(), vault=str(vault.root), limit=limit)

    def running_conversations(self) -> set[str]:
        return {r.conversation_id for r in self.active() if r.conversation_id}

    def latest(self, vault_id: str) -> RunRecord | None:
        return self._by_vault.get(vault_id)

    def vault_of(self, run_id: str) -> str | None:
        """The vault of a run this server still knows (the latest per vault), else None."""
        return next((r.vault_id for r in self._by_vault.values() if r.run_id == run_id), None)

    def active(self) -> list[RunRecord]:
        return [r for r in self._by_vault.values() if r.active]

    # ----- StartAgent
    async def start(
        self,
        vault: VaultHandle,
        goal: str,
        *,
        started_by: Subscriber | None = None,
        conversation_id: str | None = None,
    ) -> RunRecord:
        current = self._by_vault.get(vault.vault_id)
        if current is not None and current.active:
            raise RequestError(
                f"An agent run ({current.run_id}) is already working on vault "
                f"'{vault.vault_id}'. Wait for it to finish or send InterruptAgent first."
            )
        run_id = new_run_id()
        if self._settings.agent.command or self._hub.count("agent"):
            record = RunRecord(run_id, vault.vault_id, goal, "external", started_by=started_by)
            self._by_vault[vault.vault_id] = record
            self._hub.publish(
                {
                    "type": "command",
                    "id": run_id,
                    "commandName": "StartAgent",
                    "arguments": {
                        "goal": goal,
                        "vaultId": vault.vault_id,
                        "runId": run_id,
                        **({"conversationId": conversation_id} if conversation_id else {}),
                    },
                },
                role="agent",
            )
            if self._settings.agent.command:
                await self._spawn(record, vault)
            return record
        if self._model is None:
            raise SetupError(self._no_model)
        conv = self._conversation(vault, goal, conversation_id, self._model.name)
        agent = await asyncio.to_thread(self._build_agent, vault, self._model)
        record = RunRecord(
            run_id,
            vault.vault_id,
            goal,
            "builtin",
            controls=RunControls(),
            started_by=started_by,
            conversation_id=conv,
            gate=StepGate(),
        )
        self._by_vault[vault.vault_id] = record
        self._hub.open_run(run_id)
        record.task = asyncio.create_task(self._drive(record, agent, vault))
        return record

    def _conversation(
        self, vault: VaultHandle, goal: str, conversation_id: str | None, model: str
    ) -> str:
        conn = self._memory_conn()
        if conversation_id is None:
            return new_conversation(conn, title=goal, vault=str(vault.root), model=model).id
        conv = get_conversation(conn, conversation_id)
        if conv.vault != str(vault.root):
            raise NotFoundError(
                f"Conversation '{conversation_id}' belongs to another vault; continue it in its "
                f"own vault, or leave conversationId out to start a new conversation in "
                f"'{vault.vault_id}'."
            )
        return conv.id

    def _build_agent(self, vault: VaultHandle, model: ModelClient) -> Agent:
        ctx = vault.open_run_context()
        data = self._memory_path.parent if self._memory_path is not None else None
        try:
            return build_agent(ctx, self._config, model, data_root=data)
        except BaseException:
            ctx.conn.close()
            raise

    async def _drive(self, record: RunRecord, agent: Agent, vault: VaultHandle) -> None:
        assert record.conversation_id is not None
        try:
            async for event in run_conversation(
                self._memory_conn(),
                record.conversation_id,
                agent,
                record.goal,
                controls=record.controls,
                run_id=record.run_id,
                gate=record.gate,
            ):
                self._track(record, event)
                if event.kind == "tool_result":
                    vault.changed()  # a write synced the run's index: embed what changed
                self._hub.publish(
                    {
                        "type": "event",
                        "runId": record.run_id,
                        "vaultId": record.vault_id,
                        "event": event_to_dict(event),
                        "time": time.time(),  # when it happened: a reopened view times the run
                    }
                )
        finally:
            record.active = False
            record.pending.clear()
            record.awaiting.clear()
            record.approval_files.clear()
            self._hub.close_run(record.run_id)
            if isinstance(agent.vault, VaultTools):
                await asyncio.to_thread(agent.vault.ctx.conn.close)

    @staticmethod
    def _track(record: RunRecord, event: AgentEvent) -> None:
        match event.kind:
            case "tool_call":
                record.pending[event.call_id] = event.name
                record.note_files(named_files(event.name, event.arguments))
            case "approval_required":
                record.awaiting.add(event.call_id)
                shown = [str(d.get("path")) for d in event.diffs if d.get("path")]
                record.approval_files[event.call_id] = list(dict.fromkeys(shown)) or changed_files(
                    event.name, event.arguments
                )
                if event.per_file:
                    record.per_file.add(event.call_id)
            case "approval_resolved":
                record.awaiting.discard(event.call_id)
                record.approval_files.pop(event.call_id, None)
                record.per_file.discard(event.call_id)
            case "tool_result":
                record.pending.pop(event.call_id, None)
                record.awaiting.discard(event.call_id)
            case "context_attached":
                record.note_files([str(note.get("path") or "") for note in event.notes])
            case _:
                pass

    # ----- external agents
    def _server_url(self) -> str:
        host = self._settings.host
        if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self._settings.port}"

    async def _spawn(self, record: RunRecord, vault: VaultHandle) -> None:
        env = scrubbed_env(ShellPolicy())
        env.update(
            {
                KEY_ENV: self._key(),
                SERVER_URL_ENV: self._server_url(),
                "VAULTPILOT_VAULT_ID": vault.vault_id,
                "VAULTPILOT_RUN_ID": record.run_id,
                "VAULTPILOT_GOAL": record.goal,
            }
        )
        command = self._settings.agent.command
        try:
            with map_os_errors(
                command[0], "start the agent program", {OSError: SetupError}, advice=_AGENT_ADVICE
            ):
                record.child = await asyncio.create_subprocess_exec(
                    *command,
                    cwd=vault.root,
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    start_new_session=True,
                )
        except SetupError:
            record.active = False  # it never started: the vault is free for another run
            raise
        record.task = asyncio.create_task(self._watch(record, record.child))

    async def _watch(self, record: RunRecord, child: asyncio.subprocess.Process) -> None:
        code = await child.wait()
        record.active = False
        self._hub.publish(
            {
                "type": "status",
                "vaultId": record.vault_id,
                "runId": record.run_id,
                "status": "exited",
                "message": f"The agent process exited with code {code}.",
                "source": "server",
            }
        )

    def finish_external(self, vault_id: str, status: str) -> None:
        """An external agent reported ``status``; a final one ends its run."""
        record = self._by_vault.get(vault_id)
        if record and record.agent == "external" and status.lower() in FINAL_STATUSES:
            record.active = False

    # ----- InterruptAgent, ToolOverride, approvals
    def interrupt(self, *, force: bool, run_id: str | None, vault_id: str | None) -> list[str]:
        targets = [
            r
            for r in self.active()
            if (run_id is None or r.run_id == run_id)
            and (vault_id is None or r.vault_id == vault_id)
        ]
        if not targets:
            running = ", ".join(f"{r.run_id} ({r.vault_id})" for r in self.active()) or "none"
            raise NotFoundError(f"No matching agent run is active (active runs: {running}).")
        for record in targets:
            if record.controls is not None:
                if force:
                    record.controls.interrupt()
                elif record.gate is not None:
                    record.gate.pause()
                continue
            self._hub.publish(
                {
                    "type": "command",
                    "id": record.run_id,
                    "commandName": "InterruptAgent",
                    "arguments": {"force": force, "runId": record.run_id},
                },
                role="agent",
            )
            if force:
                record.active = False
                if record.child is not None and record.child.returncode is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(record.child.pid, signal.SIGTERM)
        return [r.run_id for r in targets]

    def resume(self, *, run_id: str | None, vault_id: str | None) -> list[str]:
        """Continue paused built-in runs; forward ResumeAgent to an external agent."""
        targets = [
            r
            for r in self.active()
            if (run_id is None or r.run_id == run_id)
            and (vault_id is None or r.vault_id == vault_id)
        ]
        if not targets:
            running = ", ".join(f"{r.run_id} ({r.vault_id})" for r in self.active()) or "none"
            raise NotFoundError(f"No matching agent run is active (active runs: {running}).")
        for record in targets:
            if record.gate is not None:
                record.gate.resume()
                continue
            self._hub.publish(
                {
                    "type": "command",
                    "id": record.run_id,
                    "commandName": "ResumeAgent",
                    "arguments": {"runId": record.run_id},
                },
                role="agent",
            )
        return [r.run_id for r in targets]

    def find_pending(self, tool_name: str, call_id: str | None) -> tuple[RunRecord, str]:
        """The active run and call a ToolOverride means (see ``ToolOverrideArgs``)."""
        calls = [
            (r, cid, name)
            for r in self.active()
            for cid, name in r.pending.items()
            if (call_id is None or cid == call_id)
        ]
        listed = ", ".join(f"{cid} ({name})" for _, cid, name in calls) or "none"
        if call_id is not None:
            if not calls:
                raise NotFoundError(f"No pending tool call '{call_id}' in an active run.")
            record, cid, name = calls[0]
            if name != tool_name:
                raise InvalidArgumentError(
                    f"Call '{cid}' is a call of {name}, not {tool_name}; give toolName {name}."
                )
            return record, cid
        matching = [(r, cid) for r, cid, name in calls if name == tool_name]
        if not matching:
            raise NotFoundError(
                f"No pending call of {tool_name} to override. Pending calls: {listed}."
            )
        if len(matching) > 1:
            raise InvalidArgumentError(
                f"Several calls of {tool_name} are pending ({listed}); name one with callId."
            )
        return matching[0]

    def forward_override(self, record: RunRecord, arguments: dict[str, Any]) -> None:
        self._hub.publish(
            {
                "type": "command",
                "id": record.run_id,
                "commandName": "ToolOverride",
                "arguments": arguments,
            },
            role="agent",
        )

    def approve(
        self,
        call_id: str,
        approved: bool,
        reason: str | None,
        *,
        by: Subscriber | None,
        files: list[str] | None = None,
    ) -> bool:
        """Answer a built-in run's approval; False when no run waits on ``call_id``.
        RequestError when ``by`` may not approve a step of a run started over HTTP;
        InvalidArgumentError when ``files`` names a file outside the change, or approves part
        of a change applied whole (nothing is answered then)."""
        for record in self.active():
            if call_id in record.awaiting and record.controls is not None:
                subset = None
                if approved and files is not None:
                    change = record.approval_files.get(call_id, [])
                    subset = _check_subset(call_id, files, change, call_id in record.per_file)
                if approved and record.started_by is None:
                    problem = approver_problem(
                        asked_by=None,
                        answered_by=by,
                        what=f"Call '{call_id}' of run {record.run_id} (started over HTTP)",
                    )
                    if problem is not None:
                        raise RequestError(problem)
                if approved and subset == []:
                    record.controls.deny(call_id, reason or "no file of the change was approved")
                elif approved and subset is not None:
                    record.controls.approve(call_id, subset)
                elif approved:
                    record.controls.approve(call_id)
                else:
                    record.controls.deny(call_id, reason)
                return True
        return False

    def awaiting(self) -> list[str]:
        return [cid for r in self.active() for cid in r.awaiting]

    def close(self) -> None:
        """Close the memory database (after ``shutdown``)."""
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    async def shutdown(self) -> None:
        """Stop every run: interrupt built-in ones, terminate spawned processes."""
        tasks = []
        for record in self._by_vault.values():
            if record.controls is not None and record.active:
                record.controls.interrupt()
            if record.child is not None and record.child.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(record.child.pid, signal.SIGTERM)
            if record.task is not None:
                tasks.append(record.task)
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def _check_subset(
    call_id: str, files: list[str], change: list[str], per_file: bool
) -> list[str] | None:
    """The approved subset of ``change`` (None: all of it); InvalidArgumentError for a file
    outside the change, or a subset of a change applied whole."""
    unknown = [f for f in files if f not in change]
    if unknown:
        raise InvalidArgumentError(
            f"Call '{call_id}' does not change {', '.join(unknown)}; it changes "
            f"{', '.join(change) or 'no named file'}. List only files of the change in 'files'."
        )
    chosen = [f for f in change if f in files]
    if len(chosen) == len(change):
        return None
    if not per_file and chosen:
        raise InvalidArgumentError(
            f"Call '{call_id}' changes {', '.join(change)} as one operation, applied whole. "
            f"Approve it with every file ticked (or without 'files'), or reject it and ask the "
            f"agent to change only {', '.join(files)}."
        )
    return chosen
