"""``/undo`` in ``vaultpilot chat``, through the real command (lines on stdin), the real vault
tools and journal, and the scripted model server: twice in a row, after a move into a new
folder, and with a journal that cannot be read (an error, never "already undone")."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.cli.scripted_env import scripted_env
from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn
from vaultpilot.cli.main import app
from vaultpilot.locations import memory_db_path

runner = CliRunner()


def _env(tmp_path: Path, server: ScriptedModelServer) -> dict[str, str]:
    return scripted_env(tmp_path, server.base_url)


def _one_write(arguments: dict[str, Any], answer: str) -> list[ScriptedTurn]:
    """A run that makes one obsidian_vault_manager call, then answers."""
    call = ScriptedCall(name="obsidian_vault_manager", arguments=arguments)
    return [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text=answer)]


def test_a_second_undo_says_the_run_was_already_undone(example_vault: Path, tmp_path: Path) -> None:
    inbox = (example_vault / "Inbox.md").read_bytes()
    move = {"operation": "move_note", "target": "Inbox.md", "destination": "Filed/Later/Inbox.md"}
    turns = _one_write(move, "Filed.")
    with ScriptedModelServer(turns) as server:
        env = _env(tmp_path, server)
        done = runner.invoke(
            app,
            ["chat", "--vault", str(example_vault), "--yes"],
            env=env,
            input="file the inbox\n/undo\n/undo\n/exit\n",
        )
    out = done.output
    assert done.exit_code == 0, out
    assert (example_vault / "Inbox.md").read_bytes() == inbox
    assert not (example_vault / "Filed").exists()  # the folders the move made went with it
    run_id = re.search(r"Undid change set (run-[0-9a-f]{12}): restored ", out)
    assert run_id is not None, out
    assert "removed the empty folders Filed/Later, Filed" in out
    history = runner.invoke(app, ["history", "--json", "--vault", str(example_vault)], env=env)
    sets = json.loads(history.stdout)
    undo = next(s for s in sets if s["undoOf"] == run_id.group(1))
    assert undo["source"] == "chat"  # the chat's /undo, not one of the agent's changes
    run = next(s for s in sets if s["id"] == run_id.group(1))
    assert run["source"] == "agent"
    second = out.split("removed the empty folders", 1)[1]
    assert "Nothing to undo: this chat's run's changes were already undone." in second
    assert f"already undone by {undo['id']}" in second
    assert "has changed no notes" not in out and "Undid change set" not in second


def test_run_lines_leave_out_the_folders_made_to_hold_an_item(
    example_vault: Path, tmp_path: Path
) -> None:
    calls = [
        {"operation": "create_folder", "target": "Plans/2026/Q1"},
        {"operation": "create_note", "target": "Ideas/Soon/Later.md", "content": "later\n"},
    ]
    turns = [
        *(
            ScriptedTurn(tool_calls=[ScriptedCall(name="obsidian_vault_manager", arguments=a)])
            for a in calls
        ),
        ScriptedTurn(text="Made."),
    ]
    with ScriptedModelServer(turns) as server:
        done = runner.invoke(
            app,
            ["ask", "make them", "--vault", str(example_vault), "--yes"],
            env=_env(tmp_path, server),
        )
    out = done.output
    assert done.exit_code == 0, out
    assert "Plans/2026/Q1/ (new folder)" in out and "Ideas/Soon/Later.md (new, +1)" in out
    for parent in ("Plans/ (new", "Plans/2026/ (new", "Ideas/ (new", "Ideas/Soon/ (new"):
        assert parent not in out
    assert "Changed 1 note and 1 folder:" in out


def test_a_journal_that_cannot_be_read_is_not_called_already_undone(
    example_vault: Path, tmp_path: Path
) -> None:
    create = {"operation": "create_note", "target": "Made.md", "content": "made\n"}
    turns = [
        ScriptedTurn(tool_calls=[ScriptedCall(name="obsidian_vault_manager", arguments=create)]),
        ScriptedTurn(text="Made."),
        ScriptedTurn(text="Nothing to change.", delay=1.0),  # a second run, changing nothing
    ]

    def break_journal(server: ScriptedModelServer) -> None:
        """While the second run waits for the model, make the journal's file changes
        unreadable (the first run's change is recorded by then)."""
        deadline = time.monotonic() + 15
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        conn = sqlite3.connect(memory_db_path(tmp_path / "data"))
        conn.execute("DROP TABLE file_changes")
        conn.commit()
        conn.close()

    with ScriptedModelServer(turns) as server:
        breaker = threading.Thread(target=break_journal, args=(server,))
        breaker.start()
        done = runner.invoke(
            app,
            ["chat", "--vault", str(example_vault), "--yes"],
            env=_env(tmp_path, server),
            input="make a note\nanything else?\n/undo\n/exit\n",
        )
        breaker.join()
    out = done.output
    assert (example_vault / "Inbox" / "Made.md").is_file(), out  # made by the run, not undone
    assert "Could not undo: Could not read the change journal" in out, out
    assert "no such table: file_changes" in out
    assert "already undone" not in out and "Nothing to undo" not in out


def test_undo_with_an_id_undoes_that_set_and_the_hint_names_it(
    example_vault: Path, tmp_path: Path
) -> None:
    inbox = (example_vault / "Inbox.md").read_bytes()
    move = {"operation": "move_note", "target": "Inbox.md", "destination": "Filed/Inbox.md"}
    turns = _one_write(move, "Filed.")
    with ScriptedModelServer(turns) as server:
        env = _env(tmp_path, server)
        first = runner.invoke(
            app,
            ["chat", "--vault", str(example_vault), "--yes"],
            env=env,
            input="file the inbox\n/undo\n/undo\n/exit\n",
        )
    assert first.exit_code == 0, first.output
    said = re.search(r"To bring its changes back, /undo ([0-9a-f]{12})\.", first.output)
    assert said is not None, first.output  # a command that works in chat
    undo_id = said.group(1)
    assert (example_vault / "Inbox.md").read_bytes() == inbox
    with ScriptedModelServer([]) as server:
        again = runner.invoke(
            app,
            ["chat", "--vault", str(example_vault)],
            env=_env(tmp_path, server),
            input=f"/undo {undo_id}\n/undo {undo_id}\n/exit\n",
        )
    out = again.output
    assert again.exit_code == 0, out
    lines = out.splitlines()
    undone_line = f"Undid change set {undo_id}: restored Filed, Filed/Inbox.md."
    done = next(i for i, line in enumerate(lines) if line.endswith(undone_line))
    assert re.fullmatch(r"  To bring the changes back: /undo \w{12}", lines[done + 1]), out
    assert not (example_vault / "Inbox.md").exists()  # the move stands again
    assert (example_vault / "Filed" / "Inbox.md").read_bytes() == inbox
    assert f"Could not undo: Change set {undo_id} was already undone by" in out


def test_a_slash_command_refuses_an_argument_it_does_not_take(
    example_vault: Path, tmp_path: Path
) -> None:
    with ScriptedModelServer([]) as server:
        done = runner.invoke(
            app,
            ["chat", "--vault", str(example_vault)],
            env=_env(tmp_path, server),
            input="/new please\n/exit now\n/undo a b\n/exit\n",
        )
    out = done.output
    assert done.exit_code == 0, out
    assert "/new takes no argument (got 'please'): type /new alone." in out
    assert "New conversation" not in out
    assert "/exit takes no argument (got 'now'): type /exit alone." in out
    assert "/undo takes one change-set id at most (got 'a b')" in out
    assert "Conversation" not in out.split("/undo takes", 1)[1].split("\n", 1)[0]


def test_undo_reaches_the_runs_of_a_continued_conversation(
    example_vault: Path, tmp_path: Path
) -> None:
    home = (example_vault / "Home.md").read_bytes()
    append = {"operation": "append_note", "target": "Home.md", "content": "- added\n"}
    turns = _one_write(append, "Added.")
    with ScriptedModelServer(turns) as server:
        env = _env(tmp_path, server)
        first = runner.invoke(
            app, ["chat", "--vault", str(example_vault), "--yes"], env=env,
            input="add a line\n/exit\n",
        )  # fmt: skip
        assert first.exit_code == 0, first.output
        assert (example_vault / "Home.md").read_bytes() != home
        again = runner.invoke(
            app, ["chat", "--continue", "--vault", str(example_vault)], env=env,
            input="/undo\n/exit\n",
        )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "has changed no notes" not in again.output
    assert "Undid change set run-" in again.output
    assert (example_vault / "Home.md").read_bytes() == home
