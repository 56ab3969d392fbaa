"""What every CLI command shares: the vault and data-dir options, opening the index, and
turning vaultpilot errors into one clear line and an exit code (never a traceback).

A folder named with ``--vault`` is used even without ``.obsidian/``; the first time such a
folder is about to be indexed (no index.db yet), ``open_workspace`` says so in one line on
stderr with its file count, so a slip (``--vault /tmp``) is seen before it costs anything.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from vaultpilot.errors import (
    ExternalError,
    RequestError,
    SetupError,
    VaultpilotError,
)
from vaultpilot.locations import VAULT_ENV, data_root, find_vault, nearest_vault, vault_data_dir

__all__ = [
    "DataDirOpt",
    "JsonOpt",
    "VaultOpt",
    "Workspace",
    "console",
    "count_files",
    "discover_vault",
    "err_console",
    "exit_code_for",
    "handle_errors",
    "open_workspace",
    "quoted",
]

# Piped output (not a terminal) is not wrapped at an assumed 80 columns: a line stays one line.
console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())
err_console = Console(stderr=True, highlight=False)

VaultOpt = Annotated[
    str | None,
    typer.Option(
        "--vault",
        metavar="PATH",
        help="Vault folder (default: $VAULTPILOT_VAULT, else the nearest folder with .obsidian/"
        " at or above the current one).",
    ),
]
DataDirOpt = Annotated[
    str | None,
    typer.Option(
        "--data-dir",
        metavar="PATH",
        help="Where vaultpilot keeps its data (default: $VAULTPILOT_DATA_DIR,"
        " else the per-user data folder).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

P = ParamSpec("P")
R = TypeVar("R")


def exit_code_for(err: VaultpilotError) -> int:
    """2: the invocation must change (bad path, bad argument, setup); 1: an outside failure."""
    if isinstance(err, SetupError | RequestError):
        return 2
    if isinstance(err, ExternalError):
        return 1
    return 1


_MESSAGE_MAX = 1_000  # characters of an error line
_QUOTED_MAX = 80


def quoted(text: str, limit: int = _QUOTED_MAX) -> str:
    """``text`` in quotes for a message; past ``limit`` characters cut, with its length:
    ``'abc…' (130,000 characters)``, so a huge argument is not echoed back whole."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Print a VaultpilotError as one line on stderr and exit with its code."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except VaultpilotError as err:
            message = err.message
            if len(message) > _MESSAGE_MAX:  # a huge argument echoed back: its start and the
                # advice at the end stay
                cut = len(message) - _MESSAGE_MAX
                message = f"{message[:600]} … ({cut:,} characters left out) … {message[-400:]}"
            err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
            raise typer.Exit(exit_code_for(err)) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            sys.exit(130)

    return wrapper


@dataclass(frozen=True, slots=True)
class Workspace:
    vault: Path
    db_path: Path


def discover_vault(flag: str | None, *, cwd: Path | None = None) -> Path:
    """The vault: ``--vault`` or ``$VAULTPILOT_VAULT`` as given, else the nearest folder at or
    above ``cwd`` that holds ``.obsidian/``. A folder that is no vault is refused unless named
    explicitly, so a repository or a home folder is never indexed by accident."""
    if flag is not None and not flag.strip():
        raise SetupError(
            "--vault is empty. Give the vault folder (--vault PATH), or leave --vault out to "
            f"use ${VAULT_ENV} or the nearest folder with .obsidian/."
        )
    if flag or os.environ.get(VAULT_ENV):
        return find_vault(flag)
    here = (cwd or Path.cwd()).resolve()
    found = nearest_vault(here)
    if found is not None:
        return found
    raise SetupError(
        f"No vault here: neither {here} nor a folder above it has an .obsidian/ folder. "
        "Run vaultpilot inside an Obsidian vault, or name the folder with --vault PATH "
        f"(or ${VAULT_ENV}); a folder named that way is used even without .obsidian/."
    )


def open_workspace(vault: str | None, data_dir: str | None, *, indexes: bool = True) -> Workspace:
    """The vault and its data folder; ``indexes=False`` for a command that only reads the
    journal or the conversations (it never indexes, so it gives no first-index note)."""
    root = discover_vault(vault)
    folder = vault_data_dir(root, data_root(data_dir))
    ws = Workspace(root, folder / "index.db")
    if indexes and not (root / ".obsidian").is_dir() and not ws.db_path.exists():
        count = count_files(root)
        shown = f"{count:,}+" if count >= _COUNT_MAX else f"{count:,}"
        err_console.print(
            f"note: {root} has no .obsidian/ folder: using it as a vault ({shown} files)",
            soft_wrap=True,
            markup=False,
            style="yellow",
        )
    return ws


_COUNT_MAX = 100_000


def count_files(root: Path, *, cap: int = _COUNT_MAX) -> int:
    """Files under ``root`` outside dot-folders (the ones an index reads), up to ``cap``."""
    count = 0
    for _folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        count += sum(1 for n in names if not n.startswith("."))
        if count >= cap:
            return cap
    return count


@contextmanager
def index_connection(ws: Workspace, *, fresh: bool = False) -> Iterator[sqlite3.Connection]:
    """The vault's index; with ``fresh`` it is first brought up to date with the vault."""
    from vaultpilot.index.db import connect

    conn = connect(ws.db_path)
    try:
        if fresh:
            from vaultpilot.index.sync import sync_vault

            sync_vault(conn, ws.vault)
        yield conn
    finally:
        conn.close()
