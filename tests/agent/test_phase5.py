"""The PRD's Phase 5 tests: the dispatcher, and "read test.md, tell me the first line" end to end,
with the event sequence and the request bodies sent to the model pinned by snapshots."""

from __future__ import annotations

import json
from typing import Any

from tests.agent.conftest import collect, kinds, model_for, of_kind, snapshot, stable
from vaultpilot.agent import Agent, FunctionTools, VaultTools, build_system_prompt
from vaultpilot.agent.events import TextChunk, ToolCall, ToolResult
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn


def test_dispatcher_calls_the_named_tool_with_the_parsed_arguments(serve: Any) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def toolReadNote(path: str, lines: int = 1) -> dict[str, Any]:
        """Read a note."""
        seen.append(("toolReadNote", {"path": path, "lines": lines}))
        return {"content": "# Test"}

    def toolEditNote(path: str, content: str) -> dict[str, Any]:
        """Edit a note."""
        seen.append(("toolEditNote", {"path": path, "content": content}))
        return {"success": True}

    server = serve(
        [
            ScriptedTurn(
                tool_calls=[
                    ScriptedCall(
                        name="toolReadNote", arguments={"path": "B.md", "lines": 3}, id="call_a"
                    )
                ]
            ),
            ScriptedTurn(text="ok"),
        ]
    )
    agent = Agent(model_for(server), FunctionTools([toolReadNote, toolEditNote]), "system")
    events = collect(agent, "Refactor note A based on note B")
    assert seen == [("toolReadNote", {"path": "B.md", "lines": 3})]
    call = of_kind(events, ToolCall)[0]
    assert (call.call_id, call.name, call.arguments) == (
        "call_a",
        "toolReadNote",
        {"path": "B.md", "lines": 3},
    )
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": json.dumps({"content": "# Test"}),
    }


def test_read_test_md_and_tell_the_first_line(serve: Any, vault_tools: VaultTools) -> None:
    server = serve(
        [
            ScriptedTurn(
                reasoning="The user wants test.md; I'll read it.",
                tool_calls=[
                    ScriptedCall(
                        name="obsidian_get_context",
                        arguments={"contextType": "read_note", "target": "test.md"},
                    )
                ],
            ),
            ScriptedTurn(text="The first line of test.md is: # Test"),
        ]
    )
    prompt = build_system_prompt(vault_tools.facts())
    agent = Agent(model_for(server), vault_tools, prompt, vault=vault_tools)
    events = collect(agent, "Read the file 'test.md' and tell me the first line")

    text = "".join(e.text for e in of_kind(events, TextChunk))
    assert text == "The first line of test.md is: # Test"
    finished = events[-1]
    assert finished.kind == "run_finished" and finished.reason == "done"
    assert finished.text == text and finished.steps == 2
    result = of_kind(events, ToolResult)[0]
    assert result.success and result.result["primaryNote"]["content"].startswith("# Test")
    assert kinds(events) == [
        "run_started",
        "message",
        "status",
        *["thought"] * 7,
        "usage",
        "message",
        "tool_call",
        "status",
        "tool_result",
        "message",
        "status",
        *["text_chunk"] * 8,
        "usage",
        "message",
        "run_finished",
    ]
    snapshot("phase5_events", stable(events))
    snapshot("phase5_requests", [r.body for r in server.requests])
    first = server.requests[0].body
    assert first["tool_choice"] == "auto" and first["stream"] is True
    assert [t["function"]["name"] for t in first["tools"]] == [
        "obsidian_query_vault",
        "obsidian_get_context",
        "obsidian_vault_manager",
    ]
    assert "obsidian_query_vault" not in first["messages"][0]["content"].split("## The vault")[1]
