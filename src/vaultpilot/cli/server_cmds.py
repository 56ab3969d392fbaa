"""``vaultpilot serve`` and ``vaultpilot key rotate``: run the Agent Communication Server.

    vaultpilot serve --vault ~/Notes                     one vault (its VaultID: the folder name)
    vaultpilot serve --vault work=~/Work --vault home=~/Home --port 34701
    vaultpilot serve --show-key                          print the key even when it is not new
    vaultpilot key rotate                                replace the key (running servers follow)

``serve`` prints the address, the vaults and where the API key lives; a key made on this start is
printed once. Listening on a non-loopback address needs ``--allow-remote`` and prints a warning.
Settings come from the flags, then the environment, then ``[server]`` in the config file (see
``vaultpilot.server.settings``).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer

from vaultpilot.cli.common import DataDirOpt, console, err_console, handle_errors
from vaultpilot.errors import SetupError
from vaultpilot.locations import data_root

__all__ = ["register"]

VaultsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--vault",
        help="A vault folder, or ID=FOLDER; repeat for several vaults (default: "
        "$VAULTPILOT_VAULT, else [server.vaults] in the config file).",
    ),
]


def _listen(host: str, port: int) -> socket.socket:
    """Listen now, so a busy port is one clear error (not a traceback) and a client that
    connects as soon as the address is printed waits instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only for sockets
    # whose proto says TCP (with 0, every reply would wait ~40 ms for a delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until the server is up
    except OSError as exc:
        sock.close()
        raise SetupError(
            f"Cannot listen on {host}:{port}: {exc.strerror}. Choose another port with --port "
            "(or $VAULTPILOT_PORT)."
        ) from None
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``key rotate`` to ``app``."""
    key_app = typer.Typer(help="The server's API key.", no_args_is_help=True)
    app.add_typer(key_app, name="key")

    @app.command("serve")
    @handle_errors
    def serve(
        vault: VaultsOpt = None,
        host: Annotated[
            str | None,
            typer.Option("--host", help="Address to listen on (default 127.0.0.1)."),
        ] = None,
        port: Annotated[
            int | None,
            typer.Option("--port", min=0, max=65535, help="Port (default 34700)."),
        ] = None,
        allow_remote: Annotated[
            bool,
            typer.Option(
                "--allow-remote", help="Allow a non-loopback --host (reachable by other machines)."
            ),
        ] = False,
        config: Annotated[
            str | None,
            typer.Option(
                "--config",
                help="Config file (default: $VAULTPILOT_CONFIG, else "
                "config.toml in the data folder).",
            ),
        ] = None,
        show_key: Annotated[
            bool, typer.Option("--show-key", help="Print the API key even if it is not new.")
        ] = False,
        embed: Annotated[
            bool | None,
            typer.Option(
                "--embed/--no-embed",
                help="Embed new and changed notes for semantic search in the background "
                "(default: on, or background_embedding in [server]).",
            ),
        ] = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Serve the vaults over authenticated local REST and WebSocket RPC."""
        import uvicorn

        from vaultpilot.server import create_app, load_settings
        from vaultpilot.server.keyfile import ensure_key
        from vaultpilot.server.settings import is_loopback

        settings = load_settings(
            vaults=vault or (),
            host=host,
            port=port,
            allow_remote=allow_remote,
            config=config,
            data_dir=data_dir,
            background_embedding=embed,
        )
        sock = _listen(settings.host, settings.port)
        settings = settings.model_copy(update={"port": sock.getsockname()[1]})
        key, created = ensure_key(settings.key_path)
        app_ = create_app(settings)
        url = _url(settings.host, settings.port)
        console.print(f"vaultpilot Agent Communication Server on [bold]{url}[/]")
        for vid, root in settings.vaults.items():
            console.print(f"  vault [bold]{vid}[/]: {root}")
        if settings.background_embedding:
            console.print(
                "  semantic search: embedding new and changed notes in the background "
                "(`vaultpilot status` shows how far)"
            )
        if created:
            console.print(f"New API key (shown once): [bold]{key}[/]")
        elif show_key:
            console.print(f"API key: [bold]{key}[/]")
        console.print(f"  key file: {settings.key_path} (mode 0600; `vaultpilot key rotate`)")
        if not is_loopback(settings.host):
            err_console.print(
                f"[bold yellow]warning:[/] listening on {settings.host}: other machines can "
                "reach this server. Anyone with the key can read and change the vaults."
            )
        console.print("Press Ctrl+C to stop.")
        config_ = uvicorn.Config(
            app_,
            log_level="warning",
            ws="websockets-sansio",
            lifespan="on",
            access_log=False,
            proxy_headers=False,
            server_header=False,
            # A larger WebSocket message is refused (close 1009) before it is buffered; HTTP
            # bodies are bounded by the application itself (server.limits).
            ws_max_size=settings.max_body_size,
        )
        try:
            uvicorn.Server(config_).run(sockets=[sock])
        finally:
            sock.close()

    @key_app.command("rotate")
    @handle_errors
    def rotate(data_dir: DataDirOpt = None) -> None:
        """Replace the API key; a running server accepts only the new one from now on."""
        from vaultpilot.server.keyfile import key_path, rotate_key

        path: Path = key_path(data_root(data_dir))
        key = rotate_key(path)
        console.print(f"New API key (shown once): [bold]{key}[/]")
        console.print(f"  key file: {path} (mode 0600)")
