"""``vaultpilot mcp``: the vault tools for Claude Desktop, Claude Code, Cursor and any MCP client.

    vaultpilot mcp --vault ~/Notes                          serve one vault over stdio
    vaultpilot mcp --vault work=~/Work --vault home=~/Home  several (tools gain a `vault` parameter)
    vaultpilot mcp config claude-desktop --vault ~/Notes    print the client's configuration

``mcp`` speaks MCP on stdout and nothing else; logs and errors go to stderr. The vault is
``--vault`` (repeatable, ``NAME=PATH`` or ``PATH``), else ``$VAULTPILOT_VAULT``: never the
current folder, which for a desktop client is often ``/``. The approval policy is the agent's
(``[approvals]`` in the config file). The SDK is imported only when the command runs.

``mcp config CLIENT`` prints the snippet on stdout (JSON for Claude Desktop and Cursor, a shell
command for Claude Code) with the absolute paths of this installation's ``vaultpilot`` and of the
vaults, and says on stderr where it goes. What this shell chose carries over, since the client
starts the server without it: the data folder (``--data-dir``, else ``$VAULTPILOT_DATA_DIR``) as
``--data-dir``, so the client shares the journal and write lock, and ``$VAULTPILOT_CONFIG`` as
the server's environment, so its ``[rules]`` and ``[approvals]`` hold.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from vaultpilot.cli.common import DataDirOpt, err_console, handle_errors
from vaultpilot.configfile import CONFIG_ENV
from vaultpilot.errors import SetupError
from vaultpilot.locations import DATA_DIR_ENV, VAULT_ENV

__all__ = ["register"]

VaultsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--vault",
        help=f"A vault folder, or NAME=FOLDER; repeat for several vaults (default: ${VAULT_ENV}).",
    ),
]


class Client(StrEnum):
    claude_desktop = "claude-desktop"
    claude_code = "claude-code"
    cursor = "cursor"


_WHERE = {
    Client.claude_desktop: (
        "Add it to claude_desktop_config.json (Settings > Developer > Edit Config; macOS: "
        "~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\), merging "
        "mcpServers if the file has one, then restart Claude Desktop."
    ),
    Client.claude_code: "Run it in a shell (add --scope user to use it in every project).",
    Client.cursor: (
        "Add it to ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project), "
        "merging mcpServers if the file has one."
    ),
}


def _specs(vault: list[str] | None) -> list[str]:
    if vault:
        return vault
    if os.environ.get(VAULT_ENV):
        return [os.environ[VAULT_ENV]]
    raise SetupError(
        f"Name the vault to serve: --vault PATH (or NAME=PATH, repeatable), or set {VAULT_ENV}."
    )


def _executable() -> str:
    """The absolute path of this installation's ``vaultpilot`` command."""
    here = Path(sys.argv[0])
    if here.name.startswith("vaultpilot") and here.exists():
        return str(here.absolute())
    beside = Path(sys.executable).parent / ("vaultpilot.exe" if os.name == "nt" else "vaultpilot")
    if beside.exists():
        return str(beside.absolute())
    found = shutil.which("vaultpilot")
    if found is None:
        raise SetupError("Could not find the vaultpilot command; run this with its full path.")
    return str(Path(found).absolute())


def _args(specs: list[str], data_dir: str | None) -> list[str]:
    from vaultpilot.mcp.vaults import parse_vault_specs

    args = ["mcp"]
    for spec in specs:
        ((name, path),) = parse_vault_specs([spec]).items()
        explicit = "=" in spec and spec.partition("=")[0] == name
        args += ["--vault", f"{name}={path}" if explicit else str(path)]
    chosen = data_dir or os.environ.get(DATA_DIR_ENV)
    if chosen:
        args += ["--data-dir", str(Path(chosen).expanduser().absolute())]
    return args


def _env() -> dict[str, str]:
    """The environment the server needs from this shell: the config file it names and the
    embedding settings (the index is shared: vectors of another model would be dropped). A
    key (OPENAI_API_KEY) is never written into a client's configuration."""
    from vaultpilot.index.semantic import (
        EMBEDDINGS_BASE_URL_ENV,
        EMBEDDINGS_ENV,
        EMBEDDINGS_MODEL_ENV,
    )

    chosen = os.environ.get(CONFIG_ENV)
    env = {CONFIG_ENV: str(Path(chosen).expanduser().absolute())} if chosen else {}
    for name in (EMBEDDINGS_ENV, EMBEDDINGS_BASE_URL_ENV, EMBEDDINGS_MODEL_ENV):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def snippet(
    client: Client, command: str, args: list[str], env: dict[str, str] | None = None
) -> str:
    """The configuration text for ``client`` (see the module)."""
    env = env or {}
    if client is Client.claude_code:
        pairs = [word for key, value in env.items() for word in ("-e", f"{key}={value}")]
        return shlex.join(["claude", "mcp", "add", "vaultpilot", *pairs, "--", command, *args])
    server: dict[str, object] = {"command": command, "args": args}
    if env:
        server["env"] = env
    return json.dumps({"mcpServers": {"vaultpilot": server}}, indent=2, ensure_ascii=False)


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``mcp config`` to ``app``."""
    mcp_app = typer.Typer(help="Serve the vault tools to MCP clients (Claude, Cursor, ...).")
    app.add_typer(mcp_app, name="mcp")

    @mcp_app.callback(invoke_without_command=True)
    @handle_errors
    def mcp(
        ctx: typer.Context,
        vault: VaultsOpt = None,
        embed: Annotated[
            bool,
            typer.Option(
                "--embed/--no-embed",
                help="Embed new and changed notes for semantic search in the background.",
            ),
        ] = True,
        rescan: Annotated[
            float,
            typer.Option(
                "--rescan", min=1.0, help="Seconds between two looks for notes changed outside."
            ),
        ] = 30.0,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Serve the vaults over MCP on stdin/stdout (what an MCP client launches)."""
        if ctx.invoked_subcommand is not None:
            return
        import functools

        import anyio

        from vaultpilot.agent.config import load_config
        from vaultpilot.index.semantic import select_embedder
        from vaultpilot.locations import data_root, vault_data_dir
        from vaultpilot.mcp import (
            Approvals,
            LocalVault,
            configure_logging,
            parse_vault_specs,
            serve_stdio,
        )
        from vaultpilot.tools.semantic import live

        configure_logging()
        specs = parse_vault_specs(_specs(vault))
        loaded = load_config()
        # Read here (not only by Approvals) so a wrong config file stops the server saying why.
        approvals = Approvals.read(
            loaded.path if loaded.path.is_file() else None, loaded.config.approvals
        )
        root_dir = data_root(data_dir)
        load = functools.cache(select_embedder)  # one model for every vault, loaded on first use
        vaults = {
            name: LocalVault(
                root,
                vault_data_dir(root, root_dir) / "index.db",
                live(load),
            )
            for name, root in specs.items()
        }
        anyio.run(
            functools.partial(serve_stdio, vaults, approvals=approvals, embed=embed, rescan=rescan)
        )

    @mcp_app.command("config")
    @handle_errors
    def config(
        client: Annotated[Client, typer.Argument(help="The MCP client to configure.")],
        vault: VaultsOpt = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Print the configuration that makes CLIENT launch `vaultpilot mcp` for the vaults."""
        specs = vault or [os.environ.get(VAULT_ENV) or "."]
        args, env = _args(specs, data_dir), _env()
        typer.echo(snippet(client, _executable(), args, env))
        err_console.print(_WHERE[client], soft_wrap=True)
        kept = (
            [f"the data folder {args[args.index('--data-dir') + 1]}"]
            if "--data-dir" in args
            else []
        )
        if CONFIG_ENV in env:
            missing = "" if Path(env[CONFIG_ENV]).is_file() else ", which does not exist yet"
            kept.append(f"the config file {env[CONFIG_ENV]} ({CONFIG_ENV}{missing})")
        kept += [f"{name}={env[name]}" for name in env if name != CONFIG_ENV]
        if kept:
            err_console.print(
                "It carries over what this shell uses: " + " and ".join(kept) + ".",
                soft_wrap=True,
                markup=False,
            )
