"""Mentions, schemas, approvals, versions, config, the Anthropic client and process tools."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.agent.conftest import collect, finished, model_for, of_kind
from vaultpilot.agent import (
    Agent,
    ApprovalPolicy,
    CombinedTools,
    FunctionTools,
    ProcessTools,
    VaultTools,
    load_config,
    make_model,
    require_model,
)
from vaultpilot.agent.anthropic_model import AnthropicModel
from vaultpilot.agent.build import run_process_tool
from vaultpilot.agent.events import ContextAttached, Thought, ToolResult
from vaultpilot.agent.mentions import attach, find_mentions, resolve_mentions
from vaultpilot.agent.schemas import flatten_tagged_union, tool_entry
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn
from vaultpilot.agent.versions import NoteVersions
from vaultpilot.contract.catalog import shipped_tools
from vaultpilot.errors import SetupError
from vaultpilot.tools.schema import compact_schema

PATHS = ["Projects/Plan.md", "Weekly Review.md", "Archive/Plan.md", "Folder/Note with spaces.md"]


def test_mentions_quoted_bare_and_unknown() -> None:
    text = (
        'Compare @"Folder/Note with spaces.md" and @Weekly Review tomorrow, with @Plan. '
        "me@x.org @Nope"
    )
    mentions = find_mentions(text)
    found, unknown = resolve_mentions(mentions, PATHS)
    assert [(m.written, path) for m, _, path in found] == [
        ('@"Folder/Note with spaces.md"', "Folder/Note with spaces.md"),
        ("@Weekly Review", "Weekly Review.md"),
        ("@Plan", "Archive/Plan.md"),  # the shortest path wins, as in Obsidian
    ]
    assert unknown == ["@Nope"]
    # A link-style mention may name a heading or give a display text: it is the note's.
    heading = find_mentions("see @[[Weekly Review#Goals]] and @[[Projects/Plan|the plan]]")
    found, unknown = resolve_mentions(heading, PATHS)
    assert [path for _, _, path in found] == ["Weekly Review.md", "Projects/Plan.md"]


def test_attach_respects_the_budget_and_reports_unknown() -> None:
    notes = {"Projects/Plan.md": "p" * 4000, "Weekly Review.md": "w" * 4000}
    out = attach(
        "see @Projects/Plan and @[[Weekly Review]] and @Ghost",
        PATHS,
        lambda path: (notes[path], "v1"),
        budget_tokens=1100,
    )
    assert out.section.startswith("### Context from attached files ###")
    assert [n.path for n in out.notes] == ["Projects/Plan.md"]
    assert out.omitted == ("Weekly Review.md",) and out.unknown == ("@Ghost",)
    assert "@Ghost" in out.section and "Weekly Review.md" in out.section


def test_an_at_mention_attaches_the_note_and_records_its_version(
    serve: Any, vault_tools: VaultTools
) -> None:
    server = serve([ScriptedTurn(text="ok")])
    agent = Agent(model_for(server), vault_tools, "system", vault=vault_tools)
    versions = NoteVersions()
    events = collect(agent, "What does @test say? And @Missing Note?", versions=versions)
    attached = of_kind(events, ContextAttached)[0]
    assert [n["path"] for n in attached.notes] == ["test.md"]
    assert attached.unknown == ("@Missing",)
    user = server.requests[0].body["messages"][1]["content"]
    assert "### Context from attached files ###" in user and "The second line." in user
    assert versions.version_of("test.md")


def test_compact_schema_keeps_meaning_and_drops_noise() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "v": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}]},
        },
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {"q": {"type": "string"}, "v": {"type": ["string", "number"]}},
    }


def test_process_tool_schemas_are_flattened_objects() -> None:
    git = next(t for t in shipped_tools() if t.name == "git_agent")
    flat = flatten_tagged_union(git.payload_schema)
    assert flat["type"] == "object" and flat["required"] == ["type"]
    assert "git_commit" in flat["properties"]["type"]["enum"]
    entry = tool_entry(git.name, git.description, flat)
    assert "$defs" not in json.dumps(entry) and "$ref" not in json.dumps(entry)


def test_approval_policy_rules() -> None:
    policy = ApprovalPolicy().with_rules(
        {"git_agent": "deny", "obsidian_vault_manager.delete_note": "allow"}
    )
    assert policy.decide("obsidian_vault_manager", "delete_folder") == "ask"
    assert policy.decide("obsidian_vault_manager", "delete_note") == "allow"
    assert policy.decide("obsidian_vault_manager", "create_note") == "allow"
    assert policy.decide("git_agent", "git_status") == "deny"
    assert policy.decide("shell", None) == "ask"
    auto = ApprovalPolicy(auto_approve=True).with_rules({"git_agent": "deny"})
    assert auto.decide("obsidian_vault_manager", "bulk_move") == "allow"
    assert auto.decide("git_agent", "git_commit") == "deny"
    # A dry run writes nothing: it is not asked about, but what is denied stays denied.
    strict = ApprovalPolicy().with_rules({"obsidian_vault_manager.move_note": "deny"})
    assert strict.decide("obsidian_vault_manager", "delete_folder", dry_run=True) == "allow"
    assert strict.decide("obsidian_vault_manager", "move_note", dry_run=True) == "deny"
    assert strict.decide("git_agent", "git_commit", dry_run=True) == "ask"  # has no dry run


def test_versions_match_titles_and_follow_moves() -> None:
    v = NoteVersions()
    v.observe(
        "obsidian_get_context", {}, {"primaryNote": {"path": "Projects/Plan.md", "version": "a"}}
    )
    assert v.precondition(
        "obsidian_vault_manager", {"operation": "update_note", "target": "Plan"}
    ) == {"expectedVersion": "a"}
    assert (
        v.precondition("obsidian_vault_manager", {"operation": "create_note", "target": "Plan"})
        == {}
    )
    given = {"operation": "update_note", "target": "Plan", "expectedVersion": "z"}
    assert v.precondition("obsidian_vault_manager", given) == {}
    v.observe(
        "obsidian_vault_manager",
        {"operation": "move_note", "target": "Projects/Plan.md"},
        {"success": True, "affectedPaths": ["Archive/Plan.md"], "version": "a"},
    )
    assert v.version_of("Projects/Plan.md") is None and v.version_of("Archive/Plan.md") == "a"


def test_config_sources_file_env_flag(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "from-file"\nmax_steps = 7\n[approvals]\nshell = "deny"\n')
    env = {
        "VAULTPILOT_CONFIG": str(path),
        "OPENAI_API_KEY": "sk-test-123456",
        "VAULTPILOT_TIMEOUT": "5",
    }
    loaded = load_config(env=env, flags={"model": "from-flag", "base_url": None})
    cfg = loaded.config
    assert (cfg.model, cfg.max_steps, cfg.timeout, cfg.approvals) == (
        "from-flag",
        7,
        5.0,
        {"shell": "deny"},
    )
    assert loaded.sources["model"] == "flag --model"
    assert loaded.sources["max_steps"] == f"file {path}"
    assert loaded.sources["api_key"] == "env OPENAI_API_KEY"
    assert loaded.sources["provider"] == "default"
    shown = {name: value for name, value, _ in loaded.shown()}
    assert "123456" not in shown["api_key"]
    assert require_model(loaded) is cfg


def test_config_errors_say_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"VAULTPILOT_CONFIG": str(path)}
    with pytest.raises(SetupError, match="ollama pull") as err:
        require_model(load_config(env=env))
    assert "OPENAI_API_KEY" in str(err.value)
    with pytest.raises(SetupError, match="needs an API key"):
        require_model(load_config(env={**env, "VAULTPILOT_MODEL": "gpt-4o-mini"}))
    local = {**env, "VAULTPILOT_MODEL": "llama", "VAULTPILOT_BASE_URL": "http://localhost:11434/v1"}
    assert require_model(load_config(env=local)).model == "llama"
    path.write_text("modle = 1\n")
    with pytest.raises(SetupError, match="unknown setting 'modle'"):
        load_config(env=env)
    path.write_text("model = \n")
    with pytest.raises(SetupError, match="not valid TOML"):
        load_config(env=env)
    path.unlink()
    with pytest.raises(SetupError, match="VAULTPILOT_MAX_STEPS"):
        load_config(env={**local, "VAULTPILOT_MAX_STEPS": "many"})


def echo(text: str) -> dict[str, Any]:
    """Echo."""
    return {"echo": text}


def test_anthropic_client_against_the_scripted_server(serve: Any) -> None:
    server = serve(
        [
            ScriptedTurn(
                reasoning="Use echo.",
                text="Calling echo.",
                tool_calls=[ScriptedCall(name="echo", arguments={"text": "hi"}, id="toolu_1")],
            ),
            ScriptedTurn(text="It said hi."),
        ]
    )
    client = anthropic.AsyncAnthropic(
        base_url=server.base_url.removesuffix("/v1"), api_key="k", max_retries=0
    )
    agent = Agent(AnthropicModel(client, "claude-test"), FunctionTools([echo]), "system prompt")
    events = collect(agent, "say hi")
    assert [t.text for t in of_kind(events, Thought)] == ["Use ", "echo."]
    assert of_kind(events, ToolResult)[0].result == {"echo": "hi"}
    assert finished(events).text == "It said hi." and finished(events).reason == "done"
    second = server.requests[1].body
    assert second["system"] == "system prompt" and second["tools"][0]["name"] == "echo"
    assert second["messages"][1]["content"][-1]["type"] == "tool_use"
    assert second["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": json.dumps({"echo": "hi"}),
    }


def test_make_model_builds_a_working_openai_client(serve: Any, tmp_path: Path) -> None:
    server = serve([ScriptedTurn(text="hello")])
    env = {"VAULTPILOT_CONFIG": str(tmp_path / "none.toml"), "VAULTPILOT_MODEL": "scripted"}
    cfg = load_config(env=env, flags={"base_url": server.base_url, "max_retries": 0}).config
    events = collect(Agent(make_model(cfg), FunctionTools([echo]), "s"), "hi")
    assert finished(events).text == "hello"


def test_registered_process_tools_are_offered_beside_the_builtin_ones(
    serve: Any, vault_tools: VaultTools, vault: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(vault)], check=True)  # git_agent needs a repository
    process = ProcessTools.for_vault(shipped_tools(), run_process_tool, vault)
    call = ScriptedCall(name="obsidian_agent", arguments={"type": "read_note", "note_name": "test"})
    server = serve([ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="read")])
    agent = Agent(model_for(server), CombinedTools(vault_tools, process), "system")
    events = collect(agent, "read test via the agent")
    names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert names == [
        "obsidian_query_vault",
        "obsidian_get_context",
        "obsidian_vault_manager",
        "git_agent",
        "obsidian_agent",
    ]
    obsidian = server.requests[0].body["tools"][4]["function"]["parameters"]
    assert "vault_path" not in obsidian["properties"]  # fixed by the transport
    git = server.requests[0].body["tools"][3]["function"]["parameters"]
    assert "repo_path" not in git["properties"]
    result = of_kind(events, ToolResult)[0]
    assert result.success, result.result
    assert "The second line." in json.dumps(result.result)


def test_the_loop_never_blocks_the_event_loop_on_a_tool(serve: Any) -> None:
    import time

    def sleepy(seconds: float) -> dict[str, Any]:
        """Sleep."""
        time.sleep(seconds)
        return {"slept": seconds}

    server = serve(
        [
            ScriptedTurn(tool_calls=[ScriptedCall(name="sleepy", arguments={"seconds": 0.3})]),
            ScriptedTurn(text="ok"),
        ]
    )
    agent = Agent(model_for(server), FunctionTools([sleepy]), "s")
    ticks: list[float] = []

    async def go() -> None:
        from vaultpilot.agent import run

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)

        task = asyncio.create_task(ticker())
        async for _ in run(agent, "sleep"):
            pass
        task.cancel()

    asyncio.run(go())
    assert len(ticks) > 10


def test_config_file_shared_with_the_server(tmp_path: Path) -> None:
    """The server's [server] table lives in the same file; the agent settings ignore it."""
    path = tmp_path / "config.toml"
    path.write_text('model = "m"\n[server]\nport = 34701\n[approvals]\nshell = "deny"\n')
    cfg = load_config(env={"VAULTPILOT_CONFIG": str(path)}).config
    assert (cfg.model, cfg.approvals) == ("m", {"shell": "deny"})
    path.write_text('model = "m"\n[sever]\nport = 1\n')
    with pytest.raises(SetupError, match="unknown setting 'sever'"):
        load_config(env={"VAULTPILOT_CONFIG": str(path)})


def test_an_approvals_typo_is_refused_with_the_names_it_meant(tmp_path: Path) -> None:
    from vaultpilot.agent.config import load_config
    from vaultpilot.errors import SetupError

    path = tmp_path / "config.toml"
    path.write_text('[approvals]\nobsidian_manage_file = "ask"\n', encoding="utf-8")
    with pytest.raises(SetupError, match="did you mean 'obsidian_vault_manager'"):
        load_config(path=path)
    path.write_text('[approvals]\n"obsidian_vault_manager.apend_note" = "ask"\n', "utf-8")
    with pytest.raises(SetupError, match=r"has no operation 'apend_note'.*append_note"):
        load_config(path=path)
    path.write_text('[approvals]\nmy_own_tool = "deny"\nshell = "deny"\n', encoding="utf-8")
    assert load_config(path=path).config.approvals == {"my_own_tool": "deny", "shell": "deny"}
