"""Where a deleted note or folder goes, as ``.obsidian/app.json``'s ``trashOption`` asks.

* ``"system"`` (set in app.json): the operating system's trash: the freedesktop.org home trash
  (``$XDG_DATA_HOME/Trash``, default ``~/.local/share/Trash``, with its ``.trashinfo`` record) on
  Linux and other Unix systems, ``~/.Trash`` on macOS. When there is none, or it lies on another
  file system than the vault (a move there would be a copy), the item goes to ``.trash/``
  instead and the result says so.
* ``"local"``, ``"none"`` or no ``trashOption``: the vault's ``.trash/`` folder, as always.
  ``"none"`` asks Obsidian to delete for good; vaultpilot keeps the item in ``.trash/`` so that
  an agent's delete can always be undone, and says so. When the key is absent, Obsidian would use
  the system trash; vaultpilot keeps deletes inside the vault unless the person chose otherwise.

``move_to_trash(root, rel)`` refuses what ``files.check_trash`` refuses (a dry run calls that,
so it is refused alike) and returns a ``Trashed``: the item's new place (a vault path starting
with ``.trash/``, or an absolute path inside the system trash) and a note for the result.
``restore(trashed, dest)`` moves an item back out of the system trash (for undo); it never
overwrites. Everything here runs under the vault's write lock, held by the caller.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from vaultpilot.errors import AlreadyExistsError, PathRefusedError, StorageError
from vaultpilot.vault import files

__all__ = [
    "Trashed",
    "is_system_trash_path",
    "move_to_trash",
    "restore",
    "system_trash",
    "trash_option",
]


@dataclass(frozen=True, slots=True)
class Trashed:
    path: str  # '.trash/...' inside the vault, or an absolute path in the system trash
    note: str | None = None  # said in the result: why it is where it is


def trash_option(root: Path, config_dir: str = ".obsidian") -> str | None:
    """``trashOption`` as written in the vault's app.json (None when absent or unreadable)."""
    try:
        data = json.loads((root / config_dir / "app.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    value = data.get("trashOption") if isinstance(data, dict) else None
    return value if value in ("system", "local", "none") else None


def system_trash() -> Path | None:
    """The user's trash folder (for whole items) on this system, or None when there is none."""
    if sys.platform == "darwin":
        mac = Path.home() / ".Trash"
        return mac if mac.is_dir() else None
    if os.name != "posix":
        return None
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "Trash" / "files"


def is_system_trash_path(path: str) -> bool:
    """Whether ``path`` (as a journal holds it) is an item in the system trash, or a file
    inside a folder there."""
    where = system_trash()
    p = Path(path)
    return where is not None and p.is_absolute() and p.is_relative_to(where) and p != where


def _info_dir(trash_files: Path) -> Path | None:
    return trash_files.parent / "info" if trash_files.parent.name == "Trash" else None


def move_to_trash(root: Path, rel: str) -> Trashed:
    """Move a note or folder to the trash the vault's settings name (see the module)."""
    chosen = trash_option(root)
    if chosen != "system":
        trashed = files.move_to_trash(root, rel)
        note = (
            "The vault's settings ask Obsidian to delete for good; vaultpilot kept it in .trash/ "
            "so the change can be undone."
            if chosen == "none"
            else None
        )
        return Trashed(trashed, note)
    # Checked as for .trash/ (where it goes when the system trash cannot take it): the same
    # refusals, whichever trash is chosen, and the same a dry run gets (``files.check_trash``).
    files.check_trash(root, rel)
    target = system_trash()
    src = files.confine(root, rel)
    why = _unusable(target, src)
    if why is not None or target is None:
        trashed = files.move_to_trash(root, rel)
        return Trashed(trashed, f"The system trash {why}, so it went to .trash/.")
    return Trashed(str(_into(target, src)), "It is in the system trash.")


def _unusable(target: Path | None, src: Path) -> str | None:
    if target is None:
        return "is not available on this system"
    try:
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = _info_dir(target)
        if info is not None:
            info.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.lstat(src).st_dev != os.stat(target).st_dev:
            return "is on another disk than the vault"
        if stat.S_ISLNK(os.lstat(src).st_mode):
            return "is not used for symbolic links"
    except FileNotFoundError:
        return None  # the item is gone: the local move says so
    except OSError as exc:
        return f"could not be used ({exc.strerror or exc})"
    return None


def _into(target: Path, src: Path) -> Path:
    """Move ``src`` into ``target`` under the first free name, with its .trashinfo record."""
    info_dir = _info_dir(target)
    stem, dot, ext = src.name.rpartition(".") if src.is_file() else (src.name, "", "")
    if not stem:
        stem, dot, ext = src.name, "", ""
    for n in range(10_000):
        name = f"{stem}{f' {n}' if n else ''}{dot}{ext}"
        dest = target / name
        info = info_dir / f"{name}.trashinfo" if info_dir is not None else None
        if info is not None:
            try:  # reserve the name the freedesktop.org way: the record is made exclusively
                fd = os.open(info, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                when = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
                out.write(f"[Trash Info]\nPath={quote(str(src))}\nDeletionDate={when}\n")
        if os.path.lexists(dest):
            if info is not None:
                info.unlink(missing_ok=True)
            continue
        try:
            if src.is_dir():
                os.rename(src, dest)
            else:
                os.link(src, dest, follow_symlinks=False)  # fails instead of overwriting
                os.unlink(src)
        except OSError as exc:
            if info is not None:
                info.unlink(missing_ok=True)
            raise StorageError(
                f"Could not move '{src.name}' to the system trash: {exc.strerror or exc}."
            ) from None
        return dest
    raise StorageError(f"The system trash holds too many items named '{src.name}'.")


def restore(root: Path, trashed: str, dest: str) -> None:
    """Move ``trashed`` (an item in the system trash) back to vault path ``dest``."""
    src = Path(trashed)
    if not is_system_trash_path(trashed):
        raise PathRefusedError(f"'{trashed}' is not in the system trash; it cannot be restored.")
    dst = files.confine(root, dest, write=True)
    if os.path.lexists(dst):
        raise AlreadyExistsError(f"Cannot restore '{dest}': something already exists there.")
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        os.rename(src, dst)
    else:
        os.link(src, dst, follow_symlinks=False)
        os.unlink(src)
    info = _info_dir(src.parent)
    if info is not None:
        (info / f"{src.name}.trashinfo").unlink(missing_ok=True)
