"""``vaultpilot serve``, ``open`` and ``key``: run the Agent Communication Server, sign in to it.

    vaultpilot serve --vault ~/Notes                     one vault (its VaultID: the folder name)
    vaultpilot serve --vault work=~/Work --vault home=~/Home --port 34701
    vaultpilot serve --show-key                          print the key even when it is not new
    vaultpilot open                                      a one-time login link to the agent view
    vaultpilot key show                                  print the key and its file
    vaultpilot key rotate                                replace the key (running servers follow)

``serve`` prints the address, the vaults, whether a model is configured (and how to configure
one when not), where the API key lives, and a one-time login link to the agent view made by the
server itself (``server.banner``); a key made on this start is printed once. ``open`` asks the
running server for a new login link with the key from the key file (``POST /login-link``),
prints it, and opens the browser when there is one. Listening on a non-loopback address needs
``--allow-remote`` and prints a warning. Settings come from the flags, then the environment,
then the ``[server]`` table of the config file (see ``vaultpilot.server.settings``).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultpilot.cli.common import DataDirOpt, console, err_console, handle_errors
from vaultpilot.errors import SetupError, map_os_errors
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
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        help="Config file (default: $VAULTPILOT_CONFIG, else config.toml in the per-user "
        "config folder; `vaultpilot config` shows which).",
    ),
]
HostOpt = Annotated[
    str | None,
    typer.Option("--host", help="Address to listen on (default 127.0.0.1)."),
]
PortOpt = Annotated[
    int | None,
    typer.Option("--port", min=0, max=65535, help="Port (default 34700)."),
]


def _listen(host: str, port: int) -> socket.socket:
    """Listen now, so a busy port is one clear error (not a traceback) and a client that
    connects as soon as the address is printed waits instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only for sockets
    # whose proto says TCP (with 0, every reply would wait ~40 ms for a delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    address = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
    another = "Choose another port with --port (or $VAULTPILOT_PORT)."
    try:
        with map_os_errors(address, "listen on", {OSError: SetupError}, advice=another):
            sock.bind((host, port))
            sock.listen(2048)  # connections wait in the backlog until the server is up
    except SetupError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _say(line: str) -> None:
    # Plain text: no Rich markup (a "[server]" stays), and a long link is never cut in two.
    console.print(escape(line), soft_wrap=True)


def _command() -> str:
    """How to type ``vaultpilot`` here: its name when it is on PATH, else its path."""
    import shutil

    if shutil.which("vaultpilot"):
        return "vaultpilot"
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if here is None or not here.exists():
        return "vaultpilot"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


def _terminal_hint(vaults: list[Path]) -> list[str]:
    """The terminal way in, with a command that works from this shell."""
    cmd = _command()
    where = f" --vault {vaults[0]}" if len(vaults) == 1 else ""
    lines = ["", f"Or chat with the agent in a terminal: {cmd} chat{where}"]
    if cmd != "vaultpilot":
        lines.append(
            "  (`vaultpilot` is not on PATH: use that path, or `source .venv/bin/activate`, "
            "or install it with `pipx install .` or `uv tool install .`)"
        )
    return lines


def _has_browser() -> bool:
    """Whether ``webbrowser`` would open a graphical browser (not a text one in this terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _login_link(url: str, key: str) -> str:
    """Ask the server at ``url`` for a one-time login link (``POST /login-link``)."""
    import httpx

    try:
        with httpx.Client(base_url=url, timeout=10, trust_env=False) as client:
            reply = client.post("/login-link", headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError:
        raise SetupError(
            f"No vaultpilot server answers at {url}. Start it first with `vaultpilot serve` "
            "(or `make run`), or give its --host and --port."
        ) from None
    if reply.status_code == 401:
        raise SetupError(
            f"The server at {url} refused the key: it uses another data folder (--data-dir) "
            "or its key was rotated. Use the same --data-dir as `vaultpilot serve`."
        )
    if reply.status_code == 404:
        raise SetupError(
            f"The server at {url} has no agent view (an older vaultpilot?); restart it with "
            "this version's `vaultpilot serve`."
        )
    try:
        link = str(reply.raise_for_status().json()["url"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        raise SetupError(
            f"The server at {url} answered HTTP {reply.status_code} instead of a login link."
        ) from None
    return link


def register(app: typer.Typer) -> None:
    """Add ``serve``, ``open`` and ``key show|rotate`` to ``app``."""
    key_app = typer.Typer(help="The server's API key.", no_args_is_help=True)
    app.add_typer(key_app, name="key")

    @app.command("serve")
    @handle_errors
    def serve(
        vault: VaultsOpt = None,
        host: HostOpt = None,
        port: PortOpt = None,
        allow_remote: Annotated[
            bool,
            typer.Option(
                "--allow-remote", help="Allow a non-loopback --host (reachable by other machines)."
            ),
        ] = False,
        config: ConfigOpt = None,
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
        watch: Annotated[
            bool | None,
            typer.Option(
                "--watch/--no-watch",
                help="Keep the index live with a file watcher, so tool calls do not scan the "
                "vault (default: on, or watch in [server]).",
            ),
        ] = None,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Serve the vaults and the agent view over authenticated local HTTP and WebSocket."""
        import uvicorn

        from vaultpilot.server import create_app, load_settings
        from vaultpilot.server.banner import (
            Banner,
            banner,
            model_status,
            read_coverage,
            server_url,
        )
        from vaultpilot.server.keyfile import ensure_key
        from vaultpilot.server.serving import uvicorn_config

        if any(not spec.strip() for spec in vault or ()):
            raise SetupError("--vault is empty. Give the vault folder: --vault PATH (or ID=PATH).")
        settings = load_settings(
            vaults=vault or (),
            host=host,
            port=port,
            allow_remote=allow_remote,
            config=config,
            data_dir=data_dir,
            background_embedding=embed,
            watch=watch,
        )
        sock = _listen(settings.host, settings.port)
        settings = settings.model_copy(update={"port": sock.getsockname()[1]})
        key, created = ensure_key(settings.key_path)
        app_ = create_app(settings)
        model, model_help = model_status(settings)
        # The banner's link is made by this server's own session store, so it works at once.
        token, _ttl = app_.state.vaultpilot.sessions.issue_link()
        lines = banner(
            Banner(
                settings=settings,
                url=server_url(settings.host, settings.port),
                login_path=f"/login?token={token}",
                model=model,
                model_help=model_help,
                key=key if created or show_key else None,
                key_created=created,
                coverage={vid: read_coverage(settings.index_db(vid)) for vid in settings.vaults},
            )
        )
        # Made before the banner: it reconfigures logging, which a Ctrl+C pressed as soon as
        # "Press Ctrl+C to stop" shows must not interrupt halfway (a traceback, not "stopped").
        config_ = uvicorn_config(app_, ws_max_size=settings.max_body_size)
        hint = _terminal_hint(list(settings.vaults.values()))
        stop = [line for line in lines if line.startswith("Press Ctrl")]
        lines = [line for line in lines if line not in stop] + hint[1:] + stop
        for line in lines:
            if line.startswith("warning:"):
                err_console.print(escape(line), soft_wrap=True, style="bold yellow")
            else:
                _say(line)
        try:
            uvicorn.Server(config_).run(sockets=[sock])
        finally:
            sock.close()

    @app.command("open")
    @handle_errors
    def open_view(
        host: Annotated[
            str | None, typer.Option("--host", help="The server's address (default 127.0.0.1).")
        ] = None,
        port: Annotated[
            int | None,
            typer.Option("--port", min=1, max=65535, help="The server's port (default 34700)."),
        ] = None,
        config: ConfigOpt = None,
        browser: Annotated[
            bool,
            typer.Option("--browser/--no-browser", help="Open the link in the browser."),
        ] = True,
        data_dir: DataDirOpt = None,
    ) -> None:
        """Print a one-time login link to the agent view of the running server, and open it."""
        import webbrowser

        from vaultpilot.server.banner import server_url
        from vaultpilot.server.keyfile import key_path, read_key
        from vaultpilot.server.settings import server_address

        the_host, the_port = server_address(host=host, port=port, config=config)
        key = read_key(key_path(data_root(data_dir)))
        link = _login_link(server_url(the_host, the_port), key)
        _say("Open the agent view with this link (it signs you in; it works once, for 5 minutes):")
        _say(f"  {link}")
        if browser and _has_browser() and webbrowser.open(link):
            _say("Opened in your browser.")

    @key_app.command("show")
    @handle_errors
    def show(data_dir: DataDirOpt = None) -> None:
        """Print the API key and where it is kept (keep it secret: it opens the vaults)."""
        from vaultpilot.server.keyfile import key_path, read_key

        path: Path = key_path(data_root(data_dir))
        _say(f"API key: {read_key(path)}")
        _say(f"  key file: {path} (mode 0600; `vaultpilot key rotate` replaces it)")

    @key_app.command("rotate")
    @handle_errors
    def rotate(data_dir: DataDirOpt = None) -> None:
        """Replace the API key; a running server accepts only the new one from now on, and
        browsers signed in with the old one are signed out."""
        from vaultpilot.server.keyfile import key_path, rotate_key

        path: Path = key_path(data_root(data_dir))
        key = rotate_key(path)
        _say(f"New API key: {key}")
        _say(f"  key file: {path} (mode 0600; `vaultpilot key show` prints it again)")
        _say("Browsers signed in to the agent view are signed out; `vaultpilot open` signs one in.")
