"""Where vaultpilot keeps its own state: never inside the vault.

The data directory holds ``index.db`` (derived, rebuildable) and ``memory.db`` (durable). By
default it is a per-user folder from platformdirs, with one sub-folder per vault keyed by the
vault's real path, so two vaults never share an index and sync services never carry our files.
``--data-dir`` and ``VAULTPILOT_DATA_DIR`` override the root.

The index holds the text of every note and memory.db the conversations, so on POSIX everything
vaultpilot keeps there is its owner's alone: ``private_dir`` creates folders 0700 and
``private_database`` creates a database file 0600 before SQLite opens it (SQLite gives its
``-wal``/``-shm``/``-journal`` files the database file's mode, so they follow). Both tighten an
existing folder or file that is looser, when it is ours (another user's file is left alone: we
could not change it, and it is not ours to change). ``tighten`` does the same for one path, e.g.
a lock file. A file system that refuses the change (some network or FAT mounts) is logged, not
fatal. On Windows the permissions are the per-user folder's ACLs, so these only create.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from vaultpilot.errors import SetupError

__all__ = [
    "DATA_DIR_ENV",
    "VAULT_ENV",
    "data_root",
    "enclosing_vault",
    "find_vault",
    "memory_db_path",
    "nearest_vault",
    "private_database",
    "private_dir",
    "tighten",
    "vault_data_dir",
]

log = logging.getLogger(__name__)

DATA_DIR_ENV = "VAULTPILOT_DATA_DIR"
VAULT_ENV = "VAULTPILOT_VAULT"
_APP = "vaultpilot"
DIR_MODE = 0o700
FILE_MODE = 0o600
_POSIX = os.name == "posix"
# SQLite's companions of a database file, created beside it with the database file's mode.
_SIDECARS = ("-wal", "-shm", "-journal")


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

    Raises SetupError with one clear line when the folder does not exist or is not a folder, or
    is the root of the file system or the home folder without ``.obsidian/`` (indexing the whole
    disk by a slip of the finger helps nobody).
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
    found = path.resolve()
    if not (found / ".obsidian").is_dir() and found in {Path(found.anchor), Path.home().resolve()}:
        what = "the root of the file system" if found == Path(found.anchor) else "your home folder"
        raise SetupError(
            f"'{raw}' is {what}, not a vault (it has no .obsidian/ folder). Pass the folder that "
            "holds your notes, e.g. --vault ~/Notes."
        )
    return found


def nearest_vault(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` (resolved) holding ``.obsidian/``, or None."""
    here = Path(os.path.realpath(folder))
    return next((c for c in (here, *here.parents) if (c / ".obsidian").is_dir()), None)


def enclosing_vault(folder: Path) -> Path:
    """The vault ``folder`` lies in: ``nearest_vault``, else ``folder`` itself (resolved). A
    program given a sub-folder of a vault (``vault_path``, ``repo_path``) keeps to that vault's
    rules, lock and journal, not to a vault of its own."""
    return nearest_vault(folder) or Path(os.path.realpath(folder))


def tighten(path: Path, mode: int = FILE_MODE) -> None:
    """Drop any permission of ``path`` beyond ``mode`` (POSIX), if the path is ours and looser.

    A missing path is fine (nothing to protect); another user's is left alone.
    """
    if not _POSIX:
        return
    try:
        st = os.stat(path)
        current = stat.S_IMODE(st.st_mode)
        if current & ~mode and st.st_uid == os.getuid():
            os.chmod(path, current & mode)
    except FileNotFoundError:
        return
    except OSError as exc:  # a file system without POSIX modes: nothing better to do
        log.warning("could not make %s private (mode %o): %s", path, mode, exc.strerror)


def private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents with mode 0700; tighten ``path`` if looser.

    Raises OSError when a folder cannot be created (or ``path`` is a file); callers turn it into
    their own error.
    """
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)  # the mode applies at creation: never briefly open
        except FileExistsError:  # made by another process meanwhile
            if not folder.is_dir():
                raise
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")
    tighten(path, DIR_MODE)
    return path


def private_database(path: Path) -> Path:
    """Prepare ``path`` for ``sqlite3.connect``: its folder private, the file created 0600.

    An empty file is a valid empty database. Creating it ourselves first is what makes SQLite's
    ``-wal`` and ``-shm`` files 0600 too, whatever the umask; existing ones are tightened.

    An existing database is never opened here: closing *any* descriptor of a file drops every
    POSIX lock this process holds on it, SQLite's included (sqlite.org/howtocorrupt.html, 2.2).
    A second connection in a process that has one open would otherwise silently unlock the
    first, and another process closing its own connection would then take itself for the last
    user and delete the ``-wal`` and ``-shm`` files still in use: a corrupt database.
    """
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        pass  # only ``stat``/``chmod`` by name below: no descriptor of a file in use is closed
    else:
        os.close(fd)  # a file nobody else can have open: it did not exist a moment ago
    for name in ("", *_SIDECARS):
        tighten(path.with_name(path.name + name), FILE_MODE)
    return path
