"""The command table: every RPC command's handler, and the one way to run a command.

``dispatch(state, command, sub)`` runs one ``ToolCommand`` and returns its envelope; it never
raises. ``dispatch_text`` does the same for a raw WebSocket frame (JSON text). ``POST /rpc``, the
per-command REST routes and ``/ws`` all end here, so a command behaves the same on every route.

Arguments are validated by the command's model (``models.ARGUMENT_MODELS``); the three vault
tools validate their own (``vaultpilot.tools.registry``), after ``VaultID`` is taken out.
Failures become envelope errors through ``envelope.error_reply`` (which logs internal errors
with their traceback); a validation problem is an ``invalid_argument`` error naming each bad
argument and what is valid. A WebSocket frame that is not one readable JSON document (a lone
surrogate, nesting too deep) is answered with ``invalid_argument`` (``limits.read_frame``). The
sending client (``sub``, None over HTTP) goes with each command, so approvals can refuse a client
approving its own request (see ``approvals``). Every vault tool call a client makes (and
CreateNote, UpdateNote, and a ToolOverride the server runs) is held to the configuration's
``[approvals]`` rules first
(``approvals.ApprovalBroker.hold_to_rules``): denied, asked for, or run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from vaultpilot.errors import InvalidArgumentError, NotFoundError, RequestError, VaultpilotError
from vaultpilot.server.context import StatusRecord, build_vault_context
from vaultpilot.server.envelope import error_reply, failure, internal_failure, success
from vaultpilot.server.history import change_history, show_change_set, undo_changes
from vaultpilot.server.limits import FrameError, read_frame
from vaultpilot.server.models import (
    AGENT_TOOLS,
    ARGUMENT_MODELS,
    WS_ONLY,
    ApproveToolCallArgs,
    ChangeHistoryArgs,
    CreateNoteArgs,
    ExecuteShellArgs,
    GetVaultContextArgs,
    InterruptAgentArgs,
    ReportStatusArgs,
    ResumeAgentArgs,
    ShowChangeSetArgs,
    StartAgentArgs,
    SubscribeArgs,
    ToolCommand,
    ToolOverrideArgs,
    UndoChangeSetArgs,
    UndoRunArgs,
    UpdateNoteArgs,
)
from vaultpilot.server.shell import plan_command, run_plan
from vaultpilot.server.state import ServerState
from vaultpilot.server.validation import explain
from vaultpilot.server.vaults import VaultHandle
from vaultpilot.server.ws import Subscriber
from vaultpilot.tools import ToolContext, api, run_tool

__all__ = ["COMMANDS", "dispatch", "dispatch_text", "execute", "parse_command"]

log = logging.getLogger(__name__)
Handler = Callable[[ServerState, Any, Subscriber | None], Awaitable[dict[str, Any]]]


def _arguments(name: str, raw: dict[str, Any]) -> Any:
    model = ARGUMENT_MODELS[name]
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidArgumentError(
            explain(f"arguments for {name}", model, exc.errors(include_url=False))
        ) from None


# ----- handlers
async def _held(
    state: ServerState,
    vault: VaultHandle,
    name: str,
    arguments: dict[str, Any],
    sub: Subscriber | None,
) -> None:
    """Return when the client's vault tool call may run under the [approvals] rules; raise
    when it may not (see ``approvals``)."""
    await state.approvals.hold_to_rules(
        state.runs.approvals,
        vault,
        name,
        arguments,
        asker=sub,
        timeout=state.settings.shell.approval_timeout,
    )


async def _tool(
    state: ServerState,
    vault: VaultHandle,
    name: str,
    arguments: dict[str, Any],
    sub: Subscriber | None,
) -> dict[str, Any]:
    await _held(state, vault, name, arguments, sub)
    # The tool's facts say whether the call takes the vault's write turn before it starts.
    outcome = await vault.run_tool(name, arguments)
    if outcome.error is not None:
        raise outcome.error
    return outcome.result


async def _get_vault_context(
    state: ServerState, args: GetVaultContextArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    vid = vault.vault_id
    record, status = state.runs.latest(vid), state.statuses.get(vid)
    enabled = state.settings.shell.enabled
    progress, coverage = await asyncio.to_thread(vault.embedding)
    config = state.runs.config
    live = vault.live()
    return await vault.run(
        lambda ctx: build_vault_context(
            ctx,
            vault_id=vid,
            record=record,
            status=status,
            shell_enabled=enabled,
            coverage=coverage,
            embedding=progress,
            config=config,
            live=live,
        )
    )


async def _execute_shell(
    state: ServerState, args: ExecuteShellArgs, sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    policy = state.settings.shell
    # In a thread: planning looks names up in the vault (links), up to the body size limit.
    plan = await asyncio.to_thread(plan_command, policy, args.command, vault.root)
    if not plan.allowlisted:
        answer = await state.approvals.ask(
            vault_id=vault.vault_id,
            name="ExecuteShell",
            arguments={"Command": plan.display, "VaultID": vault.vault_id, "shell": plan.via_shell},
            reason=f"Run `{plan.display}` in the vault '{vault.vault_id}'? It is not on the "
            "shell allowlist.",
            timeout=policy.approval_timeout,
            asker=sub,
        )
        if not answer.approved:
            raise RequestError(
                f"ExecuteShell was not approved ({answer.reason}), so `{plan.display}` did not run."
            )
    out = await run_plan(plan, cwd=vault.root, policy=policy)
    return {
        "Stdout": out.stdout,
        "Stderr": out.stderr,
        "ExitCode": out.exit_code,
        "TimedOut": out.timed_out,
        "Truncated": out.truncated,
    }


# CreateNote and UpdateNote are obsidian_vault_manager operations (``tools.api``): held to the
# rules as the manager call each one is.
_MANAGER = "obsidian_vault_manager"


async def _create_note(
    state: ServerState, args: CreateNoteArgs, sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    call = {"operation": "create_note", "target": args.file_path, "content": args.content}
    await _held(state, vault, _MANAGER, call, sub)
    written = await vault.run(lambda ctx: api.create_note(ctx, args.file_path, args.content))
    return {"Success": True, "NoteURI": vault.note_uri(written.path), "Version": written.version}


def _update_call(args: UpdateNoteArgs) -> dict[str, Any]:
    """The obsidian_vault_manager call an UpdateNote is: held to the rules, then made."""
    changes = args.changes
    if isinstance(changes, str):
        return {"operation": "update_note", "target": args.file_path, "content": changes}
    appends = changes.append is not None
    call = {
        "operation": "append_note" if appends else "update_note",
        "target": args.file_path,
        "content": changes.append if appends else changes.content,
        "metadata": changes.frontmatter or None,
        "expectedVersion": changes.expected_version or None,
    }
    return {k: v for k, v in call.items() if v is not None}


def _update(ctx: ToolContext, call: Mapping[str, Any]) -> api.Written:
    """Make the call ``_update_call`` describes."""
    path, metadata, expected = call["target"], call.get("metadata"), call.get("expectedVersion")
    if call["operation"] == "append_note":
        return api.append_note(
            ctx, path, call["content"], metadata=metadata, expected_version=expected
        )
    return api.update_note(
        ctx, path, content=call.get("content"), metadata=metadata, expected_version=expected
    )


async def _update_note(
    state: ServerState, args: UpdateNoteArgs, sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    call = _update_call(args)
    await _held(state, vault, _MANAGER, call, sub)
    written = await vault.run(lambda ctx: _update(ctx, call))
    return {"Success": True, "Version": written.version}


async def _report_status(
    state: ServerState, args: ReportStatusArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault_id: str | None = None
    if args.vault_id is not None or len(state.vaults.ids()) == 1:
        vault_id = state.vaults.get(args.vault_id).vault_id
    now = time.time()
    if vault_id is not None:
        state.statuses[vault_id] = StatusRecord(args.status, args.message, now)
        state.runs.finish_external(vault_id, args.status)
    record = state.runs.latest(vault_id) if vault_id else None
    state.hub.publish(
        {
            "type": "status",
            "vaultId": vault_id,
            "runId": record.run_id if record and record.active else None,
            "status": args.status,
            "message": args.message,
            "source": "rpc",
            "time": now,
        }
    )
    return {"Success": True}


async def _start_agent(
    state: ServerState, args: StartAgentArgs, sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    record = await state.runs.start(
        vault, args.goal, started_by=sub, conversation_id=args.conversation_id
    )
    return {
        "runId": record.run_id,
        "vaultId": vault.vault_id,
        "goal": args.goal,
        "agent": record.agent,
        "conversationId": record.conversation_id,
    }


async def _interrupt_agent(
    state: ServerState, args: InterruptAgentArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    if args.vault_id is not None:
        state.vaults.get(args.vault_id)  # an unknown vault is its own error
    ids = state.runs.interrupt(force=args.force, run_id=args.run_id, vault_id=args.vault_id)
    return {"interrupted": ids, "force": args.force}


async def _resume_agent(
    state: ServerState, args: ResumeAgentArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    if args.vault_id is not None:
        state.vaults.get(args.vault_id)
    return {"resumed": state.runs.resume(run_id=args.run_id, vault_id=args.vault_id)}


async def _tool_override(
    state: ServerState, args: ToolOverrideArgs, sub: Subscriber | None
) -> dict[str, Any]:
    try:
        record, call_id = state.runs.find_pending(args.tool_name, args.call_id)
    except NotFoundError:
        external = [r for r in state.runs.active() if r.agent == "external"]
        if not external:
            raise
        record = external[0]
        forwarded = {
            "toolName": args.tool_name,
            "arguments": args.arguments,
            "result": args.result,
            "callId": args.call_id,
            "runId": record.run_id,
        }
        state.runs.forward_override(record, forwarded)
        return {
            "runId": record.run_id,
            "callId": args.call_id or "",
            "toolName": args.tool_name,
            "result": args.result or {},
        }
    if args.result is not None:
        result = args.result
    elif args.tool_name in AGENT_TOOLS:
        vault = state.vaults.get(record.vault_id)
        await _held(state, vault, args.tool_name, args.arguments, sub)
        result = await vault.run(lambda ctx: run_tool(ctx, args.tool_name, args.arguments).result)
    else:
        raise InvalidArgumentError(
            f"Give 'result' to override a call of {args.tool_name} (the server can run only "
            f"{', '.join(AGENT_TOOLS)} itself)."
        )
    if record.controls is None or not record.controls.override(call_id, result):
        raise RequestError(f"Call '{call_id}' has already run; its result can no longer change.")
    return {"runId": record.run_id, "callId": call_id, "toolName": args.tool_name, "result": result}


async def _approve(
    state: ServerState, args: ApproveToolCallArgs, sub: Subscriber | None
) -> dict[str, Any]:
    call_id = args.call_id
    asked = state.approvals.name_of(call_id)
    if args.files and asked == "ExecuteShell":
        raise InvalidArgumentError(
            f"'{call_id}' asks to run a shell command, which changes no listed files: approve "
            "or reject it without 'files'."
        )
    if args.files and asked is not None:
        raise InvalidArgumentError(
            f"'{call_id}' ({asked} from a client) is approved or rejected whole: send it "
            "without 'files'."
        )
    if not (
        state.approvals.answer(call_id, args.approved, args.reason, by=sub)
        or state.runs.approve(call_id, args.approved, args.reason, by=sub, files=args.files)
    ):
        waiting = ", ".join([*state.approvals.pending(), *state.runs.awaiting()]) or "none"
        raise NotFoundError(
            f"No tool call '{call_id}' is waiting for approval (waiting: {waiting})."
        )
    return {"callId": call_id, "approved": args.approved}


async def _change_history(
    state: ServerState, args: ChangeHistoryArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    return await vault.run(lambda ctx: change_history(ctx, limit=args.limit))


async def _show_change_set(
    state: ServerState, args: ShowChangeSetArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    return await vault.run(lambda ctx: show_change_set(ctx, args.id))


async def _undo_change_set(
    state: ServerState, args: UndoChangeSetArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id)
    running = _running(state)
    result = await vault.run(
        lambda ctx: undo_changes(
            ctx, args.id, last=args.last, skip_changed=args.skip_changed, running=running
        )
    )
    vault.changed()
    return result


async def _undo_run(
    state: ServerState, args: UndoRunArgs, _sub: Subscriber | None
) -> dict[str, Any]:
    vault = state.vaults.get(args.vault_id or state.runs.vault_of(args.run_id))
    running = _running(state)
    result = await vault.run(
        lambda ctx: undo_changes(
            ctx, args.run_id, last=False, skip_changed=args.skip_changed, running=running
        )
    )
    vault.changed()
    return result


def _running(state: ServerState) -> frozenset[str]:
    """The runs still going: their change sets may still grow, so an undo of one is refused."""
    return frozenset(r.run_id for r in state.runs.active())


async def _subscribe(
    state: ServerState, args: SubscribeArgs, sub: Subscriber | None
) -> dict[str, Any]:
    assert sub is not None
    # Only what was sent changes: ``Subscribe {since}`` after ``{role: "agent"}`` stays an agent.
    sent = args.model_fields_set
    if "role" in sent:
        sub.role = args.role
    if "format" in sent:
        sub.format = args.format
    if args.since is not None:
        # Queued before the reply: the frames the client missed, in its format.
        for text in sub.render(state.hub.backlog(args.since)):
            sub.offer(text)
    return {"role": sub.role, "format": sub.format}


async def _authenticate(_state: ServerState, _args: Any, sub: Subscriber | None) -> dict[str, Any]:
    # Reached only on a socket that is already signed in (``ws`` reads the first Authenticate).
    who = f" ({sub.client_id})" if sub is not None else ""
    raise RequestError(
        f"This socket{who} is already signed in; nothing changed. Send Authenticate only as "
        "the first frame of a socket opened without a key; to sign in with another key, open "
        "a new socket."
    )


COMMANDS: dict[str, Handler] = {
    "GetVaultContext": _get_vault_context,
    "ExecuteShell": _execute_shell,
    "CreateNote": _create_note,
    "UpdateNote": _update_note,
    "ReportStatus": _report_status,
    "StartAgent": _start_agent,
    "InterruptAgent": _interrupt_agent,
    "ResumeAgent": _resume_agent,
    "ToolOverride": _tool_override,
    "ApproveToolCall": _approve,
    "ChangeHistory": _change_history,
    "ShowChangeSet": _show_change_set,
    "UndoChangeSet": _undo_change_set,
    "UndoRun": _undo_run,
    "Subscribe": _subscribe,
    "Authenticate": _authenticate,
}


# ----- running commands
async def execute(
    state: ServerState, name: str, arguments: dict[str, Any] | BaseModel, sub: Subscriber | None
) -> dict[str, Any]:
    """Run command ``name``; returns its result or raises a ``VaultpilotError``."""
    if name in WS_ONLY and sub is None:
        raise InvalidArgumentError(f"{name} is a WebSocket command; send it over /ws.")
    if name in AGENT_TOOLS:
        raw = (
            arguments.model_dump(by_alias=True, exclude_unset=True)
            if isinstance(arguments, BaseModel)
            else dict(arguments)
        )
        vault_id = raw.pop("VaultID", None) or raw.pop("vaultId", None)
        if vault_id is not None and not isinstance(vault_id, str):
            raise InvalidArgumentError("VaultID must be a string naming a configured vault.")
        return await _tool(state, state.vaults.get(vault_id), name, raw, sub)
    args = arguments if isinstance(arguments, BaseModel) else _arguments(name, arguments)
    return await COMMANDS[name](state, args, sub)


async def dispatch(
    state: ServerState, command: ToolCommand, sub: Subscriber | None = None
) -> dict[str, Any]:
    """Run one command and return its envelope (never raises)."""
    try:
        result = await execute(state, command.commandName, command.arguments, sub)
    except VaultpilotError as err:
        return error_reply(command.id, command.commandName, err)[0]
    except Exception as exc:
        log.exception("command %s failed", command.commandName)
        return internal_failure(command.id, command.commandName, exc)
    return success(command.id, command.commandName, result)


def parse_command(data: Any) -> ToolCommand:
    """Validate a decoded JSON value as an ``IToolCommand``; InvalidArgumentError if not."""
    if not isinstance(data, dict):
        raise InvalidArgumentError(
            "A command must be a JSON object: {id, commandName, arguments, timestamp}."
        )
    try:
        return ToolCommand.model_validate(data)
    except ValidationError as exc:
        raise InvalidArgumentError(
            explain("IToolCommand", ToolCommand, exc.errors(include_url=False))
        ) from None


async def dispatch_text(state: ServerState, text: str, sub: Subscriber | None) -> dict[str, Any]:
    """Decode, validate and run one WebSocket frame; returns its envelope."""
    try:
        data = read_frame(text)
    except FrameError as exc:  # answered here, so the socket stays open (see ``limits``)
        return failure(None, None, "invalid_argument", str(exc))
    try:
        command = parse_command(data)
    except InvalidArgumentError as err:
        raw_id = data.get("id") if isinstance(data, dict) else None
        raw_name = data.get("commandName") if isinstance(data, dict) else None
        return failure(
            raw_id if isinstance(raw_id, str) else None,
            raw_name if isinstance(raw_name, str) else None,
            "invalid_argument",
            err.message,
        )
    return await dispatch(state, command, sub)
