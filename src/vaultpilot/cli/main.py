"""The ``vaultpilot`` command: wires the sub-commands together and nothing else."""

from __future__ import annotations

import typer

from vaultpilot.cli import (
    agent_cmds,
    embed_cmds,
    index_cmds,
    journal_cmds,
    mcp_cmds,
    plugin_cmds,
    server_cmds,
    tool_cmds,
)
from vaultpilot.cli.agents import agents_app, contract_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="vaultpilot",
    help="Agent mode for an Obsidian vault: index, search and (soon) edit notes safely.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_cmds.register(app)
tool_cmds.register(app)
agent_cmds.register(app)
embed_cmds.register(app)
server_cmds.register(app)
mcp_cmds.register(app)
plugin_cmds.register(app)
journal_cmds.register(app)
app.add_typer(agents_app, name="agents")
app.add_typer(contract_app, name="contract")


def main() -> None:
    app()
