"""The ``vaultpilot`` command: wires the sub-commands together and nothing else.

Startup is kept short (``vaultpilot --help`` in well under 0.15 s, see docs/benchmarks.md): a
sub-command's module is imported only when that command runs or its own help is asked for.
``COMMANDS`` names each command's module and the one-line summary the top-level help lists (a
test checks each summary against the command's own docstring, so they cannot drift). Help is
plain text (no Rich markup: ``[server]`` in a help string stays as written, and no ``<bool>``
type labels); ``-h`` is ``--help`` everywhere; ``--version`` prints the version.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
import typer.core
import typer.main

from vaultpilot import __version__

__all__ = ["COMMANDS", "app", "main"]

# name -> (module under vaultpilot.cli, summary shown by `vaultpilot --help`), in help order.
COMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("agent_cmds", "Talk with the agent about the vault; each message is a run."),
    "ask": ("agent_cmds", "Ask the agent once: it searches, reads and edits the vault."),
    "config": ("agent_cmds", "Show the agent settings, each with where it came from."),
    "index": ("index_cmds", "Bring the index up to date with the vault, then embed new notes."),
    "search": ("index_cmds", "Keyword search over titles, aliases, headings and text."),
    "links": ("index_cmds", "Links written in a note, with where each one leads."),
    "backlinks": ("index_cmds", "Notes that link to a note."),
    "unresolved": ("index_cmds", "Links that lead to no file, per note."),
    "status": ("index_cmds", "Notes on disk against the index: stale files, errors, vectors."),
    "embed": ("embed_cmds", "Embed the notes' chunks for semantic search."),
    "tool": ("tool_cmds", "Call a vault tool with JSON arguments and print its JSON result."),
    "history": ("journal_cmds", "List the vault's change sets, newest first."),
    "show": ("journal_cmds", "Print the unified diffs of one change set."),
    "undo": ("journal_cmds", "Restore every file of a change set to its state before it."),
    "serve": ("server_cmds", "Serve the vaults and the agent view over local HTTP."),
    "open": ("server_cmds", "Print a one-time login link to the agent view, and open it."),
    "key": ("server_cmds", "The server's API key (show, rotate)."),
    "mcp": ("mcp_cmds", "Serve the vault tools to MCP clients (Claude, Cursor, ...)."),
    "plugin": ("plugin_cmds", "The Obsidian plugin (install)."),
    "agents": ("agents", "List the registered process tools and call one by hand."),
    "contract": ("agents", "The agent contract's JSON Schemas."),
}

HELP = (
    "Agent mode for an Obsidian vault: index, search, ask and edit notes safely.\n\n"
    "Start with `vaultpilot chat` inside a vault (a folder with .obsidian/), or pass --vault."
)


def _load(name: str) -> Any:
    """Import the module that defines ``name`` and return its click command."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module = importlib.import_module(f"vaultpilot.cli.{entry[0]}")
    holder = typer.Typer(rich_markup_mode=None, add_completion=False)

    @holder.callback()
    def _group() -> None:  # forces a group even for a module with one command
        pass

    module.register(holder)
    group = typer.main.get_command(holder)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands.get(name)
    if command is not None:
        _plain_metavars(command)
    return command


def _no_type(ctx: Any = None) -> None:
    return None


def _plain_metavars(command: Any) -> None:
    """``--vault VAULT`` rather than typer's ``--vault <str>``; flags show no type at all."""
    for param in command.params:
        if param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = (param.name or "value").upper()
        if param.param_type_name == "argument":
            param.display_type_rich = _no_type  # the name says enough: no "<str>" after it
    for sub in getattr(command, "commands", {}).values():
        _plain_metavars(sub)


class LazyGroup(typer.core.TyperGroup):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _load(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [(name, summary) for name, (_module, summary) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"vaultpilot {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="vaultpilot",
    cls=LazyGroup,
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    pass


def main() -> None:
    app()
