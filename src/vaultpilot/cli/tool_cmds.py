"""``vaultpilot tool``: call any vault tool from the shell and print its JSON result.

    vaultpilot tool --list                                  each tool and operation, one line
    vaultpilot tool --list --schema                         the tools and their JSON Schemas
    vaultpilot tool obsidian_query_vault --json '{"queryType": "recent_changes", "limit": 5}'
    echo '{...}' | vaultpilot tool obsidian_vault_manager --json -

The result is printed as JSON on stdout, failures included (they are results too). The exit code
is 0 when the call succeeded, 2 when the call must change (bad arguments, missing note, refused
path, confirmation needed) and 1 when something outside failed (disk, index).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from vaultpilot.cli.common import DataDirOpt, VaultOpt, exit_code_for, handle_errors, open_workspace
from vaultpilot.errors import InvalidArgumentError

__all__ = ["register"]


def _arguments(raw: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    text = sys.stdin.read() if raw == "-" else raw
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"--json is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            'give an object such as \'{"queryType": "recent_changes"}\'.'
        ) from None
    if not isinstance(value, dict):
        raise InvalidArgumentError("--json must be a JSON object of the tool's parameters.")
    return value


def _print(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def _summary() -> None:
    """One line per tool and operation: what it does, whether it writes or asks first, and
    whether it previews with dryRun (its facts say so and its tool's schema has the field)."""
    from vaultpilot.tools import TOOLS

    for tool in TOOLS:
        typer.echo(f"{tool.name}  ({tool.title})")
        previews = "dryRun" in tool.spec()["parameters"].get("properties", {})
        for op in tool.operations.values():
            marks = ["writes" if op.writes else "reads"]
            if op.destructive:
                marks.append("asks first in the agent")
            if op.dry_run and previews:
                marks.append("dryRun")
            typer.echo(f"  {op.name:<22} {op.effect}  [{', '.join(marks)}]")
    typer.echo(
        "Arguments: `vaultpilot tool --list --schema`; call: vaultpilot tool NAME --json '{...}'"
    )


def register(app: typer.Typer) -> None:
    """Add the ``tool`` command to ``app``."""

    @app.command("tool")
    @handle_errors
    def tool(
        name: Annotated[
            str | None, typer.Argument(help="Tool to call, e.g. obsidian_query_vault.")
        ] = None,
        arguments: Annotated[
            str | None,
            typer.Option(
                "--json",
                metavar="JSON",
                help="The tool's arguments as a JSON object ('-' reads stdin).",
            ),
        ] = None,
        list_tools: Annotated[
            bool,
            typer.Option(
                "--list",
                help="List the tools and their operations (JSON Schemas with --schema, or when "
                "the output is not a terminal).",
            ),
        ] = False,
        schema: Annotated[
            bool, typer.Option("--schema", help="With --list: print each tool's JSON Schema.")
        ] = False,
        vault: VaultOpt = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Call a vault tool with JSON arguments and print its JSON result."""
        from vaultpilot.tools import open_context, run_tool, tool_schemas
        from vaultpilot.tools.semantic import Semantic

        if list_tools:
            if schema or not sys.stdout.isatty():
                _print(tool_schemas())
            else:
                _summary()
            return
        if not name:
            raise InvalidArgumentError(
                "Name the tool to call (see `vaultpilot tool --list`), e.g. "
                '`vaultpilot tool obsidian_query_vault --json \'{"queryType": "recent_changes"}\'`.'
            )
        args = _arguments(arguments)
        ws = open_workspace(vault, data_dir)
        ctx = open_context(ws.vault, ws.db_path, semantic=Semantic())
        try:
            outcome = run_tool(ctx, name, args)
        finally:
            ctx.conn.close()
        _print(outcome.result)
        if outcome.error is not None:
            raise typer.Exit(exit_code_for(outcome.error))
