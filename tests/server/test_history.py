"""The change journal over the server: ChangeHistory, ShowChangeSet and UndoChangeSet as RPC
commands and REST routes on a real uvicorn server, their wire shapes snapshot-pinned, and the
bad inputs (an unknown id, a lost journal blob, a file changed since) that change nothing."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.locations import memory_db_path

from .conftest import Live, snapshot

NOTE = "Reference/Concepts/Idempotency.md"


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".trash", ".obsidian")
    }


def _ids(value: Any, ids: dict[str, str]) -> Any:
    """The change-set ids replaced by their order of appearance (they are random)."""
    if isinstance(value, dict):
        return {k: _ids(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_ids(v, ids) for v in value]
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{12}", value):
        return ids.setdefault(value, f"<set-{len(ids) + 1}>")
    return value


@pytest.fixture
def server(live: Callable[..., Live], vault: Path) -> Live:
    return live(vaults={"vault": vault})


def _manage(server: Live, **arguments: Any) -> dict[str, Any]:
    reply = server.rpc("obsidian_vault_manager", arguments)
    assert reply["success"] and reply["result"]["success"], reply
    result: dict[str, Any] = reply["result"]
    return result


def test_history_show_and_undo_over_rpc(server: Live, vault: Path) -> None:
    before = _hashes(vault)
    edit = {"oldText": "# Idempotency", "newText": "# Idempotency (safe retries)"}
    _manage(server, operation="edit_note", target=NOTE, edits=[edit])
    _manage(server, operation="move_note", target=NOTE, destination="Archive")
    history = server.rpc("ChangeHistory", {"limit": 5})
    assert history["success"], history
    sets = history["result"]["changeSets"]
    assert [s["summary"] for s in sets] == ["move_note", "edit_note"]
    assert all(s["source"] == "server" for s in sets)
    move = sets[0]
    assert move["files"][0] == {
        "kind": "move", "operation": "move_note", "from": NOTE, "to": "Archive/Idempotency.md"
    }  # fmt: skip
    shown = server.rpc("ShowChangeSet", {"id": move["id"][:6]})
    assert shown["success"] and shown["result"]["id"] == move["id"]
    diffs = shown["result"]["diffs"]
    assert diffs[0]["diff"] == f"--- a/{NOTE}\n+++ b/Archive/Idempotency.md\n"
    assert len(diffs) == len(move["files"]) > 1  # the link rewrites are part of the move's set
    edited = server.rpc("ShowChangeSet", {"id": sets[1]["id"]})["result"]["diffs"][0]
    assert "-# Idempotency\n+# Idempotency (safe retries)\n" in edited["diff"]
    undone = server.rpc("UndoChangeSet", {"id": move["id"]})
    assert undone["success"] and undone["result"]["undone"] == move["id"], undone
    last = server.rpc("UndoChangeSet", {"last": False, "id": sets[1]["id"]})
    assert last["success"], last
    assert _hashes(vault) == before
    after = server.rpc("ChangeHistory", {})["result"]["changeSets"]
    assert [s["undoOf"] for s in after[:2]] == [sets[1]["id"], move["id"]]
    ids: dict[str, str] = {}
    snapshot("rpc_history_list", _ids(history, ids))
    snapshot("rpc_history_show", _ids(shown, ids))
    snapshot("rpc_history_undo", _ids(undone, ids))


def test_rest_routes(server: Live, vault: Path) -> None:
    before = _hashes(vault)
    _manage(server, operation="bulk_tag", targets=[NOTE, "Home.md"], metadata={"tags": ["x1"]})
    with server.http() as c:
        listed = c.get("/history", params={"limit": 1}).json()
        (only,) = listed["result"]["changeSets"]
        shown = c.get(f"/history/{only['id']}", params={"vaultId": "vault"}).json()
        assert [d["path"] for d in shown["result"]["diffs"]] == [NOTE, "Home.md"]
        undone = c.post(f"/history/{only['id']}/undo", json={"vaultId": "vault"})
        assert undone.status_code == 200 and undone.json()["result"]["restored"], undone.text
        assert only["undoneBy"] is None
        (again,) = c.get("/history", params={"limit": 2}).json()["result"]["changeSets"][1:]
        assert (
            again["id"] == only["id"]
            and again["undoneBy"] == undone.json()["result"]["changeSetId"]
        )  # the REST routes carry what the journal knows, as /rpc does
        missing = c.get("/history/ffffffffffff")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        # A body that does not validate is answered as UndoChangeSet, like every other answer
        # of the route; nothing is undone.
        for body in ({"skipChanged": "maybe"}, {"vaultId": "vault", "extra": 1}):
            bad = c.post(f"/history/{only['id']}/undo", json=body)
            reply = bad.json()
            assert bad.status_code == 400 and reply["commandName"] == "UndoChangeSet", reply
            assert reply["error"]["code"] == "invalid_argument"
            assert "UndoChangeSet" in reply["error"]["message"], reply
        broken = c.post(
            f"/history/{only['id']}/undo",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        assert broken.status_code == 400 and broken.json()["commandName"] == "UndoChangeSet"
        assert "not valid JSON" in broken.json()["error"]["message"]
    with server.http() as c:
        c.headers.pop("Authorization")
        assert c.get("/history").status_code == 401
        assert c.post(f"/history/{only['id']}/undo").status_code == 401
    assert _hashes(vault) == before


def test_bad_input_changes_nothing(server: Live, vault: Path, data_dir: Path) -> None:
    _manage(server, operation="update_note", target=NOTE, content="# New text\n")
    (changed,) = server.rpc("ChangeHistory", {})["result"]["changeSets"]
    state = _hashes(vault)
    unknown = server.rpc("UndoChangeSet", {"id": "0123456789ab"})
    assert unknown["error"]["code"] == "not_found"
    assert "No change set '0123456789ab'" in unknown["error"]["message"]
    both = server.rpc("UndoChangeSet", {"id": changed["id"], "last": True})
    assert both["error"]["code"] == "invalid_argument" and "not both" in both["error"]["message"]
    neither = server.rpc("UndoChangeSet", {})
    assert neither["error"]["code"] == "invalid_argument"
    # A file changed since the change set: refused, named, nothing written.
    saved = (vault / NOTE).read_bytes()
    (vault / NOTE).write_text("# Edited by hand\n", encoding="utf-8")
    state = _hashes(vault)
    stale = server.rpc("UndoChangeSet", {"id": changed["id"]})
    assert stale["error"]["code"] == "stale_version" and NOTE in stale["error"]["message"]
    assert _hashes(vault) == state
    # The stored content lost: refused before anything is written.
    (vault / NOTE).write_bytes(saved)
    conn = sqlite3.connect(memory_db_path(data_dir))
    conn.execute(
        "DELETE FROM journal_blobs WHERE hash = (SELECT hash_before FROM file_changes"
        " WHERE set_id = ?)",
        (changed["id"],),
    )
    conn.commit()
    conn.close()
    state = _hashes(vault)
    lost = server.rpc("UndoChangeSet", {"id": changed["id"]})
    assert lost["error"]["code"] == "storage_error", lost
    assert (
        "lost the stored content" in lost["error"]["message"] and NOTE in lost["error"]["message"]
    )
    assert _hashes(vault) == state
