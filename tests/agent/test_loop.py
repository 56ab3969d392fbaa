"""The loop's behaviour over real HTTP: several calls per turn, bad calls, interrupts, approvals,
limits, stale versions, overrides and model server failures."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from tests.agent.conftest import collect, finished, model_for, of_kind
from vaultpilot.agent import (
    Agent,
    ApprovalPolicy,
    FunctionTools,
    NoteVersions,
    RunControls,
    RunLimits,
    VaultTools,
)
from vaultpilot.agent.events import (
    AgentEvent,
    ApprovalRequired,
    ApprovalResolved,
    ErrorEvent,
    MessageAdded,
    ToolCall,
    ToolResult,
    Usage,
)
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn


def echo(text: str) -> dict[str, Any]:
    """Echo the text back."""
    return {"echo": text}


def calls(*pairs: tuple[str, Any]) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in pairs])


def manage(**arguments: Any) -> tuple[str, Any]:
    return ("obsidian_vault_manager", arguments)


def read(target: str) -> tuple[str, Any]:
    return ("obsidian_get_context", {"contextType": "read_note", "target": target})


def test_several_tool_calls_in_one_turn_run_in_order_with_their_ids(serve: Any) -> None:
    order: list[str] = []

    def note(text: str) -> dict[str, Any]:
        """Remember the text."""
        order.append(text)
        return {"noted": text}

    turn = calls(("note", {"text": "a"}), ("echo", {"text": "b"}), ("note", {"text": "c"}))
    server = serve([turn, ScriptedTurn(text="done")])
    agent = Agent(model_for(server), FunctionTools([note, echo]), "system")
    events = collect(agent, "go")
    assert order == ["a", "c"]
    results = of_kind(events, ToolResult)
    assert [r.call_id for r in results] == ["call_0_0", "call_0_1", "call_0_2"]
    sent = server.requests[1].body["messages"]
    assistant = sent[-4]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_0_0", "call_0_1", "call_0_2"]
    assert [(m["tool_call_id"], json.loads(m["content"])) for m in sent[-3:]] == [
        ("call_0_0", {"noted": "a"}),
        ("call_0_1", {"echo": "b"}),
        ("call_0_2", {"noted": "c"}),
    ]


def test_malformed_arguments_become_a_result_the_model_corrects(
    serve: Any, vault_tools: VaultTools
) -> None:
    server = serve(
        [
            calls(("obsidian_get_context", '{"contextType": "read_note", "target": ')),
            calls(("obsidian_query_vault", {"queryType": "everything", "query": "x"})),
            calls(("obsidian_query_vault", json.dumps(["not", "an", "object"]))),
            calls(("obsidian_query_vault", {"queryType": "semantic_search", "query": "test"})),
            ScriptedTurn(text="found it"),
        ]
    )
    agent = Agent(model_for(server), vault_tools, "system")
    events = collect(agent, "find test")
    results = of_kind(events, ToolResult)
    assert [r.success for r in results] == [False, False, False, True]
    assert results[0].source == "invalid"
    assert "not valid JSON" in results[0].result["error"]
    assert (
        "queryType" in results[1].result["error"]
        and "semantic_search" in results[1].result["error"]
    )
    assert results[1].source == "tool"  # the tool's own validation, with the valid values
    assert "JSON object" in results[2].result["error"]
    assert of_kind(events, ToolCall)[0].arguments is None
    assert finished(events).reason == "done"
    fed_back = json.loads(server.requests[1].body["messages"][-1]["content"])
    assert "not valid JSON" in fed_back["error"]


def test_an_unknown_tool_is_answered_with_the_valid_names(serve: Any) -> None:
    server = serve([calls(("delete_everything", {})), ScriptedTurn(text="sorry")])
    agent = Agent(model_for(server), FunctionTools([echo]), "system")
    events = collect(agent, "go")
    result = of_kind(events, ToolResult)[0]
    assert not result.success and result.source == "invalid"
    assert result.result == {"error": "Unknown tool 'delete_everything'. Valid tools: echo."}


def test_interrupt_mid_stream_closes_the_stream_and_ends_the_run(serve: Any) -> None:
    server = serve([ScriptedTurn(text="one two three four five six", stall_after=3)])
    agent = Agent(model_for(server), FunctionTools([echo]), "system")
    controls = RunControls()

    def on_event(event: AgentEvent) -> None:
        if event.kind == "text_chunk":
            controls.interrupt()

    started = time.monotonic()
    events = collect(agent, "go", controls=controls, on_event=on_event)
    assert time.monotonic() - started < 5
    end = finished(events)
    assert end.reason == "interrupted"
    assert end.text in ("one ", "one two ")  # what came before the stall
    history = [e.message for e in of_kind(events, MessageAdded)]
    assert history[-1] == {"role": "assistant", "content": end.text}
    deadline = time.monotonic() + 3
    while not server.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == [0]  # the server saw the client go away


def test_a_stream_sending_only_keep_alives_fails_the_turn(serve: Any) -> None:
    # Proxies keep a stream open with SSE comments: the HTTP read timeout never trips.
    server = serve([ScriptedTurn(text="one two three four", stall_after=2)])
    agent = Agent(model_for(server), FunctionTools([echo]), "system", limits=RunLimits(quiet=1.0))
    started = time.monotonic()
    events = collect(agent, "go")
    assert time.monotonic() - started < 6
    end = finished(events)
    assert end.reason == "error"
    assert "sent nothing for 1 s" in end.message and "timeout" in end.message
    deadline = time.monotonic() + 3
    while not server.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == [0]  # the stream was closed


def test_interrupt_while_waiting_for_approval_closes_the_open_calls(serve: Any) -> None:
    server = serve([calls(manage(operation="delete_note", target="x.md"), ("echo", {"text": "y"}))])
    tools = FunctionTools([echo])
    agent = Agent(model_for(server), tools, "system", policy=ApprovalPolicy({"echo": "ask"}))
    controls = RunControls()
    events = collect(
        agent,
        "go",
        controls=controls,
        on_event=lambda e: controls.interrupt() if e.kind == "approval_required" else None,
    )
    assert finished(events).reason == "interrupted"
    tool_messages = [
        e.message for e in of_kind(events, MessageAdded) if e.message["role"] == "tool"
    ]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0_0", "call_0_1"]
    assert "Unknown tool" in tool_messages[0]["content"]
    assert "Interrupted" in tool_messages[1]["content"]


def _delete_agent(server: Any, vault_tools: VaultTools) -> Agent:
    return Agent(model_for(server), vault_tools, "system")


def test_a_denied_delete_does_not_run(serve: Any, vault_tools: VaultTools, vault: Path) -> None:
    turn = calls(manage(operation="delete_note", target="test.md", confirmDestructive=True))
    server = serve([turn, ScriptedTurn(text="I did not delete it.")])
    controls = RunControls()

    def on_event(event: AgentEvent) -> None:
        if event.kind == "approval_required":
            assert event.operation == "delete_note"
            controls.deny(event.call_id, "keep it")

    events = collect(
        _delete_agent(server, vault_tools), "delete test", controls=controls, on_event=on_event
    )
    assert (vault / "test.md").exists()
    resolved = of_kind(events, ApprovalResolved)[0]
    assert (resolved.approved, resolved.by, resolved.reason) == (False, "user", "keep it")
    result = of_kind(events, ToolResult)[0]
    assert (result.success, result.source) == (False, "denied")
    assert "refused" in result.result["error"] and "keep it" in result.result["error"]
    assert finished(events).reason == "done"


def test_a_call_that_cannot_run_is_not_put_to_the_person(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    # Its dry run fails (no confirmDestructive; a note that does not exist): the failure goes
    # back to the model at once, and nobody is asked to approve a call that would fail anyway.
    turn = calls(
        manage(operation="delete_note", target="test.md"),
        manage(operation="delete_note", target="Nope.md", confirmDestructive=True),
    )
    server = serve([turn, ScriptedTurn(text="Could not.")])
    controls = RunControls()
    events = collect(_delete_agent(server, vault_tools), "delete", controls=controls)
    assert not of_kind(events, ApprovalRequired)
    first, second = of_kind(events, ToolResult)
    assert (first.success, first.source) == (False, "tool")
    assert "confirmDestructive" in first.result["message"]
    assert (second.success, second.source) == (False, "tool")
    assert "doesn't exist" in second.result["message"]
    assert (vault / "test.md").exists()


def test_a_steps_time_leaves_out_the_wait_for_approval(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    turn = calls(manage(operation="delete_note", target="test.md", confirmDestructive=True))
    server = serve([turn, ScriptedTurn(text="Deleted.")])
    controls = RunControls()

    def later(event: AgentEvent) -> None:
        if event.kind == "approval_required":  # the person takes a while to decide
            threading.Timer(0.6, controls.approve, [event.call_id]).start()

    started = time.monotonic()
    events = collect(
        _delete_agent(server, vault_tools), "delete", controls=controls, on_event=later
    )
    assert time.monotonic() - started > 0.6
    result = of_kind(events, ToolResult)[0]
    assert result.success and result.duration_ms < 500, result.duration_ms


def test_a_note_edited_while_its_change_waits_is_not_changed(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    # The person approves the delete they saw; the note grows meanwhile (saved in Obsidian).
    turn = calls(manage(operation="delete_note", target="test.md", confirmDestructive=True))
    server = serve([turn, ScriptedTurn(text="It changed.")])
    controls = RunControls()

    def grow_then_approve(event: AgentEvent) -> None:
        if event.kind == "approval_required":
            with (vault / "test.md").open("a", encoding="utf-8") as note:
                note.write("\nA line written while the card waited.\n")
            controls.approve(event.call_id)

    events = collect(
        _delete_agent(server, vault_tools), "delete", controls=controls, on_event=grow_then_approve
    )
    assert (vault / "test.md").exists()
    assert "written while the card waited" in (vault / "test.md").read_text(encoding="utf-8")
    result = of_kind(events, ToolResult)[0]
    assert not result.success and "edited while the user was asked" in result.result["error"]


def test_an_approved_delete_runs(serve: Any, vault_tools: VaultTools, vault: Path) -> None:
    turn = calls(manage(operation="delete_note", target="test.md", confirmDestructive=True))
    server = serve([turn, ScriptedTurn(text="Deleted.")])
    controls = RunControls()
    events = collect(
        _delete_agent(server, vault_tools),
        "delete test",
        controls=controls,
        on_event=lambda e: controls.approve(e.call_id) if e.kind == "approval_required" else None,
    )
    assert not (vault / "test.md").exists() and (vault / ".trash" / "test.md").exists()
    assert of_kind(events, ToolResult)[0].success


def test_ask_without_anyone_to_answer_and_deny_policy_refuse(
    serve: Any, vault_tools: VaultTools
) -> None:
    turn = calls(
        manage(operation="move_note", target="test.md", destination="Archive"),
        manage(operation="bulk_tag", targets=["test.md"], metadata={"tags": ["x"]}),
    )
    server = serve([turn, ScriptedTurn(text="ok")])
    policy = ApprovalPolicy().with_rules({"obsidian_vault_manager.bulk_tag": "deny"})
    agent = Agent(model_for(server), vault_tools, "system", policy=policy)
    events = collect(agent, "tidy up")  # no controls: nobody can approve
    resolved = [(e.approved, e.by) for e in of_kind(events, ApprovalResolved)]
    assert resolved == [(False, "nobody"), (False, "policy")]
    assert [r.source for r in of_kind(events, ToolResult)] == ["denied", "denied"]


def test_max_steps_stops_the_run(serve: Any) -> None:
    turns = [calls(("echo", {"text": str(i)})) for i in range(3)]
    server = serve(turns)
    agent = Agent(model_for(server), FunctionTools([echo]), "system", limits=RunLimits(max_steps=2))
    events = collect(agent, "loop forever")
    end = finished(events)
    assert (end.reason, end.steps) == ("max_steps", 2)
    assert len(server.requests) == 2 and len(of_kind(events, ToolResult)) == 2


def test_the_token_budget_stops_the_run(serve: Any) -> None:
    server = serve([calls(("echo", {"text": "x"})), ScriptedTurn(text="never")])
    agent = Agent(
        model_for(server), FunctionTools([echo]), "system", limits=RunLimits(token_budget=10)
    )
    events = collect(agent, "go")
    assert finished(events).reason == "budget" and len(server.requests) == 1
    usage = of_kind(events, Usage)[0]
    assert usage.total_tokens >= 10 and not usage.estimated


def test_a_note_changed_in_obsidian_meanwhile_is_not_overwritten(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    note = vault / "test.md"

    def edit_in_obsidian(turn: int, _body: dict[str, Any]) -> None:
        if turn == 1:
            note.write_text("# Test\n\nEdited in Obsidian.\n", encoding="utf-8")

    server = serve(
        [
            calls(read("test.md")),
            calls(manage(operation="update_note", target="test.md", content="# Test\n\nAgent.\n")),
            ScriptedTurn(text="It changed; I'll read it again."),
        ],
        before_turn=edit_in_obsidian,
    )
    versions = NoteVersions()
    events = collect(Agent(model_for(server), vault_tools, "system"), "rewrite", versions=versions)
    call = of_kind(events, ToolCall)[1]
    read_version = of_kind(events, ToolResult)[0].result["primaryNote"]["version"]
    assert call.added == {"expectedVersion": read_version}
    refused = of_kind(events, ToolResult)[1]
    assert not refused.success and "changed since you read it" in refused.result["message"]
    assert note.read_text(encoding="utf-8") == "# Test\n\nEdited in Obsidian.\n"


def test_a_write_after_a_read_goes_through_when_nothing_changed(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    server = serve(
        [
            calls(read("test")),
            calls(manage(operation="append_note", target="test", content="more")),
            calls(manage(operation="append_note", target="test.md", content="again")),
            ScriptedTurn(text="done"),
        ]
    )
    events = collect(Agent(model_for(server), vault_tools, "system"), "append twice")
    assert [r.success for r in of_kind(events, ToolResult)] == [True, True, True]
    added = [c.added for c in of_kind(events, ToolCall)]
    assert added[1] and added[2] and added[1] != added[2]  # the version after the first write
    assert (vault / "test.md").read_text(encoding="utf-8").rstrip().endswith("again")


def test_an_override_replaces_the_tool_call(serve: Any) -> None:
    ran: list[str] = []

    def slow(text: str) -> dict[str, Any]:
        """Do something."""
        ran.append(text)
        return {"ran": True}

    server = serve([calls(("slow", {"text": "x"})), ScriptedTurn(text="ok")])
    controls = RunControls()
    events = collect(
        Agent(model_for(server), FunctionTools([slow]), "system"),
        "go",
        controls=controls,
        on_event=lambda e: (
            controls.override(e.call_id, {"answer": 42}) if e.kind == "tool_call" else None
        ),
    )
    result = of_kind(events, ToolResult)[0]
    assert (result.source, result.result, ran) == ("override", {"answer": 42}, [])
    assert json.loads(server.requests[1].body["messages"][-1]["content"]) == {"answer": 42}


def test_http_500_becomes_an_error_event(serve: Any) -> None:
    server = serve([ScriptedTurn(status=500, error="The GPU caught fire")])
    events = collect(Agent(model_for(server), FunctionTools([echo]), "system"), "go")
    error = of_kind(events, ErrorEvent)[0]
    assert error.source == "model" and "HTTP 500" in error.message and "GPU" in error.message
    assert finished(events).reason == "error"


def test_a_timeout_becomes_an_error_event(serve: Any) -> None:
    server = serve([ScriptedTurn(text="late", delay=3)])
    started = time.monotonic()
    events = collect(Agent(model_for(server, timeout=0.3), FunctionTools([echo]), "system"), "go")
    assert time.monotonic() - started < 2.5
    assert "timeout" in of_kind(events, ErrorEvent)[0].message
    assert finished(events).reason == "error"


def test_a_refused_connection_becomes_an_error_event(serve: Any) -> None:
    server = serve([])
    url = server.base_url
    server.stop()
    import openai

    from vaultpilot.agent.openai_model import OpenAIChatModel

    model = OpenAIChatModel(openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0), "m")
    events = collect(Agent(model, FunctionTools([echo]), "system"), "go")
    assert "Could not connect" in of_kind(events, ErrorEvent)[0].message


LONG_NOTE = "# Plan\n\n" + "".join(
    f"Step {i}: write down what the meeting decided about item {i} and who owns it.\n"
    for i in range(8)
)


def _replace_agent(server: Any, vault_tools: VaultTools, policy: ApprovalPolicy) -> Agent:
    return Agent(model_for(server), vault_tools, "system", policy=policy)


def test_a_write_that_would_drop_many_words_asks_first(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    (vault / "Plan.md").write_text(LONG_NOTE, encoding="utf-8")
    turn = calls(manage(operation="update_note", target="Plan.md", content="# Plan\n\nDone.\n"))
    server = serve([turn, ScriptedTurn(text="Kept.")])
    controls = RunControls()
    asked: list[ApprovalRequired] = []

    def refuse(event: AgentEvent) -> None:
        if isinstance(event, ApprovalRequired):
            asked.append(event)
            controls.deny(event.call_id, "no")

    events = collect(
        _replace_agent(server, vault_tools, ApprovalPolicy()),
        "tidy",
        controls=controls,
        on_event=refuse,
    )
    assert len(asked) == 1 and "words from Plan.md" in asked[0].reason, asked
    assert asked[0].diffs and "-Step 3" in asked[0].diffs[0]["diff"]
    assert (vault / "Plan.md").read_text(encoding="utf-8") == LONG_NOTE
    assert of_kind(events, ToolResult)[0].source == "denied"


def test_small_or_reworded_writes_and_an_allowed_update_run_without_asking(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    (vault / "Plan.md").write_text(LONG_NOTE, encoding="utf-8")
    reordered = "# Plan\n\n" + "".join(reversed(LONG_NOTE.splitlines(keepends=True)[2:]))
    turns = [
        calls(manage(operation="update_note", target="Plan.md", content=reordered)),
        calls(manage(operation="update_note", target="test.md", content="# Test\n\nShorter.\n")),
        ScriptedTurn(text="Done."),
    ]
    server = serve(turns)
    events = collect(_replace_agent(server, vault_tools, ApprovalPolicy()), "tidy")
    assert not of_kind(events, ApprovalRequired)
    assert all(r.success for r in of_kind(events, ToolResult))
    assert (vault / "Plan.md").read_text(encoding="utf-8") == reordered

    # A rule the person wrote decides it: no question, even for the whole note.
    allowed = ApprovalPolicy().with_rules({"obsidian_vault_manager.update_note": "allow"})
    turn = calls(manage(operation="update_note", target="Plan.md", content="# Plan\n"))
    server = serve([turn, ScriptedTurn(text="Done.")])
    events = collect(_replace_agent(server, vault_tools, allowed), "replace")  # nobody to ask
    assert not of_kind(events, ApprovalRequired) and of_kind(events, ToolResult)[0].success
    assert (vault / "Plan.md").read_text(encoding="utf-8") == "# Plan\n"


def test_many_small_cuts_of_one_note_ask_like_one_large_one(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    (vault / "Plan.md").write_text(LONG_NOTE, encoding="utf-8")

    def cut(i: int) -> tuple[str, Any]:
        line = LONG_NOTE.splitlines(keepends=True)[2 + i]
        return manage(
            operation="edit_note", target="Plan.md", edits=[{"oldText": line, "newText": ""}]
        )

    # Each cut removes 15 words: under the limit alone, past it with the first one.
    server = serve([calls(cut(0)), calls(cut(1)), calls(cut(2)), ScriptedTurn(text="Done.")])
    controls = RunControls()
    asked: list[ApprovalRequired] = []

    def approve(event: AgentEvent) -> None:
        if isinstance(event, ApprovalRequired):
            asked.append(event)
            controls.approve(event.call_id)

    events = collect(
        _replace_agent(server, vault_tools, ApprovalPolicy()), "trim", controls=controls,
        on_event=approve,
    )  # fmt: skip
    assert all(r.success for r in of_kind(events, ToolResult))
    # The second cut asks, counting the first; once approved, the count starts again.
    assert len(asked) == 1 and "30 words from Plan.md" in asked[0].reason, asked
    assert [e.call_id for e in asked] == [of_kind(events, ToolResult)[1].call_id]
    assert "Step 2" not in (vault / "Plan.md").read_text(encoding="utf-8")


def test_a_refused_cut_removes_nothing_and_counts_nothing(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    (vault / "Plan.md").write_text(LONG_NOTE, encoding="utf-8")
    lines = LONG_NOTE.splitlines(keepends=True)
    stale = manage(
        operation="update_note", target="Plan.md", expectedVersion="stale",
        content=LONG_NOTE.replace(lines[2], ""),
    )  # fmt: skip
    cut = manage(
        operation="edit_note", target="Plan.md", edits=[{"oldText": lines[3], "newText": ""}]
    )
    server = serve([calls(stale), calls(cut), ScriptedTurn(text="Done.")])
    events = collect(_replace_agent(server, vault_tools, ApprovalPolicy()), "trim")
    first, second = of_kind(events, ToolResult)
    assert not first.success and second.success, (first.result, second.result)
    assert not of_kind(events, ApprovalRequired)  # 15 words, not 30: the first removed none
    assert lines[2] in (vault / "Plan.md").read_text(encoding="utf-8")
