"""The three vault tools as MCP tools: their list, and one call from arguments to result.

* ``list_tools(names)`` derives the MCP tools from the registry (``tools.TOOLS``): the same
  titles, descriptions and JSON Schemas the model receives, and annotations from each tool's
  facts (read-only, destructive, idempotent; nothing reaches beyond the vault: not open-world).
  With more than one vault each schema gains a required ``vault`` parameter (an enum of the
  names); with one it has none.
* ``call_tool(...)`` validates the call, applies the approval policy, runs the tool on the
  vault's context in a worker thread and returns a ``CallToolResult``: the tool's JSON result as
  ``structuredContent`` and as text, with ``isError`` when the call failed (a bad argument, a
  refused operation, a vault error: the same guiding message the tool gives every transport).
  Only an unknown tool name is a protocol error (``INVALID_PARAMS``), as MCP asks. Note text in
  a result (``content``, ``excerpt``, ``context``) is between the server's boundary markers and
  flagged when it hides text (``tools.untrusted.mark``), in the structured result and its text
  alike, so a client's model sees the same boundaries whichever it reads.
* Approvals: a call the policy marks ``deny`` is refused; one marked ``ask`` (or one the vault's
  rules ask for: ``mode = "ask"``, an ``ask`` folder, more notes than ``max_notes_per_run``; or,
  with no rule deciding it, a write that would remove ``DROP_ASK_WORDS`` or more of a note's
  words, ``approvals.drops_words``, counted over the server's calls) is asked through
  elicitation when the client supports it (``approval.ask_person``) and refused otherwise, with
  why it asks and the ``[approvals]`` line that allows it. Before asking, the operation's dry run
  (when its facts say it has one) checks the call can run: its refusal (a delete without
  ``confirmDestructive``, a missing note) is returned without asking, and the question says what
  would change (files, lines added and removed). The rules that refuse (denied,
  read-only and private notes, read-only mode) are enforced by the tools themselves.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from vaultpilot.agent.approvals import (
    ApprovalPolicy,
    Approvals,
    operation_of,
    words_question,
)
from vaultpilot.agent.guard import guard_on
from vaultpilot.mcp.approval import Asked, ask_person, summarize
from vaultpilot.mcp.vaults import VaultSession
from vaultpilot.tools import TOOLS, get_tool
from vaultpilot.tools.manage import UNDO_HINT
from vaultpilot.tools.registry import is_dry_run, is_error
from vaultpilot.tools.untrusted import mark

__all__ = ["MAX_ARGUMENTS", "VAULT_PARAM", "Approvals", "Cuts", "call_tool", "list_tools"]

VAULT_PARAM = "vault"
# The largest tool call accepted, as JSON (the HTTP server's own body limit is the same).
MAX_ARGUMENTS = 4 * 1024 * 1024


_NAMES = tuple(tool.name for tool in TOOLS)  # in the registry's order: the same every run
_UNDO_OVER_MCP = (
    "There is no undo over MCP: to restore it, the person runs `vaultpilot undo --last` in a "
    "terminal (or `vaultpilot undo ID`, the ID from `vaultpilot history`)."
)


def _schema(parameters: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    if len(names) < 2:
        return parameters
    schema = copy.deepcopy(parameters)
    schema["properties"] = {
        VAULT_PARAM: {
            "type": "string",
            "enum": list(names),
            "description": "The vault to act on: " + ", ".join(names) + ".",
        },
        **schema.get("properties", {}),
    }
    schema["required"] = [VAULT_PARAM, *schema.get("required", [])]
    return schema


def list_tools(names: Sequence[str]) -> list[types.Tool]:
    """The MCP tools for a server serving the vaults ``names`` (see the module)."""
    out = []
    for tool in TOOLS:
        out.append(
            types.Tool(
                name=tool.name,
                title=tool.title,
                description=tool.description,
                input_schema=_schema(tool.schema(), names),
                annotations=types.ToolAnnotations(
                    title=tool.title,
                    read_only_hint=tool.read_only,
                    destructive_hint=tool.destructive,
                    idempotent_hint=tool.idempotent,
                    open_world_hint=False,
                ),
            )
        )
    return out


def _result(
    result: Mapping[str, Any], *, failed: bool, token: str | None = None
) -> types.CallToolResult:
    shown = dict(mark(result, token) if token else result)
    text = json.dumps(shown, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=shown,
        is_error=failed or is_error(result),
    )


def _refusal(name: str, arguments: Mapping[str, Any], message: str) -> types.CallToolResult:
    return _result(get_tool(name).failure(message, arguments), failed=True)


def _pick_vault(
    vaults: Mapping[str, VaultSession], arguments: dict[str, Any]
) -> tuple[VaultSession | None, str]:
    """The vault a call names (removing ``vault`` from the arguments), or why there is none."""
    names = ", ".join(vaults)
    if len(vaults) == 1:
        if VAULT_PARAM in arguments:
            return None, (
                f"This server serves one vault ({names}); leave out the '{VAULT_PARAM}' argument."
            )
        return next(iter(vaults.values())), ""
    chosen = arguments.pop(VAULT_PARAM, None)
    if chosen is None:
        return None, f"Name the vault with the '{VAULT_PARAM}' argument: one of {names}."
    if not isinstance(chosen, str) or chosen not in vaults:
        return None, f"Unknown vault {chosen!r}. Use one of: {names}."
    return vaults[chosen], ""


async def _dry_run(
    vault: VaultSession, name: str, arguments: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The operation's dry run (nothing is written), or None when it has none: checked before
    the person is asked, so a call that cannot run is refused without wasting their approval."""
    op = get_tool(name).operation(arguments)
    if op is None or not op.dry_run:
        return None
    outcome = await vault.run_tool(name, {**arguments, "dryRun": True}, source="mcp")
    return dict(outcome.result)


async def _ask(
    ctx: Any,
    params: types.CallToolRequestParams,
    vault: VaultSession,
    arguments: dict[str, Any],
    reason: str,
    by_rules: bool,
    key: str,
    approvals: Approvals,
    seen: dict[str, Any] | None = None,
) -> types.CallToolResult | types.InputRequiredResult | None:
    """Put the call to the person: None when they approved the change it makes, else what to
    answer instead (it cannot run, they were not asked or said no, or its notes changed).
    ``seen``: its dry run, when the question came from it."""
    name = params.name
    preview = seen if seen is not None else await _dry_run(vault, name, arguments)
    if preview is not None and is_error(preview):
        return _result(preview, failed=True)  # it could not run: nothing to ask about
    changes = summarize(preview) if preview is not None else ""
    diffs = preview.get("diffs") if preview is not None else None
    asked = await ask_person(ctx, params, reason, arguments, changes=changes, preview=diffs)
    if isinstance(asked, types.InputRequiredResult):
        return asked
    if asked is not Asked.ACCEPTED:
        allow = (
            "Only the person can change the vault's rules ([rules] in config.toml)"
            if by_rules
            else f"To allow it, {approvals.how_to_allow(key)}"
        )
        why = {
            Asked.UNSUPPORTED: "needs the person's approval and this client cannot ask for it "
            f"(no elicitation). {reason} {allow}; or do it in Obsidian",
            Asked.DECLINED: "was declined by the person",
            Asked.CANCELLED: "was not approved (the question was dismissed)",
        }[asked]
        return _refusal(name, arguments, f"{key} {why}. Nothing was changed.")
    again = await _dry_run(vault, name, arguments) if preview is not None else None
    if preview is not None and (again or {}).get("diffs") != diffs:
        # What was approved is the change the person saw: a note edited meanwhile (in
        # Obsidian) would make it another change.
        return _refusal(
            name,
            arguments,
            f"{key} was not run: the notes it changes were edited while the person was "
            "asked, so the approved change is no longer the one it would make. Nothing was "
            "changed; read the notes again and make the call again.",
        )
    return None


# Words the unasked writes of this server's clients removed, per vault and note: many small
# cuts over MCP ask like one large one, as in an agent run. MCP has no run, and a client's
# session is not a stable object in the SDK, so the count is the server's (all its clients
# together: a cut by one counts toward another's question, which only asks sooner).
Cuts = dict[object, dict[str, int]]


async def _asks_anyway(
    vault: VaultSession,
    policy: ApprovalPolicy,
    name: str,
    arguments: dict[str, Any],
    cuts: Mapping[str, int],
) -> tuple[str | None, bool, dict[str, Any] | None, dict[str, int]]:
    """Why a call the policy lets run asks anyway, whether the vault's rules say so (else the
    words its dry run would remove with what ``cuts`` counts already, ``drops_words``), that
    dry run if made, and the running count per note it would leave."""
    asks = await vault.run(lambda c: guard_on(c).needs_approval(name, arguments))
    if asks is not None:  # mode = "ask", an ask folder, max_notes_per_run
        return asks, True, None, {}
    op = get_tool(name).operation(arguments)
    if op is None or not op.drops_text or is_dry_run(arguments):
        return None, False, None, {}
    seen = await _dry_run(vault, name, arguments)
    if seen is None or is_error(seen):
        return None, False, None, {}  # it cannot run: the call says why
    diffs = seen.get("diffs")
    found = diffs if isinstance(diffs, list) else []
    why, total = words_question(policy, name, operation_of(arguments), found, cuts)
    return why, False, seen, total


async def call_tool(
    ctx: Any,
    params: types.CallToolRequestParams,
    *,
    vaults: Mapping[str, VaultSession],
    approvals: Approvals,
    token: str | None = None,
    server_cuts: Cuts | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """One ``tools/call`` (see the module); ``ctx`` is the SDK's request context, ``token``
    the server's boundary token (none: results as the tool gave them) and ``server_cuts`` the
    server's running count of removed words (none: this call's alone)."""
    name = params.name
    if name not in _NAMES:
        raise MCPError(
            types.INVALID_PARAMS, f"Unknown tool '{name}'. Valid tools: {', '.join(_NAMES)}."
        )
    arguments: dict[str, Any] = dict(params.arguments or {})
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
    if size > MAX_ARGUMENTS:
        return _refusal(
            name,
            {},
            f"The arguments are too large ({size} bytes; at most {MAX_ARGUMENTS}). Split the "
            "change into several calls (e.g. append_note in parts).",
        )
    vault, problem = _pick_vault(vaults, arguments)
    if vault is None:
        return _refusal(name, arguments, problem)
    operation = operation_of(arguments)
    valid = True
    try:
        get_tool(name).params.model_validate(arguments)
    except ValidationError:
        valid = False  # run_tool explains it; a call that cannot run needs no approval
    dry = is_dry_run(arguments)
    policy = approvals.current()
    decision = policy.decide(name, operation, dry_run=dry) if valid else "allow"
    reason, by_rules, seen = policy.reason(name, operation), False, None
    total: dict[str, int] = {}
    cuts = (server_cuts if server_cuts is not None else {}).setdefault(vault, {})
    if decision == "allow" and valid:  # the vault's rules, or the words it drops, may ask
        why, by_rules, seen, total = await _asks_anyway(vault, policy, name, arguments, cuts)
        if why is not None:
            decision, reason = "ask", f"{why[:1].upper()}{why[1:]}."
    key = f"{name}.{operation}" if operation else name
    if decision == "deny":
        return _refusal(
            name,
            arguments,
            f"{name} {operation or ''} is denied by the approval policy; nothing was changed. "
            f"Tell the person; to allow it, {approvals.how_to_allow(key)}.",
        )
    if decision == "ask":
        stop = await _ask(ctx, params, vault, arguments, reason, by_rules, key, approvals, seen)
        if stop is not None:
            return stop
        total = {path: 0 for path in total}  # the person saw these notes' change: start again
    # A write takes the vault's write turn first.
    outcome = await vault.run_tool(name, arguments, source="mcp")
    if outcome.error is None and not is_error(outcome.result):
        cuts.update(total)  # a failed call removed nothing
    return _result(_undo_here(outcome.result), failed=outcome.error is not None, token=token)


def _undo_here(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """A result that says "undo the change" says how, since MCP has no undo of its own."""
    message = result.get("message")
    if not isinstance(message, str) or UNDO_HINT not in message:
        return result
    return {**result, "message": message.replace(UNDO_HINT, _UNDO_OVER_MCP)}
