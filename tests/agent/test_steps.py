"""What a step says (``agent.steps``), described once and carried by the events: the kind of each
operation follows its facts, the verb and object of a call, the few words of an outcome, the
files each write of a real run changed with their line counts (read from the real change
journal of a copy of the example vault, the scripted model server standing in for the model),
and the run's approval mode on ``run_started``."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import NOW, collect, model_for, of_kind
from vaultpilot.agent import Agent, VaultTools
from vaultpilot.agent.approvals import ApprovalPolicy
from vaultpilot.agent.events import FileCount, RunStarted, ToolCall, ToolResult
from vaultpilot.agent.steps import (
    approval_mode,
    describe,
    file_counts,
    kind_of,
    outcome,
)
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn
from vaultpilot.memory.journal import ChangeKind, StoredChange
from vaultpilot.tools import TOOLS, open_context
from vaultpilot.tools.rules import VaultRules

DAL = "Recipes/Weeknight Dal.md"
MOVED = "Archive/Weeknight Dal.md"
PLAN = "Meal plan.md"
NEW = "Scratch/New idea.md"
NEW_TEXT = "# New idea\n\nOne.\nTwo.\n"


def _counts(before: str, after: str) -> tuple[int, int]:
    """Lines added and removed, counted here with ``difflib.ndiff`` (not the module's way)."""
    marks = [ln[0] for ln in difflib.ndiff(before.splitlines(), after.splitlines())]
    return marks.count("+"), marks.count("-")


@pytest.fixture
def journaled(vault: Path, tmp_path: Path) -> Iterator[VaultTools]:
    """The vault tools with the change journal the server and the CLI give them (the index in
    ``<data>/vaults/<name>/``, the journal in ``<data>/memory.db``)."""
    ctx = open_context(vault, tmp_path / "data" / "vaults" / "v" / "index.db", now=lambda: NOW)
    try:
        yield VaultTools(ctx)
    finally:
        ctx.conn.close()
        if ctx.journal is not None:
            ctx.journal.close()


def test_each_operations_kind_follows_its_facts_and_each_has_a_verb() -> None:
    kinds = {op.name: kind_of(op) for tool in TOOLS for op in tool.operations.values()}
    verbs = {op.name: op.verb for tool in TOOLS for op in tool.operations.values()}
    assert all(v[:1].isupper() for v in verbs.values()), "every operation needs a verb"
    assert kinds == {
        "semantic_search": "search", "list_structure": "search", "find_related": "search",
        "search_by_metadata": "search", "recent_changes": "search",
        "read_note": "read", "read_multiple": "read", "gather_related": "read",
        "daily_note": "read", "note_with_backlinks": "read",
        "create_note": "create", "create_folder": "create",
        "update_note": "edit", "edit_note": "edit", "append_note": "edit", "bulk_tag": "edit",
        "bulk_update_metadata": "edit",
        "delete_note": "delete", "delete_folder": "delete",
        "move_note": "move", "move_folder": "move", "bulk_move": "move",
    }  # fmt: skip
    for tool in TOOLS:  # a kind never contradicts the facts it comes from
        for op in tool.operations.values():
            assert (kinds[op.name] in ("read", "search")) == (not op.writes), op.name
            assert (kinds[op.name] == "move") == ("destination" in op.files), op.name
    assert kind_of(None) == "other"


def test_a_call_reads_as_its_verb_and_object() -> None:
    search = describe("obsidian_query_vault", {"queryType": "semantic_search", "query": "x  y"})
    assert search == {
        "kind": "search", "verb": "Search", "object": '"x y"', "object_is_path": False,
    }  # fmt: skip
    move = describe(
        "obsidian_vault_manager", {"operation": "move_note", "target": DAL, "destination": "A"}
    )
    assert move == {"kind": "move", "verb": "Move", "object": f"{DAL} → A", "object_is_path": True}
    many = describe(
        "obsidian_vault_manager", {"operation": "bulk_tag", "targets": ["a.md", "b.md", "c.md"]}
    )
    assert (many["verb"], many["object"]) == ("Tag", "a.md, b.md, +1")
    daily = describe("obsidian_get_context", {"contextType": "daily_note"})
    assert (daily["kind"], daily["object"], daily["object_is_path"]) == ("read", "today", False)
    assert describe("git_agent", {"type": "git_commit"})["verb"] == "Commit"
    staged = describe("git_agent", {"type": "git_add", "files": ["a.md", "b.md"]})
    assert (staged["verb"], staged["object"]) == ("Stage", "a.md, b.md")
    message = {"type": "git_commit", "message": "Weekly review\n\nlonger text"}
    assert describe("git_agent", message)["object"] == "Weekly review"
    status = describe("git_agent", {"type": "git_status"})
    assert (status["verb"], status["object"]) == ("Git", "status")
    other = describe("shell", {"command": "ls -la"})
    assert other == {
        "kind": "other", "verb": "shell", "object": 'command="ls -la"', "object_is_path": False,
    }  # fmt: skip
    # An operation the tool does not have is not described as one.
    assert describe("obsidian_vault_manager", {"operation": "nope"})["kind"] == "other"


def test_an_outcome_is_a_few_words_and_leaves_line_counts_to_the_files() -> None:
    assert outcome({"results": [{}, {}], "totalFound": 7}) == "7 found"
    assert outcome({"primaryNote": {"wordCount": 1}, "relatedNotes": [{}, {}]}) == (
        "1 word, +2 notes"
    )
    assert outcome({"primaryNote": {"exists": False}}) == "no such note"
    assert outcome({"primaryNote": None, "error": "Note 'X.md' doesn't exist."}) == (
        "Note 'X.md' doesn't exist."
    )
    one: list[FileCount] = [{"path": "A.md", "added": 1, "removed": 1}]
    assert outcome({"success": True, "message": "Edited 'A.md'."}, one) == ""
    # Some files left out (or failed): the tool's own summary says so.
    part = "1 of 2 notes updated; 1 left as it was (not approved)."
    assert outcome({"success": True, "message": part, "warnings": ["1 left: B.md"]}, one) == part
    two = [*one, FileCount(path="B.md", added=2, removed=0)]
    assert outcome({"success": True}, two) == "2 notes"
    moved: list[FileCount] = [{"path": "B/A.md", "added": 0, "removed": 0, "from": "A.md"}]
    assert outcome({"success": True}, moved) == ""
    assert outcome({"success": True}, [*moved, *two]) == "links updated in 2 notes"
    both: list[FileCount] = [
        *moved, {"path": "B/C.md", "added": 0, "removed": 0, "from": "C.md"}, *one,
    ]  # fmt: skip
    skipped = {"success": True, "warnings": ["'D.md' was not moved"]}
    assert outcome(skipped, both) == "2 notes moved; links updated in 1 note; 'D.md' was not moved"
    # A write that changed nothing says what the tool said.
    assert outcome({"success": True, "message": "Nothing to change."}, []) == "Nothing to change."
    # A failed write says why, whatever it managed to write first.
    assert outcome({"success": False, "message": "Stopped."}, one) == "Stopped."
    # What a failure tells the model to do is left out of what the person reads.
    crashed = "x could not be run (KeyError). Don't retry it; tell the user, who can report it."
    assert outcome({"error": crashed}) == "x could not be run (KeyError)."
    kept = (
        "'A.md' changed meanwhile; the change was left beside it. Tell the person; do not redo it."
    )
    assert outcome({"success": False, "message": kept}) == (
        "'A.md' changed meanwhile; the change was left beside it."
    )
    assert outcome({"error": "Don't retry it."}) == "Don't retry it."  # never left empty
    # What happened stays; what to do next (written for the model) goes.
    missing = (
        "Note 'Nope' doesn't exist. Similar notes: 'Nape.md'. Find the right path with "
        "obsidian_query_vault (queryType='semantic_search', query='Nope')."
    )
    assert outcome({"error": missing}) == "Note 'Nope' doesn't exist. Similar notes: 'Nape.md'."
    broken = (
        "The arguments of x are not valid JSON (Expecting ',' at character 9). Call x again "
        "with the arguments as one JSON object."
    )
    assert outcome({"error": broken}) == (
        "The arguments of x are not valid JSON (Expecting ',' at character 9)."
    )
    example = "Give the note in 'target', e.g. target='Plan.md' (a path or a title)."
    assert outcome({"error": example}) == example  # "e.g. target" ends no sentence
    deleted = "Moved 'A.md' to '.trash/A.md'. Restore it: undo the change."
    assert outcome({"success": True, "message": deleted}) == "Moved 'A.md' to '.trash/A.md'."


def test_one_calls_changes_are_merged_per_file_under_its_last_path() -> None:
    texts = {"h1": "a\nb\n", "h2": "a\nB\nc\n", "h3": "x\n"}

    def change(
        seq: int, kind: ChangeKind, before: str | None, after: str | None, hb: Any, ha: Any
    ) -> StoredChange:
        return StoredChange(seq, kind, "op", before, after, hb, ha, 0.0)

    changes = [
        change(1, "update", "A.md", "A.md", "h1", "h2"),
        change(2, "mkdir", None, "Archive", None, None),
        change(3, "move", "A.md", "Archive/A.md", "h2", "h2"),
        change(4, "delete", "C.md", ".trash/C.md", "h3", "h3"),
    ]
    assert file_counts(changes, lambda digest, _path: texts[digest]) == [
        {"path": "Archive/A.md", "added": 2, "removed": 1, "from": "A.md"},
        {"path": "C.md", "added": 0, "removed": 1},
    ]


def _call(call_id: str, name: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(id=call_id, name=name, arguments=arguments)


def test_each_write_of_a_run_carries_the_files_it_changed_from_the_journal(
    serve: Any, journaled: VaultTools, vault: Path
) -> None:
    (vault / PLAN).write_text("# Plan\n\n- Monday: [dal](Recipes/Weeknight%20Dal.md)\n", "utf-8")
    inbox_before = (vault / "Inbox.md").read_text(encoding="utf-8")
    first = next(ln for ln in inbox_before.splitlines() if ln.startswith("- "))
    plan_before = (vault / PLAN).read_text(encoding="utf-8")
    manager = "obsidian_vault_manager"
    turns = [
        ScriptedTurn(
            tool_calls=[
                _call("r", "obsidian_get_context", contextType="read_note", target="Inbox.md"),
                _call("e", manager, operation="edit_note", target="Inbox.md",
                      edits=[{"oldText": first, "newText": first + " (done)"}]),
                _call("d", manager, operation="edit_note", target="Inbox.md", dryRun=True,
                      edits=[{"oldText": first, "newText": "x"}]),
                _call("m", manager, operation="move_note", target=DAL, destination="Archive"),
                _call("c", manager, operation="create_note", target=NEW, content=NEW_TEXT),
                _call("x", manager, operation="delete_note", target=NEW,
                      confirmDestructive=True),
            ]
        ),
        ScriptedTurn(text="Done."),
    ]  # fmt: skip
    server = serve(turns)
    policy = ApprovalPolicy(auto_approve=True)
    agent = Agent(model_for(server), journaled, "system", policy=policy, vault=journaled)
    events = collect(agent, "tidy up")

    assert of_kind(events, RunStarted)[0].approval_mode == "auto-approve"
    labels = {c.call_id: c.label for c in of_kind(events, ToolCall)}
    assert labels["e"] == {
        "kind": "edit", "verb": "Edit", "object": "Inbox.md", "object_is_path": True,
    }  # fmt: skip
    results = {r.call_id: r for r in of_kind(events, ToolResult)}
    assert all(r.success for r in results.values()), {k: r.outcome for k, r in results.items()}
    read, dry = results["r"], results["d"]
    assert read.files is None and read.outcome.endswith(" words")
    assert dry.files is None  # a dry run writes nothing

    added, removed = _counts(inbox_before, (vault / "Inbox.md").read_text(encoding="utf-8"))
    assert results["e"].files == ({"path": "Inbox.md", "added": added, "removed": removed},)
    assert (added, removed) == (1, 1) and results["e"].outcome == ""

    plan = _counts(plan_before, (vault / PLAN).read_text(encoding="utf-8"))
    move = results["m"]
    assert move.files is not None
    by_path = {f["path"]: f for f in move.files}
    assert by_path[MOVED].get("from") == DAL
    assert (by_path[PLAN]["added"], by_path[PLAN]["removed"]) == plan == (1, 1)
    others = len(move.files) - 1
    assert move.outcome == f"links updated in {others} note{'s' if others > 1 else ''}"

    lines = len(NEW_TEXT.splitlines())
    assert results["c"].files == ({"path": NEW, "added": lines, "removed": 0},)
    assert results["x"].files == ({"path": NEW, "added": 0, "removed": lines},)


def test_without_a_journal_a_write_says_what_the_tool_said(
    serve: Any, vault_tools: VaultTools
) -> None:
    server = serve(
        [
            ScriptedTurn(
                tool_calls=[
                    _call("c", "obsidian_vault_manager", operation="create_note",
                          target=NEW, content=NEW_TEXT)
                ]
            ),
            ScriptedTurn(text="ok"),
        ]
    )  # fmt: skip
    agent = Agent(model_for(server), vault_tools, "system", vault=vault_tools)
    events = collect(agent, "make a note")
    result = of_kind(events, ToolResult)[0]
    assert result.success and result.files is None
    assert result.outcome == result.result["message"]
    assert of_kind(events, RunStarted)[0].approval_mode == "auto"


def test_the_approval_mode_says_when_a_run_asks() -> None:
    yes = ApprovalPolicy(auto_approve=True)
    assert approval_mode(ApprovalPolicy(), VaultRules()) == "auto"
    assert approval_mode(ApprovalPolicy(), VaultRules(mode="ask")) == "ask"
    assert approval_mode(yes, VaultRules(mode="ask")) == "auto-approve"
    assert approval_mode(yes, VaultRules(mode="read-only")) == "read-only"
