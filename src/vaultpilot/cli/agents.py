"""``vaultpilot agents …`` and ``vaultpilot contract …``: the process tools, by hand.

* ``agents list [--json]``: the tools registered in memory.db (the shipped agents are registered
  first, idempotently).
* ``agents call NAME --action A --payload JSON [--json]``: build an ``ActionRequest``, run the tool
  through the orchestrator, show the ``ActionResponse``.
* ``contract schema NAME``: the JSON Schema of a contract model, derived from ``contract.models``.

Exit codes: 0 success; 1 the tool replied with status "error"; 2 the command line is wrong
(unknown tool or schema, payload not a JSON object); 3 the tool gave no valid reply (could not
start, timed out, crashed, wrote garbage); 4 memory.db could not be opened.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import textwrap
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from vaultpilot.agent.toolset import vault_arguments
from vaultpilot.cli.common import VaultOpt, discover_vault, err_console
from vaultpilot.contract.catalog import register_shipped
from vaultpilot.contract.models import SCHEMA_NAMES, json_schema
from vaultpilot.contract.orchestrator import DEFAULT_TIMEOUT_S, Failed, Replied, call_tool
from vaultpilot.errors import RequestError, SetupError, VaultpilotError
from vaultpilot.locations import DATA_DIR_ENV, data_root, memory_db_path
from vaultpilot.memory.db import connect
from vaultpilot.memory.registry import ProcessTool, RegisteredTool, get_tool, list_tools

__all__ = ["agents_app", "contract_app", "register"]

agents_app = typer.Typer(
    help="List the registered tools and call a process tool by hand.", no_args_is_help=True
)
contract_app = typer.Typer(
    help="The agent contract's JSON Schemas (ActionRequest, ActionResponse, ...).",
    no_args_is_help=True,
)

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help=f"Where memory.db lives (default: ${DATA_DIR_ENV}, else the per-user data folder).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _fail(message: str, code: int) -> typer.Exit:
    """One ``error:`` line on stderr, as every command prints it (never wrapped mid-sentence)."""
    line = Text("error: ", style="bold red")
    line.append(message)
    err_console.print(line, soft_wrap=True)
    return typer.Exit(code)


def _registry(data_dir: Path | None) -> sqlite3.Connection:
    path = memory_db_path(data_root(data_dir))
    try:
        conn = connect(path)
        register_shipped(conn)
    except VaultpilotError as exc:
        raise _fail(str(exc), 4) from None
    return conn


def _actions(tool: RegisteredTool) -> list[str]:
    """Action names, read from a tagged-union schema's discriminator mapping."""
    mapping = tool.payload_schema.get("discriminator", {}).get("mapping", {})
    return list(mapping) if isinstance(mapping, dict) else []


@agents_app.command("list")
def list_command(data_dir: DataDirOption = None, as_json: JsonOption = False) -> None:
    """List the tools registered in memory.db."""
    conn = _registry(data_dir)
    try:
        tools = list_tools(conn)
    finally:
        conn.close()
    console = Console()
    if as_json:
        rows = [
            {
                "name": t.name,
                "kind": t.kind,
                "description": t.description,
                "actions": _actions(t),
                "command": list(t.command) if isinstance(t, ProcessTool) else None,
                "payload_schema": t.payload_schema,
            }
            for t in tools
        ]
        console.print_json(data=rows)
        return
    # One block a tool, wrapped at words: a table folded module names at 80 columns.
    # The command is never wrapped: it is one line a person copies into a shell.
    width = max(40, console.width - 1)
    for t in tools:
        command = shlex.join(t.command) if isinstance(t, ProcessTool) else "(in-process)"
        console.print(Text.assemble((t.name, "bold"), (f" ({t.kind})", "dim")))
        for text, style in (
            (t.description, ""),
            (f"actions: {', '.join(_actions(t)) or '(none listed)'}", "dim"),
        ):
            wrapped = textwrap.fill(
                text, width, initial_indent="  ", subsequent_indent="    ",
                break_long_words=False, break_on_hyphens=False,
            )  # fmt: skip
            console.print(Text(wrapped, style), soft_wrap=True)
        console.print(Text(f"  command: {command}", "dim"), soft_wrap=True)


@agents_app.command("call")
def call_command(
    name: Annotated[str, typer.Argument(help="The tool, e.g. obsidian_agent or git_agent.")],
    action: Annotated[str, typer.Option("--action", help="e.g. read_note, git_status.")],
    payload: Annotated[str, typer.Option("--payload", help="The payload, a JSON object.")] = "{}",
    context: Annotated[str, typer.Option("--context", help="Free-text context.")] = "",
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds before the tool is stopped.")
    ] = DEFAULT_TIMEOUT_S,
    data_dir: DataDirOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the ActionResponse JSON only.")
    ] = False,
    vault: VaultOpt = None,
) -> None:
    """Call a process tool with one ActionRequest and show its ActionResponse.

    A tool that works on a vault or repository (vault_path, repo_path) is given the vault when
    the payload does not name one: --vault, $VAULTPILOT_VAULT or the nearest folder with
    .obsidian/.
    """
    try:
        body = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise _fail(f"--payload is not valid JSON: {exc.msg} (column {exc.colno}).", 2) from None
    if not isinstance(body, dict):
        raise _fail('--payload must be a JSON object, e.g. \'{"note_name": "Plan"}\'.', 2)
    conn = _registry(data_dir)
    try:
        body = _with_vault(get_tool(conn, name), body, vault)
    except VaultpilotError as exc:
        conn.close()
        raise _fail(str(exc), 2) from None
    # A child that uses memory.db (git_agent registers itself) must find the same one.
    env = None if data_dir is None else {**os.environ, DATA_DIR_ENV: str(data_root(data_dir))}
    try:
        outcome = call_tool(conn, name, action, body, timeout=timeout, env=env, context=context)
    except RequestError as exc:
        raise _fail(str(exc), 2) from None
    finally:
        conn.close()
    match outcome:
        case Failed():
            raise _fail(f"{outcome.message} [{outcome.reason}]", 3)
        case Replied(response=response):
            _show(response.model_dump(mode="json"), as_json=as_json)
            if response.status != "success":
                raise typer.Exit(1)


def _with_vault(tool: RegisteredTool, body: dict[str, Any], flag: str | None) -> dict[str, Any]:
    """``body`` with the vault in each vault argument the tool takes and the payload leaves out;
    unchanged when there is none to give (the tool then says what is missing)."""
    missing = (
        [n for n in vault_arguments(tool) if n not in body] if isinstance(tool, ProcessTool) else []
    )
    if not missing:
        return body
    try:
        where = discover_vault(flag)
    except SetupError:
        if flag:
            raise
        return body
    return {**body, **{n: str(where) for n in missing}}


def _show(response: dict[str, Any], *, as_json: bool) -> None:
    console = Console()
    if as_json:
        console.print_json(data=response)
        return
    result = response["result"] or {}
    ok = response["status"] == "success"
    head = Text(f"{response['status']} (code {response['code']})", style="green" if ok else "red")
    console.print(head)
    meta = Table.grid(padding=(0, 2))
    for key in ("request_id", "correlation_id"):
        meta.add_row(key, str(response[key]))
    if result:
        meta.add_row("output_type", str(result["output_type"]))
        if result.get("metadata") is not None:
            meta.add_row("metadata", json.dumps(result["metadata"]))
    if response["error"] is not None:
        meta.add_row("error", Text(response["error"], style="red"))
    console.print(meta)
    if result:
        console.rule("data")
        console.print(Text(result["data"]), soft_wrap=True)


@contract_app.callback()
def _contract() -> None:
    """The agent contract's JSON Schemas."""


@contract_app.command("schema")
def schema_command(
    name: Annotated[str, typer.Argument(help=f"One of: {', '.join(SCHEMA_NAMES)}.")],
) -> None:
    """Print the JSON Schema of a contract model (derived from the pydantic models)."""
    try:
        schema = json_schema(name)
    except RequestError as exc:
        raise _fail(str(exc), 2) from None
    Console().print_json(data=schema)


def register(app: typer.Typer) -> None:
    """Add ``agents`` and ``contract`` to the ``vaultpilot`` command."""
    app.add_typer(agents_app, name="agents")
    app.add_typer(contract_app, name="contract")
