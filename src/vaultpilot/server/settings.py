"""The Agent Communication Server's settings: from flags, the environment and the config file.

Precedence, for every setting: a command-line flag, else an environment variable, else the
``[server]`` table of the config file, else the default. The config file is the agent's
(``--config PATH``, else ``$VAULTPILOT_CONFIG``, else ``<user config dir>/vaultpilot/config.toml``;
see ``vaultpilot.agent.config``, which also gives the built-in agent its model), and the server
reads its ``[server]`` table::

    [server]
    host = "127.0.0.1"              # $VAULTPILOT_HOST
    port = 34700                    # $VAULTPILOT_PORT
    allow_remote = false            # only with it may host be a non-loopback address
    allowed_origins = ["app://obsidian.md"]   # browser origins allowed besides the server's own
    background_embedding = true     # embed new and changed notes for semantic search as they sync
    watch = true                    # a file watcher keeps the index live (tool calls skip the scan)
    rescan_interval = 30.0          # seconds between two looks for notes changed outside (Obsidian)
    max_body_size = 4194304         # bytes: the largest HTTP body or WebSocket message accepted
    write_lock_wait = 10.0          # seconds a write waits while another process writes the vault
    read_workers = 2                # processes running read tool calls (2; 0 on one CPU): reads
                                    # then use every CPU; 0 runs them in the server process

    [server.vaults]                 # VaultID = folder; --vault ID=PATH (repeatable) replaces these
    notes = "~/Notes"

    [server.shell]                  # ExecuteShell; off unless enabled
    enabled = false
    allow_shell = false             # run the command through /bin/sh -c (else an argument list)
    allowlist = ["git status", "git log --oneline -n *", "ls"]   # run without approval
    timeout = 30.0                  # seconds, then the process group is killed
    max_output = 65536              # bytes kept of stdout and of stderr each
    approval_timeout = 120.0        # seconds to wait for someone to approve
    env = ["GIT_AUTHOR_NAME"]       # extra environment variables passed through

    [server.agent]
    command = ["python", "my_agent.py"]   # an external agent spawned on StartAgent (optional)

An ``allowlist`` entry is a whole command line, split like a shell line, that an argument list
must match argument by argument (see ``shell``): ``"git status"`` allows exactly ``git status``;
``*`` stands for one argument that is not an option (does not start with ``-``), and ``**`` as
the last word for any further arguments, options included (``"git log **"`` allows every
``git log``, so use it knowingly). ``env`` is the only way a variable of the server's
environment reaches a command besides ``PATH``, ``HOME``, the locale, ``TZ``, ``USER``,
``LOGNAME`` and ``TMPDIR`` (an allowlist: nothing else passes, whatever its name). A listed name
that looks like a secret (a word ``KEY``, ``AUTH``, ``PASS``, ``PWD``, ``DSN``…, or ``TOKEN``,
``SECRET``, ``PASSWORD``, ``CREDENTIAL``, ``PRIVATE``, ``SESSION``, ``COOKIE``, ``DATABASE_URL``
anywhere, or a ``VAULTPILOT_`` name; see ``secret_looking``) is refused when the settings are
read rather than dropped in silence, so a secret never passes by mistake and a config that asks
for one says so at once: give such a value to the command another way.

``max_body_size`` bounds what one client request may carry (HTTP body and WebSocket message); a
larger one is refused with 413 ``payload_too_large`` before it is read into memory.

``load_settings`` raises ``SetupError`` with one line saying what to fix (an unreadable config,
an unknown key, a vault folder that does not exist, a non-loopback host without
``allow_remote``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vaultpilot.agent.config import CONFIG_ENV
from vaultpilot.configfile import config_path as agent_config_path
from vaultpilot.configfile import read_config
from vaultpilot.errors import SetupError
from vaultpilot.locations import VAULT_ENV, data_root
from vaultpilot.vault.lock import DEFAULT_WAIT

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "HOST_ENV",
    "PORT_ENV",
    "SECRET_PARTS",
    "SECRET_WORDS",
    "AgentSettings",
    "ServerSettings",
    "ShellPolicy",
    "is_loopback",
    "load_settings",
    "parse_vault_spec",
    "secret_looking",
    "server_address",
]

DEFAULT_PORT = 34700
HOST_ENV = "VAULTPILOT_HOST"
PORT_ENV = "VAULTPILOT_PORT"
_VAULT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
# A name looks like a secret when one of its words (split at '_', '-' and '.') is one of
# SECRET_WORDS, or when it contains one of SECRET_PARTS anywhere ("GITHUB_TOKEN", "MYAPIKEY",
# "DATABASE_URL"). Whole words for the short ones, so GIT_AUTHOR_NAME or KEYBOARD stay harmless.
SECRET_WORDS = frozenset({"KEY", "KEYS", "AUTH", "PASS", "PWD", "DSN", "PIN", "OTP"})
SECRET_PARTS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "APIKEY",
    "ACCESSKEY",
    "DATABASE_URL",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def secret_looking(name: str) -> bool:
    """Whether an environment variable's name suggests it holds a secret (see SECRET_WORDS)."""
    upper = name.upper()
    if upper.startswith("VAULTPILOT_") or any(part in upper for part in SECRET_PARTS):
        return True
    return any(word in SECRET_WORDS for word in re.split(r"[_.\-]+", upper))


class ShellPolicy(_Strict):
    """How ExecuteShell runs: off by default; see the module docstring for each field."""

    enabled: bool = False
    allow_shell: bool = False
    allowlist: tuple[str, ...] = ()
    timeout: float = Field(30.0, gt=0, le=3600)
    max_output: int = Field(65_536, ge=1024, le=16 * 1024 * 1024)
    approval_timeout: float = Field(120.0, gt=0, le=3600)
    env: tuple[str, ...] = ()

    @field_validator("allowlist")
    @classmethod
    def _entries_split(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                words = shlex.split(entry)
            except ValueError as exc:
                raise ValueError(f"allowlist entry {entry!r} cannot be split ({exc})") from None
            if not words or words[0] in ("*", "**"):
                raise ValueError(
                    f"allowlist entry {entry!r} must start with a program name, e.g. 'git status'"
                )
            if "**" in words[:-1]:
                raise ValueError(f"allowlist entry {entry!r}: '**' may only be the last word")
        return value

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        secret = [name for name in value if secret_looking(name)]
        if secret:
            raise ValueError(
                f"{', '.join(secret)} looks like a secret, and ExecuteShell never passes secrets "
                "to commands; remove it from env (a command that needs it must get it another way)"
            )
        return value


class AgentSettings(_Strict):
    """An external agent program to spawn on StartAgent (an argv list; empty: none)."""

    command: tuple[str, ...] = ()


def default_read_workers() -> int:
    """Read worker processes per vault by default: two, or none on one CPU (the server process
    alone is then as fast). Each holds its own index connection and, once a semantic search
    needs it, the embedding model and the vectors (~100 MB + ~80 MB at 50k sections)."""
    return 0 if (os.cpu_count() or 1) < 2 else 2


class ServerSettings(_Strict):
    """Everything ``create_app`` needs. ``vaults`` maps each VaultID to a vault folder."""

    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    allow_remote: bool = False
    allowed_origins: tuple[str, ...] = ()
    vaults: dict[str, Path] = Field(default_factory=dict)
    data_root: Path
    shell: ShellPolicy = Field(default_factory=ShellPolicy)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    config_path: Path | None = None
    subscriber_queue: int = Field(4096, ge=16)
    background_embedding: bool = True
    watch: bool = True
    rescan_interval: float = Field(30.0, gt=0, le=86400)
    max_body_size: int = Field(DEFAULT_MAX_BODY, ge=1024, le=1024 * 1024 * 1024)
    write_lock_wait: float = Field(DEFAULT_WAIT, ge=0, le=600)
    read_workers: int = Field(0, ge=0, le=32)  # load_settings: default_read_workers()

    @property
    def key_path(self) -> Path:
        """Where the API key lives: ``server.key`` in the data root (mode 0600)."""
        from vaultpilot.server.keyfile import key_path

        return key_path(self.data_root)

    @property
    def sessions_path(self) -> Path:
        """Where signed-in browsers' sessions are kept (hashes only, mode 0600; ``sessions``)."""
        return self.data_root / "sessions.json"

    def index_db(self, vault_id: str) -> Path:
        from vaultpilot.locations import vault_data_dir

        return vault_data_dir(self.vaults[vault_id], self.data_root) / "index.db"


class _ConfigFile(_Strict):
    """The ``[server]`` table of the config file."""

    host: str | None = None
    port: int | None = Field(None, ge=0, le=65535)
    allow_remote: bool | None = None
    allowed_origins: tuple[str, ...] = ()
    background_embedding: bool = True
    watch: bool = True
    rescan_interval: float = Field(30.0, ge=1, le=86400)
    max_body_size: int = Field(DEFAULT_MAX_BODY, ge=1024, le=1024 * 1024 * 1024)
    write_lock_wait: float = Field(DEFAULT_WAIT, ge=0, le=600)
    read_workers: int | None = Field(None, ge=0, le=32)
    vaults: dict[str, str] = Field(default_factory=dict)
    shell: ShellPolicy = Field(default_factory=ShellPolicy)
    agent: AgentSettings = Field(default_factory=AgentSettings)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _vault_id_for(path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-._")[:64]
    return name or "vault"


def _check_folder(raw: str, *, base: Path | None = None) -> Path:
    path = Path(raw).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise SetupError(f"Vault folder '{raw}' {what}. Give the folder that holds your notes.")
    return path.resolve()


def parse_vault_spec(spec: str, *, base: Path | None = None) -> tuple[str, Path]:
    """``ID=PATH`` or ``PATH`` (the ID is then the folder's name) → ``(id, resolved folder)``."""
    vault_id, sep, raw = spec.partition("=")
    if not sep or not _VAULT_ID.match(vault_id) or not raw:
        vault_id, raw = "", spec
    path = _check_folder(raw, base=base)
    return (vault_id or _vault_id_for(path)), path


def _add_vault(vaults: dict[str, Path], vault_id: str, path: Path) -> None:
    if not _VAULT_ID.match(vault_id):
        raise SetupError(
            f"Vault ID '{vault_id}' is not valid: use letters, digits, '.', '_' and '-' "
            "(e.g. 'notes')."
        )
    if vault_id in vaults and vaults[vault_id] != path:
        raise SetupError(
            f"Two vaults are named '{vault_id}' ({vaults[vault_id]} and {path}); name them "
            "with --vault ID=PATH."
        )
    vaults[vault_id] = path


def _read_config(path: Path) -> _ConfigFile:
    data = read_config(path)
    table: Any = data.get("server", {})
    try:
        return _ConfigFile.model_validate(table)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SetupError(
            f"The config file {path} has a bad [server] setting '{where}': "
            f"{str(first['msg']).removeprefix('Value error, ')}."
        ) from None


def _port(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise SetupError(f"${PORT_ENV}={raw!r} is not a port number (0-65535).")
    return port


def server_address(
    *,
    host: str | None = None,
    port: int | None = None,
    config: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, int]:
    """Where a server started with these settings listens (same precedence as
    ``load_settings``), for clients such as ``vaultpilot open``; needs no vault."""
    env = os.environ if env is None else env
    config_path = Path(config).expanduser() if config else agent_config_path(env)
    if config and not config_path.is_file():
        raise SetupError(f"The config file {config_path} does not exist.")
    file = _read_config(config_path) if config_path.is_file() else _ConfigFile()
    the_host = host or env.get(HOST_ENV) or file.host or "127.0.0.1"
    if port is None:
        port = _port(env[PORT_ENV]) if env.get(PORT_ENV) else file.port or DEFAULT_PORT
    return the_host, port


def load_settings(
    *,
    vaults: Sequence[str] = (),
    host: str | None = None,
    port: int | None = None,
    allow_remote: bool = False,
    config: str | Path | None = None,
    data_dir: str | Path | None = None,
    background_embedding: bool | None = None,
    watch: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> ServerSettings:
    """Settings from the flags given, the environment and the config file (see the module)."""
    env = os.environ if env is None else env
    root = data_root(data_dir, env)
    config_path = Path(config).expanduser() if config else agent_config_path(env)
    explicit = bool(config)  # like the agent config, a missing $VAULTPILOT_CONFIG file is empty
    if explicit and not config_path.is_file():
        raise SetupError(f"The config file {config_path} does not exist.")
    file = _read_config(config_path) if config_path.is_file() else _ConfigFile()

    chosen: dict[str, Path] = {}
    if vaults:
        for spec in vaults:
            _add_vault(chosen, *parse_vault_spec(spec))
    elif env.get(VAULT_ENV):
        _add_vault(chosen, *parse_vault_spec(env[VAULT_ENV]))
    else:
        for vault_id, raw in file.vaults.items():
            _add_vault(chosen, vault_id, _check_folder(raw, base=config_path.parent))
    if not chosen:
        raise SetupError(
            "No vault to serve. Pass --vault PATH (or ID=PATH, repeatable), set "
            f"{VAULT_ENV}, or list vaults under [server.vaults] in {config_path}."
        )

    the_host = host or env.get(HOST_ENV) or file.host or "127.0.0.1"
    if port is not None:
        the_port = port
    elif env.get(PORT_ENV):
        the_port = _port(env[PORT_ENV])
    else:
        the_port = file.port if file.port is not None else DEFAULT_PORT
    remote = allow_remote or bool(file.allow_remote)
    if not is_loopback(the_host) and not remote:
        raise SetupError(
            f"Refusing to listen on {the_host}: it is reachable from other machines. The server "
            "is meant for this machine only (127.0.0.1); pass --allow-remote if you really "
            "want this."
        )
    return ServerSettings(
        host=the_host,
        port=the_port,
        allow_remote=remote,
        allowed_origins=file.allowed_origins,
        vaults=chosen,
        data_root=root,
        shell=file.shell,
        agent=file.agent,
        config_path=config_path if config_path.is_file() else None,
        background_embedding=(
            file.background_embedding if background_embedding is None else background_embedding
        ),
        watch=file.watch if watch is None else watch,
        rescan_interval=file.rescan_interval,
        max_body_size=file.max_body_size,
        write_lock_wait=file.write_lock_wait,
        read_workers=default_read_workers() if file.read_workers is None else file.read_workers,
    )
