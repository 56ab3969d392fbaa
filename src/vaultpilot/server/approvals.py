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
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from vaultpilot.agent.events import ApprovalRequired, ApprovalResolved, event_to_dict
from vaultpilot.errors import RequestError
from vaultpilot.server.ws import Hub, Subscriber

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

    def pending(self) -> list[str]:
        return list(self._pending)

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
        self._publish(vault_id, ApprovalRequired(call_id, name, None, arguments, reason))
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
