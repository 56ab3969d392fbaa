"""Where vaultpilot keeps its own state: never inside the vault.

The data directory holds ``index.db`` (derived, rebuildable) and ``memory.db`` (durable). By
default it is a per-user folder from platformdirs, with one sub-folder per vault keyed by the
vault's real path, so two vaults never share an index and sync services never carry our files.
``--data-dir`` and ``VAULTPILOT_DATA_DIR`` override the root.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from vaultpilot.errors import SetupError

__all__ = [
    "DATA_DIR_ENV",
    "VAULT_ENV",
    "data_root",
    "find_vault",
    "memory_db_path",
    "vault_data_dir",
]

DATA_DIR_ENV = "VAULTPILOT_DATA_DIR"
VAULT_ENV = "VAULTPILOT_VAULT"
_APP = "vaultpilot"


def data_root(override: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The root of vaultpilot's data: the flag, else the environment variable, else per-user."""
    env = os.environ if env is None else env
    if override:
        return Path(override).expanduser().resolve()
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV]).expanduser().resolve()
    return Path(platformdirs.user_data_dir(_APP, appauthor=False))


def vault_data_dir(vault: Path, root: Path) -> Path:
    """The folder holding one vault's index: ``<root>/vaults/<name>-<hash of real path>``."""
    real = str(vault.resolve())
    digest = hashlib.sha256(real.encode("utf-8")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", vault.resolve().name)[:40] or "vault"
    return root / "vaults" / f"{name}-{digest}"


def memory_db_path(root: Path) -> Path:
    """The durable database (tool registry, conversations, change journal)."""
    return root / "memory.db"


def find_vault(flag: str | Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The vault folder: ``--vault``, else ``VAULTPILOT_VAULT``, else the current directory.

    Raises SetupError with one clear line when the folder does not exist or is not a folder.
    """
    env = os.environ if env is None else env
    raw = flag or env.get(VAULT_ENV) or "."
    path = Path(raw).expanduser()
    if not path.exists():
        raise SetupError(
            f"Vault folder '{raw}' does not exist. Pass --vault PATH or set {VAULT_ENV}."
        )
    if not path.is_dir():
        raise SetupError(
            f"Vault path '{raw}' is not a folder. Pass the folder that holds your notes."
        )
    return path.resolve()
