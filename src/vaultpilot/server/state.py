"""Everything one running server holds, built by ``create_app`` and passed to the handlers."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from vaultpilot.server.approvals import ApprovalBroker
from vaultpilot.server.context import StatusRecord
from vaultpilot.server.keyfile import KeyStore
from vaultpilot.server.runs import Runs
from vaultpilot.server.sessions import Sessions
from vaultpilot.server.settings import ServerSettings
from vaultpilot.server.vaults import Vaults
from vaultpilot.server.ws import Hub

__all__ = ["ServerState"]


@dataclass(slots=True)
class ServerState:
    settings: ServerSettings
    keys: KeyStore
    hub: Hub
    vaults: Vaults
    runs: Runs
    approvals: ApprovalBroker
    sessions: Sessions
    statuses: dict[str, StatusRecord] = field(default_factory=dict)  # last per vault
    server_id: str = field(default_factory=lambda: secrets.token_hex(6))  # seq restarts with it
