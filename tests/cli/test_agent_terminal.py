"""``vaultpilot ask`` as a person reads it, through the real command, the real vault tools and
journal, and the scripted model server; and the pure pieces of the terminal view."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from tests.cli.scripted_env import scripted_env
from vaultpilot.agent.events import ApprovalRequired, FileCount, StepLabel
from vaultpilot.agent.testing import ScriptedCall, ScriptedModelServer, ScriptedTurn
from vaultpilot.cli.agent_session import Session
from vaultpilot.cli.agent_view import TerminalView, approval_block, step_line
from vaultpilot.cli.chat import ChatState, slash
from vaultpilot.cli.main import app
from vaultpilot.cli.replay import replay
from vaultpilot.cli.steps import counts, label, line_counts, outcome, render
from vaultpilot.cli.stream import WordWrapper
from vaultpilot.memory.db import connect

runner = CliRunner()
NOTE = "# Test\n\nThe second line.\n"


@pytest.fixture
def vault(example_vault: Path) -> Path:
    (example_vault / "test.md").write_text(NOTE, encoding="utf-8")
    return example_vault


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield scripted_env(tmp_path, columns=120)


def _ask(
    env: dict[str, str], server: ScriptedModelServer, vault: Path, text: str, stdin: str = ""
) -> Any:
    return runner.invoke(
        app,
        ["ask", text, "--vault", str(vault)],
        env={**env, "VAULTPILOT_BASE_URL": server.base_url},
        input=stdin,
    )


def _delete(target: str) -> ScriptedCall:
    return ScriptedCall(
        name="obsidian_vault_manager",
        arguments={"operation": "delete_note", "target": target, "confirmDestructive": True},
    )


def test_an_edit_shows_its_line_counts_and_the_run_ends_with_what_changed(
    vault: Path, env: dict[str, str]
) -> None:
    edit = {
        "operation": "edit_note",
        "target": "test.md",
        "edits": [{"oldText": "The second line.", "newText": "Line two.\nLine three."}],
    }
    turns = [
        ScriptedTurn(tool_calls=[ScriptedCall(name="obsidian_vault_manager", arguments=edit)]),
        ScriptedTurn(text="Done: **two** lines now."),
    ]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "split the second line")
    assert done.exit_code == 0, done.output
    out = done.output
    assert "● Edit(test.md)  +2 −1" in out
    assert "Done: two lines now." in out  # Markdown markers are styling, not text
    assert "Changed 1 note:" in out and "test.md +2 −1" in out
    undo = out.split("Undo it with: ", 1)[1].split()[:3]
    assert undo[:2] == ["vaultpilot", "undo"]
    assert re.fullmatch(r"run-[0-9a-f]{12}", undo[2]), undo  # the whole run id
    back = runner.invoke(app, ["undo", undo[2], "--vault", str(vault)], env=env)
    assert back.exit_code == 0, back.output
    assert (vault / "test.md").read_text(encoding="utf-8") == NOTE


def test_dont_ask_again_covers_the_same_operation_for_the_rest_of_the_run(
    vault: Path, env: dict[str, str]
) -> None:
    turns = [
        ScriptedTurn(tool_calls=[_delete("test.md")]),
        ScriptedTurn(tool_calls=[_delete("Inbox.md")]),
        ScriptedTurn(text="Both gone."),
    ]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "delete two notes", stdin="2\n")
    assert done.exit_code == 0, done.output
    assert done.output.count("3 No, and tell it why") == 1
    assert "-The second line." in done.output  # the approval showed what goes
    assert not (vault / "test.md").exists() and not (vault / "Inbox.md").exists()
    assert "test.md (deleted)" in done.output and "Inbox.md (deleted)" in done.output


def test_a_change_to_several_notes_can_be_approved_file_by_file(
    vault: Path, env: dict[str, str]
) -> None:
    notes = ["People/Marcus Feld.md", "People/Priya Raman.md", "People/Lena Park.md"]
    bulk = ScriptedCall(
        name="obsidian_vault_manager",
        arguments={"operation": "bulk_tag", "targets": notes, "metadata": {"tags": ["reviewed"]}},
    )
    turns = [ScriptedTurn(tool_calls=[bulk]), ScriptedTurn(text="Tagged two.")]
    before = (vault / notes[1]).read_bytes()
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "tag the team", stdin="4\ny\nn\n\n")
        sent = server.requests[1].body["messages"][-1]["content"]
    assert done.exit_code == 0, done.output
    assert "4 Choose files" in done.output and f"Change {notes[1]}?" in done.output
    assert "reviewed" in (vault / notes[0]).read_text(encoding="utf-8")
    assert (vault / notes[1]).read_bytes() == before  # the one refused is untouched
    assert "reviewed" in (vault / notes[2]).read_text(encoding="utf-8")
    assert "2 of" in sent or "left" in sent  # the model hears that one was left out
    # So does the person: the step's line says one was left out, not only the line counts.
    assert f"1 note was left as it was (not approved): {notes[1]}" in " ".join(
        done.output.split()
    ), done.output


def test_choosing_files_of_a_move_names_each_note_where_it_is_now(
    vault: Path, env: dict[str, str]
) -> None:
    notes = ["People/Marcus Feld.md", "People/Priya Raman.md"]
    bulk = ScriptedCall(
        name="obsidian_vault_manager",
        arguments={"operation": "bulk_move", "targets": notes, "destination": "Archive"},
    )
    turns = [ScriptedTurn(tool_calls=[bulk]), ScriptedTurn(text="Moved one.")]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "archive them", stdin="4\ny\nn\n" + "y\n" * 20)
    out = done.output
    assert done.exit_code == 0, out
    # Asked as the person knows each note (where it is), with what would happen to it.
    assert f"Move {notes[0]}? [Y/n]" in out and f"Move {notes[1]}? [Y/n]" in out
    assert "Change Archive/" not in out
    assert (vault / "Archive" / "Marcus Feld.md").exists()
    assert (vault / notes[1]).exists()


def test_a_single_file_change_offers_no_file_choice(vault: Path, env: dict[str, str]) -> None:
    turns = [ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Kept.")]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "delete test.md", stdin="4\n3\n\n")
    assert "4 Choose files" not in done.output and "Type 1, 2 or 3" in done.output
    assert (vault / "test.md").exists()


def test_a_refusal_is_the_users_choice_and_its_reason_reaches_the_model(
    vault: Path, env: dict[str, str]
) -> None:
    turns = [ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Kept it.")]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "delete test.md", stdin="3\nit holds my plans\n")
        sent = server.requests[1].body["messages"][-1]["content"]
    assert done.exit_code == 0, done.output
    assert "⊘ Delete(test.md)  declined by you" in done.output
    assert "error" not in done.output.lower()
    assert "it holds my plans" in sent
    assert (vault / "test.md").exists()


def test_a_run_that_failed_before_anything_was_said_is_not_kept(
    vault: Path, env: dict[str, str], tmp_path: Path
) -> None:
    with ScriptedModelServer([ScriptedTurn(status=500, error="model crashed")]) as server:
        done = _ask(env, server, vault, "hi")
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    conn = connect(tmp_path / "data" / "memory.db")
    try:
        assert conn.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 0
    finally:
        conn.close()


def test_ask_stopped_at_max_steps_says_how_to_continue_it(vault: Path, env: dict[str, str]) -> None:
    read = ScriptedCall(
        name="obsidian_query_vault", arguments={"operation": "list_structure", "path": ""}
    )
    turns = [ScriptedTurn(tool_calls=[read]), ScriptedTurn(tool_calls=[read])]
    with ScriptedModelServer(turns) as server:
        done = runner.invoke(
            app,
            ["ask", "look around", "--vault", str(vault), "--max-steps", "1"],
            env={**env, "VAULTPILOT_BASE_URL": server.base_url},
        )
    assert done.exit_code == 3, done.output
    conv = re.search(r"conversation ([0-9a-f]+)", done.output)
    assert conv is not None, done.output
    hint = f"vaultpilot ask --vault {vault} --conversation {conv.group(1)} 'go on'"
    assert hint in " ".join(done.output.split()), done.output


def test_step_labels_and_outcomes() -> None:
    assert label("obsidian_get_context", {"contextType": "read_note", "target": "A.md"}) == (
        "Read(A.md)"
    )
    assert label("obsidian_query_vault", {"queryType": "semantic_search", "query": "kafka"}) == (
        'Search("kafka")'
    )
    move = {"operation": "move_note", "target": "A.md", "destination": "Archive/A.md"}
    assert label("obsidian_vault_manager", move) == "Move(A.md → Archive/A.md)"
    assert label("git_agent", {"type": "git_log"}) == "Git(log)"
    assert outcome({"results": [{}, {}], "totalFound": 7}) == "7 found"
    assert outcome({"error": "No note 'X'."}) == "No note 'X'."
    assert line_counts("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)


def test_the_terminal_renders_what_the_events_say_of_a_step() -> None:
    step: StepLabel = {"kind": "edit", "verb": "Edit", "object": "Inbox.md", "object_is_path": True}
    assert render(step) == "Edit(Inbox.md)"
    files: list[FileCount] = [
        {"path": "A.md", "added": 3, "removed": 1},
        {"path": "B.md", "added": 1, "removed": 0},
    ]
    assert counts(files) == "+4 −1"
    assert counts([]) == counts(None) == ""
    assert outcome({"success": True}, files) == "2 notes"


def _wrap(pieces: list[str], width: int) -> tuple[str, list[tuple[str, str]]]:
    out: list[tuple[str, str]] = []
    writer = WordWrapper(lambda text, style: out.append((text, style)), width)
    for piece in pieces:
        writer.feed(piece)
    writer.finish()
    return "".join(t for t, _ in out), out


def test_streamed_text_wraps_at_word_boundaries_whatever_the_pieces() -> None:
    text = "Streaming tokens arrive cut anywhere, like inter national or half-words, " * 4
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]  # cut mid-word on purpose
    shown, _ = _wrap(pieces, 30)
    words = text.split()
    assert shown.split() == words
    for line in shown.splitlines():
        assert len(line) <= 30


def test_light_markdown_becomes_style() -> None:
    shown, parts = _wrap(["## Plan\n", "Use **bold** and `code_x` but snake_case stays."], 80)
    assert shown == "Plan\nUse bold and code_x but snake_case stays.\n"
    styles = dict(parts)
    assert "bold" in styles["Plan"] and styles["bold"] == "bold"
    assert styles["code_x"] == "cyan"


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
def test_a_fenced_code_block_streams_as_it_is(cut: int) -> None:
    text = (
        "Run this:\n```python\ndef f(x):\n    return  x * 2   # **not bold**\n```\n"
        "Then `inline` code.\n"
    )
    pieces = [text[i : i + cut] for i in range(0, len(text), cut)]
    shown, parts = _wrap(pieces, 24)  # narrower than the code line: it is not re-wrapped
    assert shown == (
        "Run this:\n```python\ndef f(x):\n    return  x * 2   # **not bold**\n```\n"
        "Then inline code.\n"
    )
    styles = dict(parts)
    assert styles["```python"] == styles["```"] == "dim"
    assert styles["    return  x * 2   # **not bold**"] == "cyan"
    assert styles["inline"] == "cyan"


def test_an_unclosed_fence_at_the_end_is_still_written() -> None:
    shown, _ = _wrap(["```\nprint(1)"], 40)
    assert shown == "```\nprint(1)\n"


def test_line_counts_see_lines_that_look_like_diff_headers() -> None:
    assert line_counts("a\nb\n", "a\n++b\nc\n") == (2, 1)
    assert line_counts("x\n--y\n", "x\n") == (0, 1)  # '---y' in the diff is a removed line


def test_an_approval_diff_shows_content_lines_that_look_like_diff_headers() -> None:
    from vaultpilot.cli.agent_view import _diff_text
    from vaultpilot.tools.diffs import unified

    before = "---\ntags: [a]\n---\n# Plan\n"
    shown = _diff_text(unified("Plan.md", "Plan.md", before, "# Plan\n").diff).plain
    assert shown.count("-tags: [a]") == 1
    assert shown.count("----") == 2  # both frontmatter fences, removed
    assert "Plan.md" not in shown  # the file header lines are still left out


def test_with_nobody_to_ask_a_step_is_not_run_and_the_exit_code_says_so(
    vault: Path, env: dict[str, str]
) -> None:
    # A script or cron job: stdin is empty, so nobody can approve the delete.
    turns = [ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Not deleted.")]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "delete test.md", stdin="")
        sent = server.requests[1].body["messages"][-1]["content"]
    assert done.exit_code == 4, done.output
    assert "not run: nobody could approve it" in done.output
    assert "declined by you" not in done.output and "Tell the agent why" not in done.output
    assert "no terminal to ask" in done.stderr and "--yes" in done.stderr
    assert "nobody could give it" in sent
    assert (vault / "test.md").exists()


def test_an_answer_without_a_reason_line_is_still_the_persons_answer(
    vault: Path, env: dict[str, str]
) -> None:
    turns = [ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Kept it.")]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "delete test.md", stdin="3\n")  # no reason line
    assert done.exit_code == 0, done.output
    assert "declined by you" in done.output


def test_ask_json_keeps_stdout_to_json_lines_while_it_asks(
    vault: Path, env: dict[str, str]
) -> None:
    """The approval question goes to stderr: every stdout line of --json is a JSON object."""
    turns = [ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Deleted.")]
    with ScriptedModelServer(turns) as server:
        done = runner.invoke(
            app,
            ["ask", "delete test.md", "--json", "--vault", str(vault)],
            env={**env, "VAULTPILOT_BASE_URL": server.base_url},
            input="1\n",
        )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert any(e.get("kind") == "approval_required" for e in events)
    assert "Type a number" in done.stderr
    assert not (vault / "test.md").exists()


def test_the_spinner_line_fits_the_terminal_in_cells_not_characters() -> None:
    """Wide characters (a CJK note name) take two cells each: the line is cut by cells."""
    out = io.StringIO()
    view = TerminalView(Console(file=out, force_terminal=True, width=30))
    view.waiting = True
    view.spinner.activity = "Reading 会議メモ会議メモ会議メモ会議メモ.md"
    view.tick()
    drawn = out.getvalue().split("\x1b[2m", 1)[1].split("\x1b[0m", 1)[0]
    assert "会議" in drawn and cell_len(drawn) <= 29


def test_mode_names_a_word_that_is_not_a_mode_and_keeps_the_mode() -> None:
    out = io.StringIO()
    state = ChatState(None, "ask")
    assert slash("/mode sideways", cast(Session, None), state, Console(file=out, width=200))
    assert "'sideways' is not a mode" in out.getvalue() and state.mode == "ask"
    assert slash("/mode auto", cast(Session, None), state, Console(file=out, width=200))
    assert "Mode auto" in out.getvalue()


def test_an_approval_without_diffs_shows_its_arguments_as_lines() -> None:
    event = ApprovalRequired(
        "c1", "git_agent", "git_add", {"type": "git_add", "files": ["Inbox.md", "Plan.md"]},
        "git_agent git_add changes things outside the vault tools, so it asks first.",
    )  # fmt: skip
    shown = approval_block(event, width=60).plain
    assert "    files: Inbox.md, Plan.md\n" in shown and "    type: git_add\n" in shown
    assert "{" not in shown and '"' not in shown
    message = {"type": "git_commit", "message": "Weekly review\n\nTagged the meeting notes"}
    event = ApprovalRequired("c2", "git_agent", "git_commit", message, "asks first")
    shown = approval_block(event, width=60).plain
    assert "    message: Weekly review\n" in shown and "      Tagged the meeting notes" in shown


def test_a_long_reason_is_wrapped_at_words_under_the_step() -> None:
    targets = ["Meetings/1on1 Priya 2025-10-07.md", "Meetings/Sprint Retro 2025-10-24.md"]
    arguments = {"operation": "bulk_tag", "targets": targets, "metadata": {"tags": ["x"]}}
    reason = "Changes the tags of several notes. The vault's rules ask before changes there."
    event = ApprovalRequired("t1", "obsidian_vault_manager", "bulk_tag", arguments, reason)
    lines = approval_block(event, width=60).plain.splitlines()
    assert lines[0].startswith("? Tag(") and "Changes" not in lines[0]
    said = [line for line in lines[1:] if line.startswith("  ") and line[2:3] != " "]
    assert " ".join(line.strip() for line in said) == reason
    assert all(len(line) <= 59 for line in said), said
    short = ApprovalRequired("t2", "obsidian_vault_manager", "bulk_tag", arguments, "Asks.")
    assert approval_block(short, width=200).plain.splitlines()[0].endswith(")  Asks.")


def test_a_long_outcome_goes_under_the_step_wrapped_at_words() -> None:
    said = "+1 −0 · 1 note was left as it was (not approved): Meetings/Sprint Retro 2025-10-24.md"
    shown = "Tag(Meetings/1on1 Priya 2025-10-07.md, Meetings/Sprint Retro 2025-10-24.md)"
    lines = step_line(shown, "tool", True, said, width=80).plain.splitlines()
    assert lines[0] == f"● {shown}"
    assert all(line.startswith("  ") and len(line) <= 79 for line in lines[1:]), lines
    assert " ".join(line.strip() for line in lines[1:]) == said
    assert step_line("Append(Inbox.md)", "tool", True, "+4 −0", width=80).plain == (
        "● Append(Inbox.md)  +4 −0"
    )


def test_a_pure_moves_approval_says_moved_not_plus_zero_minus_zero() -> None:
    moved = {
        "path": "Archive/Inbox.md", "from": "Inbox.md", "to": "Archive/Inbox.md",
        "diff": "--- a/Inbox.md\n+++ b/Archive/Inbox.md\n",
    }  # fmt: skip
    event = ApprovalRequired("m1", "obsidian_vault_manager", "move_note", {}, "asks", (moved,))
    shown = approval_block(event, width=100).plain
    assert "Inbox.md → Archive/Inbox.md  moved, text unchanged" in shown and "+0" not in shown


def test_a_replayed_conversation_shows_the_steps_as_they_were_seen_live(
    vault: Path, env: dict[str, str], tmp_path: Path
) -> None:
    append = ScriptedCall(
        name="obsidian_vault_manager",
        arguments={"operation": "append_note", "target": "test.md", "content": "one\ntwo"},
    )
    turns = [
        ScriptedTurn(tool_calls=[append]),
        ScriptedTurn(tool_calls=[_delete("test.md")]),
        ScriptedTurn(text="Appended, and kept the note."),
    ]
    with ScriptedModelServer(turns) as server:
        done = _ask(env, server, vault, "append then delete", stdin="3\nno\n")
    assert done.exit_code == 0, done.output
    assert "● Append(test.md)  +2 −0" in done.output
    assert "⊘ Delete(test.md)  declined by you" in done.output
    conv = re.search(r"conversation ([0-9a-f]+)", done.output)
    assert conv is not None, done.output
    conn = connect(tmp_path / "data" / "memory.db")
    try:
        out = io.StringIO()
        replay(conn, conv.group(1), [], Console(file=out, width=200))
    finally:
        conn.close()
    shown = out.getvalue()
    assert "› append then delete" in shown
    assert "● Append(test.md)  +2 −0" in shown and "Appended to" not in shown
    assert "⊘ Delete(test.md)  declined by you" in shown
    assert "Appended, and kept the note." in shown
