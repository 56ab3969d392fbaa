"""Approvals the server itself asks for (ExecuteShell from an RPC client), answered by a person.

``ApprovalBroker.ask`` publishes an ``approval_required`` event (the agent loop's own event shape,
with ``runId`` null) to every subscriber and waits for ``ApproveToolCall {callId, approved}``
over any socket or ``POST /rpc``. It resolves to denied, with the reason, when nobody is
connected to answer, when the wait exceeds its timeout, or when a person refuses; each outcome
is published as ``approval_resolved``. ``answer`` returns False for an unknown call id, so the
caller can try the agent runs' approvals next.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from vaultpilot.agent.events import ApprovalRequired, ApprovalResolved, event_to_dict
from vaultpilot.server.ws import Hub

__all__ = ["Answer", "ApprovalBroker"]


@dataclass(frozen=True, slots=True)
class Answer:
    approved: bool
    reason: str


class ApprovalBroker:
    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._pending: dict[str, asyncio.Future[Answer]] = {}

    def pending(self) -> list[str]:
        return list(self._pending)

    def _publish(self, vault_id: str, event: ApprovalRequired | ApprovalResolved) -> None:
        frame = {"type": "event", "runId": None, "vaultId": vault_id, "event": event_to_dict(event)}
        self._hub.publish(frame)

    async def ask(
        self, *, vault_id: str, name: str, arguments: dict[str, Any], reason: str, timeout: float
    ) -> Answer:
        """Ask every subscriber; the first answer decides (see the module)."""
        if self._hub.count() == 0:
            return Answer(
                False, "nobody is connected to approve it (open the agent view or a WebSocket)"
            )
        call_id = f"approval-{uuid.uuid4().hex[:12]}"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        self._publish(vault_id, ApprovalRequired(call_id, name, None, arguments, reason))
        by: Literal["user", "nobody"] = "user"
        try:
            answer = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            answer, by = Answer(False, f"nobody answered within {timeout:g} s"), "nobody"
        finally:
            self._pending.pop(call_id, None)
        self._publish(vault_id, ApprovalResolved(call_id, answer.approved, by))
        return answer

    def answer(self, call_id: str, approved: bool, reason: str | None) -> bool:
        """Resolve a pending approval; False when there is none with this id."""
        future = self._pending.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(Answer(approved, reason or ("approved" if approved else "refused")))
        return True
