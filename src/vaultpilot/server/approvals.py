"""Approvals the server itself asks for (ExecuteShell from an RPC client), answered by a person,
and the rule that a client never approves what it asked for itself.

``ApprovalBroker.ask`` publishes an ``approval_required`` event (the agent loop's own event shape,
with ``runId`` null) to every subscriber and waits for ``ApproveToolCall {callId, approved}``
over a socket. It resolves to denied, with the reason, when no other client is connected to
answer, when the wait exceeds its timeout, or when a person refuses; each outcome is published as
``approval_resolved``. ``answer`` returns False for an unknown call id, so the caller can try the
agent runs' approvals next.

Who may approve (``approver_problem``). A client is a WebSocket connection (its ``Subscriber``);
every plain HTTP request is the anonymous client ``None``, since nothing tells two HTTP requests
from the same program apart (they all carry the one API key). A request is approved only by a
WebSocket client other than the one that asked, so a program that can ask for a shell command
cannot also say yes to it:

* ExecuteShell asked over ``/ws`` needs another socket (the person's agent view); asked over
  HTTP it needs any socket; an approval sent over HTTP is refused in both cases.
* A built-in agent run started over HTTP (a non-interactive client) is held to the same rule for
  each step that waits for approval (see ``runs``).
* A built-in agent run started from a socket is the exception: a person starts a run and approves
  its steps in the same page, and the run's steps are asked for by the model, not by that client.
  Any client may answer those.

Refusing (``approved: false``) is always allowed, the asker included: it only stops something.
A refused approval is a ``RequestError`` naming why, and the request stays pending.

**The [approvals] rules on /rpc and /ws** (``hold_to_rules``). A vault tool call from a client
(``POST /rpc``, ``POST /tools/<name>``, a ``/ws`` frame, a ToolOverride the server runs), and the
spec's CreateNote and UpdateNote (decided as the ``obsidian_vault_manager`` operation each one is,
``create_note``, ``update_note`` or ``append_note``, so a rule for that operation or for the
manager binds them too), is held to the rules the configuration's ``[approvals]`` table sets,
the same table (``agent.approvals.Approvals``, read again when the file changes) the built-in
agent's runs and MCP clients are held to:

* ``deny``: refused (``request_refused``), naming the rule and the file it is set in; nothing
  runs.
* ``ask``: the operation's dry run is run first (a call that cannot run is answered with its own
  error, nobody is asked), then the call is asked for like ExecuteShell, with the dry run's
  diffs in the ``approval_required`` event; once approved the dry run is made again and the call
  is refused if what it would change is no longer what was shown. ``dryRun: true`` of an
  operation that has a dry run writes nothing and is not asked about.
* ``allow``, or no rule: the vault's ``[rules]`` that ask decide it, as they do for an MCP
  client's call (``agent.guard.RunGuard`` made for the one call, on the vault's current rules):
  a change under ``mode = "ask"``, to a note in an ``ask`` folder, or naming more notes than
  ``max_notes_per_run`` is asked for as above, the reason saying which rule asks; otherwise it
  runs. (Each call is counted alone: a client has no run whose notes could add up.)

The built-in default layer (asking before destructive steps, written for a model's calls) is not
applied here: only rules the person wrote bind these clients, so a program that deletes a note
through /rpc keeps working until a rule says otherwise.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from vaultpilot.agent.approvals import ApprovalPolicy, Approvals, Decision, operation_of
from vaultpilot.agent.events import ApprovalRequired, ApprovalResolved, event_to_dict
from vaultpilot.agent.guard import guard_on
from vaultpilot.errors import InvalidArgumentError, RequestError
from vaultpilot.server.vaults import VaultHandle
from vaultpilot.server.ws import Hub, Subscriber
from vaultpilot.tools import get_tool
from vaultpilot.tools.registry import call_operation, is_dry_run
from vaultpilot.tools.session import writes

__all__ = ["Answer", "ApprovalBroker", "approver_problem"]


@dataclass(frozen=True, slots=True)
class Answer:
    approved: bool
    reason: str


def approver_problem(
    *, asked_by: Subscriber | None, answered_by: Subscriber | None, what: str
) -> str | None:
    """Why ``answered_by`` may not approve what ``asked_by`` asked for, or None (see module)."""
    if answered_by is None:
        return (
            f"{what} must be approved from the agent view (a WebSocket client other than the "
            "one that asked): an approval sent over HTTP cannot be told apart from the client "
            "that asked for it. Deny it here, or approve it in the agent view."
        )
    if answered_by is asked_by:
        return (
            f"{what} was asked for by this same client ({answered_by.client_id}), which cannot "
            "approve its own request: a person must approve it from another client (the agent "
            "view). This client may still deny it."
        )
    return None


@dataclass(frozen=True, slots=True)
class _Pending:
    future: asyncio.Future[Answer]
    asker: Subscriber | None
    name: str


class ApprovalBroker:
    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._pending: dict[str, _Pending] = {}
        # The configured policy (``hold_to_rules``), made again only when ``Approvals.current``
        # returns another policy: it reads the config file again when the file changed.
        self._read: ApprovalPolicy | None = None
        self._configured = ApprovalPolicy().configured()

    def configured_policy(self, rules: Approvals) -> ApprovalPolicy:
        """The rules the configuration sets, without the default layer (see the module)."""
        read = rules.current()
        if read is not self._read:
            self._read, self._configured = read, read.configured()
        return self._configured

    def pending(self) -> list[str]:
        return list(self._pending)

    def name_of(self, call_id: str) -> str | None:
        """The command or tool a pending approval is for (None: no such approval)."""
        pending = self._pending.get(call_id)
        return pending.name if pending is not None else None

    def _publish(self, vault_id: str, event: ApprovalRequired | ApprovalResolved) -> None:
        frame = {
            "type": "event",
            "runId": None,
            "vaultId": vault_id,
            "event": event_to_dict(event),
            "time": time.time(),
        }
        self._hub.publish(frame)

    async def ask(
        self,
        *,
        vault_id: str,
        name: str,
        arguments: dict[str, Any],
        reason: str,
        timeout: float,
        asker: Subscriber | None,
        operation: str | None = None,
        diffs: tuple[dict[str, Any], ...] = (),
    ) -> Answer:
        """Ask every subscriber; the first allowed answer decides (see the module)."""
        if self._hub.count(besides=asker) == 0:
            return Answer(
                False,
                "nobody is connected to approve it (open the agent view or a WebSocket"
                + (" other than the one that asked" if asker is not None else "")
                + ")",
            )
        call_id = f"approval-{uuid.uuid4().hex[:12]}"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = _Pending(future, asker, name)
        self._publish(
            vault_id, ApprovalRequired(call_id, name, operation, arguments, reason, diffs)
        )
        by: Literal["user", "nobody"] = "user"
        try:
            answer = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            answer, by = Answer(False, f"nobody answered within {timeout:g} s"), "nobody"
        finally:
            self._pending.pop(call_id, None)
        why = "" if answer.approved else answer.reason
        self._publish(vault_id, ApprovalResolved(call_id, answer.approved, by, why))
        return answer

    def answer(
        self, call_id: str, approved: bool, reason: str | None, *, by: Subscriber | None
    ) -> bool:
        """Resolve a pending approval; False when there is none with this id. RequestError
        when ``by`` may not approve it (see the module); the approval then stays pending."""
        pending = self._pending.get(call_id)
        if pending is None or pending.future.done():
            return False
        if approved:
            problem = approver_problem(
                asked_by=pending.asker, answered_by=by, what=f"{pending.name} '{call_id}'"
            )
            if problem is not None:
                raise RequestError(problem)
        pending.future.set_result(
            Answer(approved, reason or ("approved" if approved else "refused"))
        )
        return True

    async def hold_to_rules(
        self,
        rules: Approvals,
        vault: VaultHandle,
        name: str,
        arguments: Mapping[str, Any],
        *,
        asker: Subscriber | None,
        timeout: float,
    ) -> None:
        """Return when the vault tool call ``name(arguments)`` may run under the ``[approvals]``
        rules (see the module); RequestError (or the dry run's own error) when it may not."""
        policy = self.configured_policy(rules)
        operation = operation_of(arguments)
        decision: Decision = "allow"
        key: str | None = None
        if any(policy.over):  # else no rules set: the hot path pays one stat of the config file
            decision, key = policy.ruling(name, operation, dry_run=is_dry_run(arguments))
        what = f"{name}.{operation}" if operation else name
        if decision == "deny":
            raise RequestError(
                f'{what} is refused: the rule `"{key}" = "deny"` under [approvals] in '
                f"{rules.where()} denies it to every client. Nothing was changed. To let it "
                'run, change that rule to "ask" (a person approves each call in the agent '
                'view) or "allow".'
            )
        if decision == "ask":
            said = f'The rule `"{key}" = "ask"` under [approvals]'
            reason = f"{policy.reason(name, operation)} {said} asks first."
            rule = f"{said} in {rules.where()} asks a person first."
        else:
            asks = await _vault_rules_ask(vault, name, arguments)
            if asks is None:
                return
            reason = f"{asks[:1].upper()}{asks[1:]}."  # a sentence, as the agent view shows it
            rule = f"The vault's [rules] in {rules.where()} ask a person first ({asks})."
        op = call_operation(name, arguments)
        diffs = await _preview(vault, name, arguments) if op is not None and op.dry_run else None
        answer = await self.ask(
            vault_id=vault.vault_id,
            name=name,
            operation=operation,
            arguments=dict(arguments),
            reason=reason,
            timeout=timeout,
            asker=asker,
            diffs=diffs or (),
        )
        if not answer.approved:
            raise RequestError(
                f"{what} was not approved: {answer.reason}. {rule} Nothing was changed."
            )
        if diffs is not None and await _preview(vault, name, arguments) != diffs:
            raise RequestError(
                f"{what} was not run: the notes it changes were edited while a person was "
                "asked, so the approved change is no longer the one it would make. Nothing was "
                "changed; read the notes again and send the call again."
            )


async def _vault_rules_ask(
    vault: VaultHandle, name: str, arguments: Mapping[str, Any]
) -> str | None:
    """Why the vault's ``[rules]`` ask before this call (``mode = "ask"``, an ``ask`` folder, more
    notes than ``max_notes_per_run`` in one call), as they do for an MCP client's; None when
    they do not, or when the call is not valid (its own error answers it, nobody is asked)."""
    if not writes(name, arguments):
        return None
    asks = await vault.run(lambda c: guard_on(c).needs_approval(name, arguments))
    if asks is None:
        return None
    try:
        get_tool(name).params.model_validate(arguments)
    except (ValidationError, InvalidArgumentError):
        return None
    return asks


async def _preview(
    vault: VaultHandle, name: str, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], ...]:
    """The diffs of the call's dry run (nothing is written); its error when it cannot run."""
    outcome = await vault.run_tool(name, {**arguments, "dryRun": True})
    if outcome.error is not None:
        raise outcome.error
    found = outcome.result.get("diffs") or ()
    return tuple(d for d in found if isinstance(d, dict))
