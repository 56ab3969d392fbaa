"""The one reader of ``config.toml``, the file every part of vaultpilot is configured by.

``config_path(env)`` is where it is: ``$VAULTPILOT_CONFIG`` when set, else ``config.toml`` in the
user's config folder (``~/.config/vaultpilot`` on Linux, ``~/Library/Application Support/
vaultpilot`` on macOS, ``%APPDATA%\\vaultpilot`` on Windows). ``read_config(path)`` is its tables
as a dict (a missing file is empty); a file that cannot be read or is not TOML is a
``SetupError`` naming the file and the problem. Each part validates its own tables: the agent's
top-level settings (``agent.config``), ``[server]`` (``server.settings``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from vaultpilot.errors import SetupError

__all__ = ["CONFIG_ENV", "config_path", "file_stamp", "read_config"]

CONFIG_ENV = "VAULTPILOT_CONFIG"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the config file is (it may not exist)."""
    env = os.environ if env is None else env
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    return Path(platformdirs.user_config_dir("vaultpilot", appauthor=False)) / "config.toml"


def file_stamp(path: Path | None) -> tuple[int, int] | None:
    """When a file last changed and its size (None: no such file): what a long-running process
    compares to read the config file again only after it changed."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None


def read_config(path: Path) -> dict[str, Any]:
    """The file's tables; ``{}`` when there is no file."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"The config file {path} is not valid TOML: {exc}.") from None
    except OSError as exc:
        raise SetupError(
            f"Could not read the config file {path}: {exc.strerror}. Make it a readable file "
            f"(or remove it to use the defaults), or point ${CONFIG_ENV} at another one."
        ) from None
