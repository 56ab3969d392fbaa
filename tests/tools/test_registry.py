"""The registry: one entry point, validated arguments, and failures as results, never tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultpilot.errors import InternalError, InvalidArgumentError
from vaultpilot.tools import ToolContext, call_tool, get_tool, is_error, open_context, run_tool
from vaultpilot.tools.models import QueryVaultParams

from .conftest import NOW


def test_a_snake_case_name_is_refused_saying_how_to_write_it(ctx: ToolContext) -> None:
    # Checks made before validation (approval rules, the deny check) read the schema's names:
    # a second spelling would let a call step around them ('reference_note' read a denied
    # note's links; 'query_type' escaped a rule on the operation).
    result = call_tool(
        ctx, "obsidian_query_vault", {"query_type": "recent_changes", "response_format": "concise"}
    )
    assert is_error(result)
    assert "unknown parameter 'query_type': write it 'queryType'" in result["error"]
    assert "unknown parameter 'response_format': write it 'responseFormat'" in result["error"]
    result = call_tool(ctx, "obsidian_query_vault", {"queryType": "recent_changes"})
    assert not is_error(result) and len(result["results"]) == 10
    params = QueryVaultParams.model_validate({"queryType": "recent_changes"})
    assert params.response_format == "detailed" and params.limit == 10


def test_unknown_tool_and_non_object_arguments(ctx: ToolContext) -> None:
    outcome = run_tool(ctx, "obsidian_search", {})
    assert outcome.result == {
        "error": "Unknown tool 'obsidian_search'. Valid tools: obsidian_query_vault, "
        "obsidian_get_context, obsidian_vault_manager."
    }
    assert isinstance(outcome.error, InvalidArgumentError)
    bad = run_tool(ctx, "obsidian_get_context", ["read_note"])  # type: ignore[arg-type]
    assert bad.result["error"] == "Arguments for obsidian_get_context must be a JSON object."
    with pytest.raises(InvalidArgumentError, match="Unknown tool"):
        get_tool("nope")


def test_validation_names_every_wrong_field(ctx: ToolContext) -> None:
    result = call_tool(
        ctx,
        "obsidian_vault_manager",
        {"operation": "create_note", "confirmDestructive": "maybe", "targets": [1, 2], "x": 1},
    )
    message = result["message"]
    assert message.startswith("Invalid arguments for obsidian_vault_manager: ")
    flag = "'confirmDestructive' must be true or false (a JSON boolean, unquoted), not \"maybe\""
    assert flag in message
    assert "'targets.0': Input should be a valid string" in message
    assert "unknown parameter 'x'" in message
    assert "pydantic" not in message and "errors.pydantic.dev" not in message


def test_unexpected_failures_never_leak(vault: Path, tmp_path: Path) -> None:
    ctx = open_context(vault, tmp_path / "closed.db", now=lambda: NOW)
    ctx.conn.close()
    outcome = run_tool(ctx, "obsidian_query_vault", {"queryType": "recent_changes"})
    assert isinstance(outcome.error, InternalError)
    assert outcome.result["error"] == (
        "obsidian_query_vault stopped on an unexpected internal error (ProgrammingError). Check "
        "the vault's state (e.g. with obsidian_query_vault) before retrying."
    )
    assert "closed" not in str(outcome.result) and "Traceback" not in str(outcome.result)


def test_manager_failure_keeps_the_operation(ctx: ToolContext) -> None:
    outcome = run_tool(ctx, "obsidian_vault_manager", {"operation": "delete_folder", "target": "X"})
    assert outcome.result["operation"] == "delete_folder" and outcome.result["success"] is False
    assert is_error(outcome.result) and outcome.error is not None


def test_sync_can_be_left_to_a_watcher(vault: Path, tmp_path: Path) -> None:
    ctx = open_context(vault, tmp_path / "w.db", now=lambda: NOW, sync_before_read=False)
    try:
        empty = call_tool(ctx, "obsidian_query_vault", {"queryType": "recent_changes"})
        assert empty["totalFound"] == 0  # nobody synced the index yet
        ctx.fresh(force=True)
        assert (
            call_tool(ctx, "obsidian_query_vault", {"queryType": "recent_changes"})["totalFound"]
            == 47
        )
    finally:
        ctx.conn.close()
