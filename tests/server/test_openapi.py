"""The OpenAPI document describes the RPC shapes, needs the key, and schemathesis, generating
requests from it against a real server, finds no server error (nor a reply that breaks it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Err, Ok

from .conftest import Live

EXAMPLES = 25  # per operation; the fourteen operations stay within a few seconds
# Every other check runs (no 5xx, documented statuses and content types, replies matching their
# schemas, schema-invalid input refused, missing key refused). This one expects every request
# the JSON Schema allows to succeed, but some rules cannot be written in JSON Schema (a path
# must stay inside the vault, UpdateNote needs at least one change): those are refused with a
# 400 naming the rule.
EXCLUDED = [schemathesis.checks.positive_data_acceptance]


def test_schemathesis_finds_no_server_error(live: Callable[..., Live], vault: Path) -> None:
    server = live(vaults={"vault": vault})
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json", headers=server.auth)
    results = list(schema.get_all_operations())
    assert not [r.err() for r in results if isinstance(r, Err)]
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    # rpc, 8 tools, 5 UI commands, vaults, conversations, login-link, history, show, undo,
    # a conversation's transcript, model-setup
    assert len(operations) == 22
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(
                base_url=server.url, headers=server.auth, excluded_checks=EXCLUDED
            )

        check()


def test_the_document_needs_the_key_and_describes_the_shapes(
    live: Callable[..., Live], vault: Path
) -> None:
    server = live(vaults={"vault": vault})
    with httpx.Client(base_url=server.url, trust_env=False) as c:
        assert c.get("/openapi.json").status_code == 401
        assert c.get("/docs").status_code == 401
    with server.http() as c:
        doc = c.get("/openapi.json").json()
        assert c.get("/docs").status_code == 404  # no docs page: a browser could not send the key
    schemas = doc["components"]["schemas"]
    assert set(schemas["ToolCommand"]["required"]) == {"id", "commandName", "timestamp"}
    assert list(schemas["VaultContext"]["properties"]) == [
        "vaultId", "currentGoal", "systemPrompt", "stateSummary", "activeFiles", "availableTools",
    ]  # fmt: skip
    assert set(schemas["ErrorBody"]["properties"]) == {"code", "message"}
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "UpdateNote `Changes`" in doc["info"]["description"]
    paths = set(doc["paths"])
    assert {"/rpc", "/tools/GetVaultContext", "/tools/ExecuteShell", "/tools/CreateNote"} <= paths
    assert {"/tools/UpdateNote", "/tools/ReportStatus", "/tools/obsidian_query_vault"} <= paths
    assert {"/agent/StartAgent", "/agent/InterruptAgent", "/agent/ToolOverride"} <= paths
    # Every schema says what it is, not what pydantic's base class is.
    text = json.dumps(doc)
    at = text.find("A base class for creating Pydantic models")
    assert at < 0, text[max(at - 300, 0) : at]
    assert "milliseconds" in schemas["ToolCommand"]["properties"]["timestamp"]["description"]
