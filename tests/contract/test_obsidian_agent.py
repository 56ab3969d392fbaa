"""obsidian_agent as a process: every success and error case, ids, logs, and path escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import IDS, request, run_agent, tree


def note_request(action: str, vault: Path | str, **payload: Any) -> dict[str, Any]:
    return request("obsidian_agent", action, {"vault_path": str(vault), **payload})


# --- success cases --------------------------------------------------------------------------


def test_create_in_subfolders_and_name_with_md(sandbox: Path) -> None:
    vault = sandbox / "vault"
    for name, path in [
        ("Projects/2025/Q1/Goals", "Projects/2025/Q1/Goals.md"),
        ("Ideas.md", "Ideas.md"),
    ]:
        reply = run_agent(
            "obsidian_agent", note_request("create_note", vault, note_name=name, content="é\n")
        ).reply
        assert reply["result"]["data"] == f"Note '{name}' created successfully."
        assert (vault / path).read_bytes() == "é\n".encode()
    assert not (vault / "Ideas.md.md").exists()


def test_read_returns_text_with_lf_and_without_bom(sandbox: Path) -> None:
    vault = sandbox / "vault"
    (vault / "Win.md").write_bytes(b"\xef\xbb\xbfline 1\r\nline 2\r\n")
    reply = run_agent("obsidian_agent", note_request("read_note", vault, note_name="Win")).reply
    assert reply["result"] == {"output_type": "text", "data": "line 1\nline 2\n", "metadata": None}


def test_update_keeps_line_endings_and_bom(sandbox: Path) -> None:
    vault = sandbox / "vault"
    (vault / "Win.md").write_bytes(b"\xef\xbb\xbfold\r\n")
    sent = note_request("update_note", vault, note_name="Win.md", content="new\nlines\n")
    reply = run_agent("obsidian_agent", sent).reply
    assert reply["result"]["data"] == "Note 'Win.md' updated successfully."
    assert (vault / "Win.md").read_bytes() == b"\xef\xbb\xbfnew\r\nlines\r\n"


def test_relative_vault_path_is_resolved_against_the_working_directory(sandbox: Path) -> None:
    sent = note_request("read_note", "vault", note_name="Projects/Plan")
    reply = run_agent("obsidian_agent", sent, cwd=sandbox).reply
    assert reply["result"]["data"] == "# Plan\n"


def test_ids_and_api_version_are_echoed(sandbox: Path) -> None:
    sent = note_request("read_note", sandbox / "vault", note_name="Projects/Plan")
    sent.update(api_version="v1", request_id=IDS["request_id"].upper(), context="why")
    run = run_agent("obsidian_agent", sent)
    assert run.reply["api_version"] == "V1"
    for key in IDS:
        assert run.reply[key] == IDS[key]
    # Every log line after parsing carries the correlation id; the last one says how it ended.
    assert all(log["correlation_id"] == IDS["correlation_id"] for log in run.logs)
    assert run.logs[-1]["event"] == "request.done" and run.logs[-1]["code"] == 0


def test_absent_optional_ids_stay_null(sandbox: Path) -> None:
    sent = {
        "request_id": IDS["request_id"],
        "tool": "obsidian_agent",
        "action": "read_note",
        "payload": {"vault_path": str(sandbox / "vault"), "note_name": "Projects/Plan"},
    }
    reply = run_agent("obsidian_agent", sent).reply
    assert reply["code"] == 0
    assert [reply[k] for k in ("api_version", "plan_id", "task_id", "correlation_id")] == [None] * 4


# --- code 1: the request cannot be parsed ---------------------------------------------------

VALID = {
    "request_id": IDS["request_id"],
    "tool": "obsidian_agent",
    "action": "read_note",
    "payload": {"vault_path": "v", "note_name": "n"},
}


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b"", "stdin was empty"),
        (b"   \n", "stdin was empty"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "expected a JSON object, got array"),
        (b'{"a": 1} {"b": 2}', "Extra data"),
        (b'{"a": NaN}', "NaN is not valid JSON"),
        (b'{"a": 1e999}', "out of range"),
        (b'{"a": "\\ud800"}', "lone UTF-16 surrogate"),
        (b"[" * 100_000, "invalid JSON"),
        (json.dumps({**VALID, "request_id": "abc"}).encode(), "must be a UUID"),
        (json.dumps({**VALID, "request_id": None}).encode(), "must be a UUID"),
        (
            json.dumps({k: v for k, v in VALID.items() if k != "request_id"}).encode(),
            "missing field 'request_id'",
        ),
        (json.dumps({**VALID, "payload": [1]}).encode(), "'payload' must be a JSON object"),
        (json.dumps({**VALID, "payload": None}).encode(), "'payload' must be a JSON object"),
        (
            json.dumps({k: v for k, v in VALID.items() if k != "payload"}).encode(),
            "missing field 'payload'",
        ),
        (json.dumps({**VALID, "api_version": "V2"}).encode(), "'api_version' must be \"V1\""),
        (json.dumps({**VALID, "tool": 7}).encode(), "'tool' must be a string, got number"),
        (json.dumps({**VALID, "context": None}).encode(), "'context' must be a string"),
        (json.dumps({**VALID, "plan_id": "plan-1"}).encode(), "'plan_id' must be a UUID"),
    ],
)
def test_unparseable_requests_get_code_1_and_a_fresh_id(stdin: bytes, message: str) -> None:
    reply = run_agent("obsidian_agent", stdin).reply
    assert (reply["status"], reply["code"], reply["result"]) == ("error", 1, None)
    assert reply["error"].startswith("Failed to parse request: ")
    assert message in reply["error"]
    assert reply["request_id"] != IDS["request_id"]
    assert [reply[k] for k in ("plan_id", "task_id", "correlation_id")] == [None] * 3


def test_every_wrong_envelope_field_is_named_at_once() -> None:
    bad = {"request_id": "x", "tool": 1, "payload": 2}
    error = run_agent("obsidian_agent", bad).reply["error"]
    for part in ("'request_id'", "'tool'", "missing field 'action'", "'payload'"):
        assert part in error


# --- code 2: the request is invalid ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "action", "payload", "error"),
    [
        (
            "git_agent",
            "read_note",
            {},
            "This is obsidian_agent, but the request names tool "
            "'git_agent'. Send it to 'git_agent', or set tool to 'obsidian_agent'.",
        ),
        (
            "obsidian_agent",
            "delete_note",
            {},
            "Unknown action 'delete_note'. Use one of: create_note, read_note, update_note.",
        ),
        ("obsidian_agent", "read_note", {"note_name": "A"}, "Missing 'vault_path' in parameters"),
        (
            "obsidian_agent",
            "read_note",
            {"vault_path": 5, "note_name": "A"},
            "Invalid 'vault_path' in parameters: expected a string, got number",
        ),
        ("obsidian_agent", "read_note", {"vault_path": "v"}, "Missing 'note_name' in parameters"),
        (
            "obsidian_agent",
            "read_note",
            {"vault_path": "v", "note_name": ""},
            "Invalid 'note_name' in parameters: must not be empty",
        ),
        (
            "obsidian_agent",
            "read_note",
            {"vault_path": "", "note_name": "A"},
            "Invalid 'vault_path' in parameters: must not be empty",
        ),
        (
            "obsidian_agent",
            "create_note",
            {"vault_path": "v", "note_name": "A"},
            "Missing 'content' in parameters",
        ),
        (
            "obsidian_agent",
            "update_note",
            {"vault_path": "v", "note_name": "A", "content": None},
            "Invalid 'content' in parameters: expected a string, got null",
        ),
        (
            "obsidian_agent",
            "create_note",
            {"vault_path": "v", "note_name": ["A"], "content": ""},
            "Invalid 'note_name' in parameters: expected a string, got array",
        ),
    ],
)
def test_invalid_requests_get_code_2(tool: str, action: str, payload: Any, error: str) -> None:
    sent = request(tool, action, payload)
    reply = run_agent("obsidian_agent", sent).reply
    assert (reply["status"], reply["code"], reply["result"], reply["error"]) == (
        "error",
        2,
        None,
        error,
    )
    assert reply["request_id"] == sent["request_id"]


# --- code 3: the vault operation failed -----------------------------------------------------


def test_create_never_overwrites(sandbox: Path) -> None:
    vault = sandbox / "vault"
    before = tree(sandbox)
    sent = note_request("create_note", vault, note_name="Projects/Plan", content="lost?")
    reply = run_agent("obsidian_agent", sent).reply
    assert reply["code"] == 3
    assert reply["error"] == "Note 'Projects/Plan' already exists; use update_note to change it."
    assert tree(sandbox) == before


def test_update_and_read_of_a_missing_note(sandbox: Path) -> None:
    vault = sandbox / "vault"
    before = tree(sandbox)
    update = note_request("update_note", vault, note_name="Nope", content="x")
    reply = run_agent("obsidian_agent", update).reply
    assert (reply["code"], reply["error"]) == (
        3,
        "Note 'Nope' does not exist ('Nope.md' not found); use create_note to create it.",
    )
    read = run_agent("obsidian_agent", note_request("read_note", vault, note_name="Nope")).reply
    assert (read["code"], read["error"]) == (
        3,
        "Note 'Nope' does not exist in the vault ('Nope.md' not found).",
    )
    assert tree(sandbox) == before


@pytest.mark.parametrize("vault_name", ["missing", "outside/secret.md"])
def test_vault_must_be_an_existing_folder(sandbox: Path, vault_name: str) -> None:
    reply = run_agent(
        "obsidian_agent", note_request("read_note", sandbox / vault_name, note_name="A")
    ).reply
    assert reply["code"] == 3 and "set vault_path to the vault" in reply["error"]


def test_a_binary_note_is_refused(sandbox: Path) -> None:
    (sandbox / "vault" / "blob.md").write_bytes(b"\x00\x01\xff")
    reply = run_agent(
        "obsidian_agent", note_request("read_note", sandbox / "vault", note_name="blob")
    ).reply
    assert reply["code"] == 3 and "not a text file" in reply["error"]


def test_a_folder_is_not_a_note(sandbox: Path) -> None:
    (sandbox / "vault" / "Dir.md").mkdir()
    for action, name in [("read_note", "Dir"), ("create_note", "Projects/"), ("read_note", ".")]:
        payload = {"note_name": name} | ({"content": "x"} if action != "read_note" else {})
        reply = run_agent(
            "obsidian_agent", note_request(action, sandbox / "vault", **payload)
        ).reply
        assert reply["code"] == 3, (action, name)


ESCAPES = [
    "../escape",
    "../outside/secret",
    "Projects/../../outside/secret",
    "/etc/passwd",
    "link/secret",
    "link/new-note",
    "evil",
    "a\\..\\..\\outside\\secret",
    "C:/Windows/evil",
    "x\x00y",
]


@pytest.mark.parametrize("action", ["create_note", "update_note"])
@pytest.mark.parametrize("name", [*ESCAPES, ".obsidian/app", ".git/config", ".trash/x"])
def test_writes_that_escape_are_refused_and_write_nothing(
    sandbox: Path, action: str, name: str
) -> None:
    before = tree(sandbox)
    sent = note_request(action, sandbox / "vault", note_name=name, content="pwned\n")
    reply = run_agent("obsidian_agent", sent).reply
    assert (reply["status"], reply["code"], reply["result"]) == ("error", 3, None)
    assert tree(sandbox) == before


@pytest.mark.parametrize("name", ESCAPES)
def test_reads_that_escape_are_refused(sandbox: Path, name: str) -> None:
    reply = run_agent(
        "obsidian_agent", note_request("read_note", sandbox / "vault", note_name=name)
    ).reply
    assert (reply["code"], reply["result"]) == (3, None)
    assert "secret" not in json.dumps(reply["result"])


def test_a_crash_inside_the_agent_still_gives_one_json_reply() -> None:
    """serve_once, the agents' shared main loop, with a handler that blows up."""
    code = (
        "from vaultpilot.contract.wire import serve_once, reply\n"
        "def boom(raw, log):\n    raise RuntimeError('kaput')\n"
        "raise SystemExit(serve_once('obsidian_agent', boom,"
        " lambda m: reply(None, code=1, error=m)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=b"{}", capture_output=True, timeout=30, check=False
    )
    assert proc.returncode == 0
    reply = json.loads(proc.stdout)
    assert reply["code"] == 1
    assert reply["error"] == "obsidian_agent stopped before answering: RuntimeError"
    logs = [json.loads(line) for line in proc.stderr.decode().splitlines()]
    crash = next(log for log in logs if log["event"] == "agent.crashed")
    assert "RuntimeError: kaput" in crash["traceback"]


# --- protected reads, hidden names and the vault's write lock -----------------------------------


@pytest.mark.parametrize("name", [".obsidian/app", ".trash/old", ".git/config"])
def test_reads_of_protected_folders_are_refused(sandbox: Path, name: str) -> None:
    vault = sandbox / "vault"
    target = vault / f"{name}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("private settings\n", encoding="utf-8")
    reply = run_agent("obsidian_agent", note_request("read_note", vault, note_name=name)).reply
    assert (reply["code"], reply["result"]) == (3, None)
    assert "note tools do not read it" in reply["error"]
    assert "private settings" not in json.dumps(reply)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (".hidden/x", "hidden name"),
        (".obsidian./x", "ending in a dot or a space"),
        (".git /config", "ending in a dot or a space"),
        ("Note ", "ending in a dot or a space"),
        ("CON", "Windows reserves"),
        ("Projects/a?b", "'?'"),
    ],
)
def test_hidden_and_non_portable_names_are_not_created(sandbox: Path, name: str, says: str) -> None:
    before = tree(sandbox)
    sent = note_request("create_note", sandbox / "vault", note_name=name, content="x\n")
    reply = run_agent("obsidian_agent", sent).reply
    assert reply["code"] == 3 and says in reply["error"], reply["error"]
    assert tree(sandbox) == before


def test_a_write_waits_for_the_vault_lock_then_answers_busy(sandbox: Path, data_dir: Path) -> None:
    from vaultpilot.locations import vault_data_dir
    from vaultpilot.vault.lock import LOCK_NAME, write_lock

    vault = sandbox / "vault"
    before = tree(sandbox)
    env = {**os.environ, "VAULTPILOT_LOCK_WAIT": "0.3"}
    with write_lock(vault_data_dir(vault, data_dir) / LOCK_NAME):  # another writer at work
        for action in ("create_note", "update_note"):
            sent = note_request(action, vault, note_name="Projects/Plan", content="mine\n")
            reply = run_agent("obsidian_agent", sent, env=env).reply
            assert reply["code"] == 3
            assert reply["error"].startswith("Another vaultpilot process is writing to this vault")
    assert tree(sandbox) == before
    sent = note_request("update_note", vault, note_name="Projects/Plan", content="mine\n")
    assert run_agent("obsidian_agent", sent, env=env).reply["code"] == 0


def test_writes_are_journaled_and_undone(sandbox: Path, data_dir: Path) -> None:
    from vaultpilot.locations import memory_db_path
    from vaultpilot.memory.journal import Journal

    vault = sandbox / "vault"
    before = tree(sandbox)
    for action, name in (("create_note", "New/Idea"), ("update_note", "Projects/Plan")):
        sent = note_request(action, vault, note_name=name, content="written\n")
        assert run_agent("obsidian_agent", sent).reply["code"] == 0
    journal = Journal(memory_db_path(data_dir))
    sets = journal.change_sets(str(vault.resolve()))
    assert [(s.source, s.summary) for s in sets] == [
        ("obsidian_agent", "update_note"), ("obsidian_agent", "create_note"),
    ]  # fmt: skip
    assert sets[1].paths() == ["New/Idea.md"]
    journal.close()
    for _ in sets:  # the newest first, as a person would, with the same command
        command = [str(Path(sys.executable).parent / "vaultpilot"), "undo", "--last"]
        done = subprocess.run(
            [*command, "--vault", str(vault)], capture_output=True, text=True, check=False,
            timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert {k: v for k, v in tree(sandbox).items() if not k.startswith("vault/.trash")} == before


def test_the_vaults_rules_hold(sandbox: Path, tmp_path: Path) -> None:
    vault = sandbox / "vault"
    (vault / "Secrets").mkdir()
    (vault / "Secrets" / "pin.md").write_text("4242\n", encoding="utf-8")
    (vault / "Diary.md").write_text("dear diary\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(
        '[rules]\ndeny = ["Secrets"]\nprivate = ["Diary.md"]\nread_only = ["Projects"]\n',
        encoding="utf-8",
    )
    env = {**os.environ, "VAULTPILOT_CONFIG": str(config)}
    before = tree(sandbox)
    read = run_agent(
        "obsidian_agent", note_request("read_note", vault, note_name="Secrets/pin"), env=env
    ).reply
    assert read["code"] == 3 and "deny" in read["error"] and "4242" not in json.dumps(read)
    diary = run_agent(
        "obsidian_agent", note_request("read_note", vault, note_name="Diary"), env=env
    ).reply
    assert diary["code"] == 0 and "private" in diary["result"]["data"]
    for action, name in (("update_note", "Projects/Plan"), ("create_note", "Secrets/new")):
        sent = note_request(action, vault, note_name=name, content="x\n")
        reply = run_agent("obsidian_agent", sent, env=env).reply
        assert reply["code"] == 3 and "was not run" in reply["error"]
    # A vault_path inside the vault keeps to the vault's rules.
    inside = run_agent(
        "obsidian_agent", note_request("read_note", vault / "Secrets", note_name="pin"), env=env
    ).reply
    assert inside["code"] == 3 and "deny" in inside["error"] and "4242" not in json.dumps(inside)
    sent = note_request("update_note", vault / "Projects", note_name="Plan", content="x\n")
    assert run_agent("obsidian_agent", sent, env=env).reply["code"] == 3
    assert tree(sandbox) == before


def test_a_write_in_a_sub_folder_is_the_vaults(sandbox: Path, data_dir: Path) -> None:
    from vaultpilot.locations import memory_db_path
    from vaultpilot.memory.journal import Journal

    vault = sandbox / "vault"
    sent = note_request("update_note", vault / "Projects", note_name="Plan", content="new\n")
    assert run_agent("obsidian_agent", sent).reply["code"] == 0
    journal = Journal(memory_db_path(data_dir))
    (latest,) = journal.change_sets(str(vault.resolve()))
    assert latest.paths() == ["Projects/Plan.md"]  # as the vault names it, in the vault's journal
    journal.close()
