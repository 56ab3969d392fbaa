"""The RPC commands over POST /rpc and the REST routes: results, the envelope, the error codes.

Envelopes are pinned as snapshots (``snapshots/rpc_*.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from vaultpilot.errors import (
    AlreadyExistsError,
    ConfirmationRequiredError,
    ExternalError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
    RequestError,
    SetupError,
    StaleVersionError,
    StorageError,
    UnreadableNoteError,
    VaultBusyError,
    VaultpilotError,
)
from vaultpilot.server import create_app
from vaultpilot.server.envelope import error_for

from .conftest import command, make_settings, snapshot

ENVELOPE_KEYS = ["id", "commandName", "success", "result", "error"]


def rpc(client: TestClient, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = client.post("/rpc", json=command(name, arguments))
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert list(body) == ENVELOPE_KEYS
    return body


def test_get_vault_context_is_iagentvaultcontext_exactly(client: TestClient) -> None:
    reply = rpc(client, "GetVaultContext", {"VaultID": "vault"})
    assert reply["success"] and reply["error"] is None
    result = reply["result"]
    assert list(result) == [
        "vaultId", "currentGoal", "systemPrompt", "stateSummary", "activeFiles", "availableTools",
    ]  # fmt: skip
    assert result["vaultId"] == "vault" and result["currentGoal"] == ""
    assert "ExecuteShell" not in result["availableTools"]  # off by default
    assert "obsidian_vault_manager" in result["availableTools"]
    assert "47 notes" in result["stateSummary"]
    assert result["systemPrompt"].startswith("You are vaultpilot")  # the built-in agent's own
    assert "## The vault" in result["systemPrompt"]
    snapshot("rpc_get_vault_context", {**reply, "result": {**result, "systemPrompt": "<prompt>"}})


def test_create_and_update_note_in_every_form(client: TestClient, vault: Path) -> None:
    created = rpc(client, "CreateNote", {"FilePath": "Inbox/Idea", "Content": "# Idea\n\nFirst.\n"})
    assert created["result"]["NoteURI"] == "obsidian://open?vault=vault&file=Inbox%2FIdea.md"
    assert (vault / "Inbox/Idea.md").read_text() == "# Idea\n\nFirst.\n"
    snapshot("rpc_create_note", created)

    whole = rpc(
        client, "UpdateNote", {"FilePath": "Inbox/Idea.md", "Changes": "# Idea\n\nSecond.\n"}
    )
    assert whole["success"] and (vault / "Inbox/Idea.md").read_text() == "# Idea\n\nSecond.\n"
    snapshot("rpc_update_note", whole)

    appended = rpc(
        client, "UpdateNote", {"FilePath": "Inbox/Idea.md", "Changes": {"append": "More.\n"}}
    )
    assert appended["success"]
    assert (vault / "Inbox/Idea.md").read_text().endswith("Second.\nMore.\n")

    props = {"frontmatter": {"status": "draft", "tags": ["idea"]}}
    rpc(client, "UpdateNote", {"FilePath": "Inbox/Idea.md", "Changes": props})
    text = (vault / "Inbox/Idea.md").read_text()
    assert text.startswith("---\n") and "status: draft" in text and "More." in text

    replaced = rpc(
        client,
        "UpdateNote",
        {
            "filePath": "Inbox/Idea.md",
            "changes": {"content": "Body only.\n", "frontmatter": {"status": None}},
        },
    )
    assert replaced["success"]
    text = (vault / "Inbox/Idea.md").read_text()
    assert "status" not in text and text.endswith("Body only.\n") and "idea" in text

    stale = rpc(
        client,
        "UpdateNote",
        {
            "FilePath": "Inbox/Idea.md",
            "Changes": {"content": "x", "expectedVersion": "0000000000000000"},
        },
    )
    assert stale["error"]["code"] == "stale_version"
    current = replaced["result"]["Version"]
    fresh = rpc(
        client,
        "UpdateNote",
        {"FilePath": "Inbox/Idea.md", "Changes": {"content": "New.\n", "expectedVersion": current}},
    )
    assert fresh["success"]


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("CreateNote", {"FilePath": "Projects/../../etc/passwd", "Content": "x"}, "path_refused"),
        ("CreateNote", {"FilePath": ".obsidian/app.md", "Content": "x"}, "path_refused"),
        ("CreateNote", {"FilePath": "Reference/Concepts/Idempotency.md"}, "already_exists"),
        ("CreateNote", {"Content": "x"}, "invalid_argument"),
        ("CreateNote", {"FilePath": "a.md", "Colour": "red"}, "invalid_argument"),
        ("UpdateNote", {"FilePath": "Nowhere.md", "Changes": "x"}, "not_found"),
        ("UpdateNote", {"FilePath": "a.md", "Changes": {}}, "invalid_argument"),
        (
            "UpdateNote",
            {"FilePath": "a.md", "Changes": {"content": "a", "append": "b"}},
            "invalid_argument",
        ),
        ("UpdateNote", {"FilePath": "a.md", "Changes": 7}, "invalid_argument"),
        ("GetVaultContext", {"VaultID": "nope"}, "not_found"),
        ("ExecuteShell", {"Command": "ls"}, "setup_required"),
        ("ReportStatus", {"Status": ""}, "invalid_argument"),
        ("obsidian_query_vault", {"queryType": "teleport"}, "invalid_argument"),
        (
            "obsidian_vault_manager",
            {"operation": "delete_note", "target": "Nowhere/Gone.md", "confirmDestructive": True},
            "not_found",
        ),
        (
            "obsidian_vault_manager",
            {"operation": "delete_note", "target": "Reference/Concepts/Idempotency.md"},
            "confirmation_required",
        ),
        (
            "obsidian_get_context",
            {"contextType": "read_note", "target": "x", "VaultID": 3},
            "invalid_argument",
        ),
        ("InterruptAgent", {"force": True}, "not_found"),
        ("ToolOverride", {"toolName": "obsidian_query_vault"}, "not_found"),
        ("ApproveToolCall", {"callId": "c9", "approved": True}, "not_found"),
        ("StartAgent", {"goal": "hello"}, "setup_required"),
        ("Subscribe", {}, "invalid_argument"),
    ],
)
def test_failures_have_a_specific_code_and_message(
    client: TestClient, name: str, arguments: dict[str, Any], code: str
) -> None:
    reply = rpc(client, name, arguments)
    assert reply["success"] is False and reply["result"] is None
    assert reply["error"]["code"] == code, reply["error"]
    message = reply["error"]["message"]
    assert message and "Traceback" not in message and len(message) < 1200


def test_failure_envelopes_snapshot(client: TestClient) -> None:
    replies = {
        "unknown_vault": rpc(client, "GetVaultContext", {"VaultID": "nope"}),
        "bad_changes": rpc(client, "UpdateNote", {"FilePath": "a.md", "Changes": {"bogus": 1}}),
        "missing_note": rpc(client, "UpdateNote", {"FilePath": "Nowhere.md", "Changes": "x"}),
        "shell_off": rpc(client, "ExecuteShell", {"Command": "ls"}),
        "bad_tool_args": rpc(client, "obsidian_query_vault", {"queryType": "teleport"}),
    }
    bad = client.post("/rpc", json={"id": "z", "commandName": "Teleport", "timestamp": 1})
    assert bad.status_code == 400
    replies["unknown_command"] = bad.json()
    huge = command("CreateNote", {"FilePath": "Huge.md", "Content": "x" * (4 * 1024 * 1024)})
    too_large = client.post("/rpc", json=huge)
    assert too_large.status_code == 413
    replies["payload_too_large"] = too_large.json()
    lone = b'{"id": "s", "commandName": "ReportStatus", "arguments": {"Status": "\\ud800"}}'
    surrogate = client.post("/rpc", content=lone, headers={"Content-Type": "application/json"})
    assert surrogate.status_code == 400
    replies["lone_surrogate"] = surrogate.json()
    snapshot("rpc_failures", replies)


def test_malformed_bodies_get_400_and_an_envelope(client: TestClient) -> None:
    cases = {
        b"not json": "not valid JSON",
        b"[1, 2]": "A command must be a JSON object: {id, commandName, arguments, timestamp}.",
        b"[]": "A command must be a JSON object",
        b'"x"': "A command must be a JSON object",
        b'{"id": "1"}': "'commandName' is required",
        b'{"id": "1", "commandName": "ReportStatus", "arguments": {}, "timestamp": 1, "x": 2}': (
            "unknown argument 'x'"
        ),
        b'{"id": "", "commandName": "ReportStatus", "arguments": [], "timestamp": "soon"}': (
            "'timestamp'"
        ),
    }
    for body, fragment in cases.items():
        reply = client.post("/rpc", content=body, headers={"Content-Type": "application/json"})
        assert reply.status_code == 400, body
        envelope = reply.json()
        assert list(envelope) == ENVELOPE_KEYS and envelope["error"]["code"] == "invalid_argument"
        assert fragment in envelope["error"]["message"], envelope


def test_rest_routes_share_the_code_and_use_http_statuses(client: TestClient) -> None:
    ok = client.post("/tools/CreateNote", json={"FilePath": "R.md", "Content": "r"})
    assert ok.status_code == 200 and ok.json()["result"]["Success"] is True
    again = client.post("/tools/CreateNote", json={"FilePath": "R.md", "Content": "r"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_exists"
    missing = client.post("/tools/GetVaultContext", json={"VaultID": "nope"})
    assert missing.status_code == 404
    query = client.post(
        "/tools/obsidian_query_vault",
        json={"queryType": "semantic_search", "query": "rollback", "limit": 2, "VaultID": "vault"},
    )
    assert query.status_code == 200 and query.json()["result"]["results"]
    invalid = client.post("/tools/obsidian_query_vault", json={"queryType": "nope"})
    assert invalid.status_code == 400
    assert client.post("/tools/ReportStatus", json={}).json()["error"]["message"] == (
        "Invalid arguments for ReportStatus: 'Status' is required."
    )
    (listed,) = client.get("/vaults").json()
    index = listed.pop("index")
    assert listed == {
        "vaultId": "vault",
        "name": "vault",
        "embedding": {
            "state": "off",
            "chunksEmbedded": 0,
            "chunks": 0,
            "notesPending": 48,
            "model": None,
            "rate": 0.0,
            "problem": None,
        },
    }
    # The file watcher keeps the index live; the times say when it last took changes in.
    assert index["state"] in ("starting", "live") and index["reason"] is None
    assert set(index) == {"state", "reason", "lastSync", "lastFullSync"}
    assert client.get("/rpc").status_code == 405
    assert client.get("/nothing").json()["error"]["code"] == "not_found"


def test_several_vaults_by_id(example_vault: Path, tmp_path: Path, data_dir: Path) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(example_vault, other)
    settings = make_settings({"work": example_vault, "home": other}, data_dir)
    from vaultpilot.server.keyfile import ensure_key

    key = ensure_key(settings.key_path)[0]
    with TestClient(create_app(settings), base_url="http://localhost:34700") as c:
        c.headers["Authorization"] = f"Bearer {key}"
        made = rpc(c, "CreateNote", {"FilePath": "Only Home.md", "VaultID": "home"})
        # A bare name goes to the vault's folder for new notes (app.json: Inbox).
        assert made["success"] and (other / "Inbox/Only Home.md").exists()
        assert not (example_vault / "Inbox/Only Home.md").exists()
        unnamed = rpc(c, "GetVaultContext")
        assert unnamed["error"]["message"] == (
            "Name the vault with VaultID: this server serves several (work, home)."
        )
        unknown = rpc(c, "GetVaultContext", {"VaultID": "garden"})
        assert unknown["error"] == {
            "code": "not_found",
            "message": "Unknown VaultID 'garden'. Known vaults: work, home.",
        }
        home = rpc(c, "GetVaultContext", {"vaultId": "home"})["result"]
        assert home["vaultId"] == "home"


def test_report_status_is_kept_and_summarised(client: TestClient) -> None:
    assert rpc(client, "ReportStatus", {"Status": "planning", "Message": "Planning phase"})[
        "result"
    ] == {"Success": True}
    summary = rpc(client, "GetVaultContext")["result"]["stateSummary"]
    assert "Last reported status: planning: Planning phase" in summary


def test_the_error_mapping_covers_the_whole_tree() -> None:
    cases: list[tuple[VaultpilotError, str, int]] = [
        (InvalidArgumentError("x"), "invalid_argument", 400),
        (NotFoundError("x"), "not_found", 404),
        (AlreadyExistsError("x"), "already_exists", 409),
        (PathRefusedError("x"), "path_refused", 403),
        (StaleVersionError("x"), "stale_version", 409),
        (ConfirmationRequiredError("x"), "confirmation_required", 409),
        (RequestError("x"), "request_refused", 403),
        (SetupError("x"), "setup_required", 409),
        (StorageError("x"), "storage_error", 503),
        (UnreadableNoteError("x"), "unreadable_note", 422),
        (VaultBusyError("x"), "vault_busy", 503),
        (ExternalError("x"), "external_error", 502),
        (InternalError("x"), "internal_error", 500),
        (VaultpilotError("x"), "internal_error", 500),
    ]
    for err, code, status in cases:
        assert error_for(err) == (code, status)


@pytest.mark.parametrize(
    "frame", ["[" * 100_000 + "]" * 100_000, '{"timestamp": ' + "9" * 5000 + "}"]
)
def test_a_frame_too_deep_or_a_number_too_long_is_invalid_not_internal(frame: str) -> None:
    import asyncio

    from vaultpilot.server.rpc import dispatch_text

    reply = asyncio.run(dispatch_text(None, frame, None))  # type: ignore[arg-type]
    assert reply["error"]["code"] == "invalid_argument", reply
    assert "nested too deeply" in reply["error"]["message"]
