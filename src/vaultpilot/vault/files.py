"""The one module that touches the vault's files.

Contract:

* Every path a caller names is a vault-relative string using ``/``. ``confine`` turns it into an
  absolute path that is guaranteed to lie inside the vault: no ``..`` component, no absolute path,
  no drive letter, no NUL, and no symlink (anywhere along the path) that leads outside.
* Reads and writes cannot be raced out of the vault: after that check, every file is opened and
  every temp file, link, rename and unlink is done relative to a folder descriptor reached from
  the vault root one component at a time without following symbolic links (``O_NOFOLLOW``), so a
  folder swapped for a link to elsewhere mid-operation makes it fail, never write outside. (Where
  the platform has no ``dir_fd`` support, the checked path is used.)
* Note operations never write inside ``.obsidian/``, ``.git/`` or ``.trash/`` (``.trash/`` is only
  written by ``move_to_trash``), and ``read_note`` does not read them either. A name written
  (created, replaced or moved to) must be portable: no component starting with ``.`` (the index
  and Obsidian never show those), ending in a dot or space, reserved by Windows (``CON``,
  ``NUL``, ``COM1`` ... with any extension) or holding ``<>:"|?*`` or control characters.
* Writes are atomic: the new bytes go to a temporary file (``.vaultpilot-*.tmp``) in the same
  folder, are fsynced, and are renamed over the target, so a crash leaves either the old note or
  the new one, never half. Line endings (LF or CRLF) and a UTF-8 byte-order mark are preserved.
* A replace is based on what the caller read (``base``, or a read at the start of the call).
  Right before the rename the note must still be exactly that (size, mtime_ns and content hash;
  the rename follows the last stat directly), else StaleVersionError and nothing is written. On
  Linux a read lease on the replaced file is held from that check until its last name is gone,
  so no program can start saving into it unseen (one that tries waits, and finds its note
  swapped back). A program that saved into the old file after that check (an editor saving in
  place) gets its text put back (by an atomic swap of the two names where the system has one),
  and the write is reported stale; but if any program opened the new text while it was the
  note (a write lease on it tells), it may save what it read on top of the restored file, so
  the old file is kept beside the note as a conflict copy instead (ConflictKeptError says
  where). Left open: an ``open()`` that looked the note up before the rename but reaches the
  file only after the last look (a process stalled inside that one call for the whole write).
* Each write starts with its check, a function of its own that writes nothing: ``check_replace``
  (``replace_note``), ``check_create_note``, ``check_create_folder``, ``check_move``
  (``move_path``) and ``check_trash`` (``move_to_trash``). A dry run calls the same one, so it is
  refused exactly where the write would be, with the same error; the write still does its own
  atomic steps after it (a check is no promise against a change made in between).
* Creating and moving never overwrite an existing note: both use ``os.link`` (fails if the target
  exists) rather than check-then-rename.
* Deleting moves the note to the vault's ``.trash/`` folder (Obsidian's "local trash").
* Callers that write hold the vault's write lock (``vault.lock``); this module does not take it.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import posixpath
import re
import secrets
import signal
import stat
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

try:
    import fcntl
except ImportError:  # Windows: no leases, see _wait_for_writers
    fcntl = None  # type: ignore[assignment]

from vaultpilot.errors import (
    AlreadyExistsError,
    ConflictKeptError,
    InvalidArgumentError,
    NotFoundError,
    OSErrorMapping,
    PathRefusedError,
    RequestError,
    StaleVersionError,
    StorageError,
    UnreadableNoteError,
    map_os_errors,
)
from vaultpilot.vault.exchange import exchange
from vaultpilot.vault.resolve import fold

__all__ = [
    "PROTECTED_DIRS",
    "NoteText",
    "TextFormat",
    "check_create_folder",
    "check_create_note",
    "check_move",
    "check_not_protected",
    "check_replace",
    "check_trash",
    "confine",
    "content_version",
    "create_folder",
    "create_note",
    "decode_note",
    "encode_note",
    "is_temp_name",
    "missing_folder",
    "missing_parents",
    "move_path",
    "move_to_trash",
    "normalize_rel_path",
    "read_note",
    "remove_empty_folder",
    "remove_temp_files",
    "replace_note",
]

PROTECTED_DIRS = frozenset({".obsidian", ".git", ".trash"})
_DRIVE = re.compile(r"^[A-Za-z]:")
_BOM = b"\xef\xbb\xbf"
_TEMP = re.compile(r"^\.vaultpilot-[0-9a-f]{12}\.tmp$")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$", re.IGNORECASE)
_FORBIDDEN = re.compile(r'[<>:"|?*\x00-\x1f]')
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)
# Descriptor-relative calls (openat, renameat, linkat, ...): POSIX. Elsewhere paths are used.
_AT = {os.open, os.stat, os.link, os.unlink, os.mkdir, os.rename} <= os.supports_dir_fd

Newline = Literal["\n", "\r\n"]


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How a note's text is stored on disk, so a rewrite keeps it byte-compatible.

    ``original`` is set only for a note whose lines end in a mix of LF and CRLF: the text as it
    was read, so a rewrite can give every unchanged line its own ending back.
    """

    newline: Newline = "\n"
    bom: bool = False
    original: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NoteText:
    """A note's text with ``\\n`` line endings, its storage format, and its version.

    ``mtime_ns`` and ``size`` are the note's as read: with ``version`` they are the base a later
    ``replace_note(..., base=note)`` checks the note against right before its rename.
    """

    text: str
    fmt: TextFormat
    version: str
    mtime_ns: int
    size: int


def content_version(data: bytes) -> str:
    """The version of a note: a short hash of its exact bytes."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of our temporary files (left behind only by a killed write)."""
    return _TEMP.match(name) is not None


def normalize_rel_path(rel: str) -> str:
    """Check a vault-relative path string and return it in canonical ``a/b/c`` form.

    Refuses what could leave the vault or is ambiguous across platforms; the message says what
    form to use instead.
    """
    if not isinstance(rel, str):
        raise InvalidArgumentError("A path must be a string such as 'Projects/Plan.md'.")
    if "\x00" in rel:
        raise PathRefusedError(f"Path {rel!r} contains a NUL character; use a plain vault path.")
    if "\\" in rel:
        raise PathRefusedError(
            f"Path {rel!r} uses '\\'; vault paths use '/' as the separator, "
            "e.g. 'Projects/Plan.md'."
        )
    if rel.startswith("/") or _DRIVE.match(rel):
        drive = f" (it starts with a drive, {rel[:2]!r})" if _DRIVE.match(rel) else ""
        raise PathRefusedError(
            f"Path {rel!r} is absolute{drive}; give a path relative to the vault root, "
            "e.g. 'Projects/Plan.md'."
        )
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefusedError(
            f"Path {rel!r} contains '..'; paths may not leave the vault. "
            "Give the path from the vault root instead."
        )
    return "/".join(parts)


def _refuse_protected(rel: str, first: str, *, write: bool, via_link: bool = False) -> None:
    if first.lower() not in PROTECTED_DIRS:
        return
    how = " (through a symbolic link)" if via_link else ""
    if write:
        where = "leads into" if via_link else "is inside"
        raise PathRefusedError(
            f"Path {rel!r} {where} {first}/{how}, which note operations never change. "
            "Choose a path outside .obsidian/, .git/ and .trash/."
        )
    raise PathRefusedError(
        f"Path {rel!r} is inside {first}/{how}, which holds Obsidian's settings, git data or "
        "deleted notes, not notes; note tools do not read it. Name a note outside .obsidian/, "
        ".git/ and .trash/."
    )


def check_not_protected(rel: str, *, write: bool = False) -> None:
    """Refuse a path inside ``.obsidian/``, ``.git/`` or ``.trash/`` (they hold no notes)."""
    canon = normalize_rel_path(rel)
    if canon:
        _refuse_protected(rel, canon.split("/", 1)[0], write=write)


def _check_new_names(canon: str, rel: str) -> None:
    """Refuse names that Obsidian would not show or that another platform would change."""
    for part in canon.split("/"):
        stem = part.rsplit(".", 1)[0] if part.lower().endswith(".md") else part
        if part[-1] in ". " or stem[-1:] in (".", " "):
            raise PathRefusedError(
                f"Path {rel!r} has a name ending in a dot or a space ({part!r}), which Windows "
                "silently drops or Obsidian trims. Remove the trailing dot or space."
            )
        if _RESERVED.match(part):
            raise PathRefusedError(
                f"Path {rel!r} uses {part!r}, a name Windows reserves for devices (CON, PRN, "
                "AUX, NUL, COM1-9, LPT1-9, with any extension). Choose another name."
            )
        bad = _FORBIDDEN.search(part)
        if bad:
            raise PathRefusedError(
                f"Path {rel!r} contains {bad.group()!r}, which file names may not hold on every "
                'platform (<>:"|?* and control characters). Choose a name without it.'
            )
        if part.startswith("."):
            raise PathRefusedError(
                f"Path {rel!r} uses the hidden name {part!r}: names starting with '.' are never "
                "shown by Obsidian nor indexed, so nothing is created there. Choose a name "
                "that does not start with '.'."
            )


# Characters Obsidian warns about in a new name: a link to the note would not work ([[C#]] is
# note "C", heading ""; ^ starts a block reference; [ ] end the link).
_LINK_BREAKING = re.compile(r"[#^\[\]]")


def _check_linkable(name: str, rel: str) -> None:
    """Refuse a new note or folder name that links could not reach, or that holds a character
    that is not shown (a zero-width space, a right-to-left override): such a name looks like
    another one, or reads reversed, in every list and approval it appears in."""
    hidden = next((c for c in name if unicodedata.category(c) == "Cf"), None)
    if hidden is not None:
        what = unicodedata.name(hidden, "a format character")
        raise PathRefusedError(
            f"Path {rel!r} contains an invisible character (U+{ord(hidden):04X} {what}) in the "
            f"name {name!r}: it would look like another name, or read reversed. Choose a name "
            "without it."
        )
    bad = _LINK_BREAKING.search(name)
    if bad:
        raise PathRefusedError(
            f"Path {rel!r} contains {bad.group()!r} in the name {name!r}: Obsidian's links "
            "cannot reach a note or folder named so (# starts a heading, ^ a block, [ ] end "
            "the link). Choose a name without # ^ [ ]."
        )


def _check_new_parts(
    real_root: Path, canon: str, rel: str, *, ignore: str | None = None, keep_name: bool = False
) -> None:
    """Refuse a new ``canon`` when an item on its way differs from it only in case or Unicode
    form (``Recipes/`` beside ``recipes/``, NFC beside NFD): the two collide on macOS and
    Windows and in sync services, and one is lost. Refuse too a name it creates (its last one,
    and the folders still to be made) that links could not reach. ``ignore``: the item being
    moved (a note renamed to another case of its own name); ``keep_name``: the last name is
    the moved item's own, kept as the person chose it."""
    where = real_root
    parts = canon.split("/")
    for depth, part in enumerate(parts):
        try:
            names = os.listdir(where)
        except OSError:
            names = []  # a folder still to be made
        if part in names:
            where = where / part
            continue
        for twin in (n for n in names if fold(n) == fold(part)):
            existing = "/".join([*parts[:depth], twin])
            if existing != ignore:
                doing = "create" if ignore is None else f"move {ignore!r} to"
                raise AlreadyExistsError(
                    f"Cannot {doing} {rel!r}: '{existing}' is already there, and names differing "
                    "only in case or accents collide on macOS, Windows and sync services (one "
                    f"of them is lost). Use '{existing}' or choose another name."
                )
        new = parts[depth:-1] if keep_name else parts[depth:]
        for name in new:
            _check_linkable(name, rel)
        return


@dataclass(frozen=True, slots=True)
class _Where:
    """A checked vault path: the vault's real root and the real folders down to the item."""

    root: Path
    canon: str
    folders: tuple[str, ...]  # real folder components from the root to the item's folder
    name: str  # the item's own name (the link itself when ``follow`` was off)


def _locate(
    root: Path, rel: str, *, write: bool, new: bool = False, follow: bool = True, notes: bool = True
) -> _Where:
    """Check ``rel`` as ``confine`` does and return where it really is inside the vault.

    ``new``: the name is being created, so the portable-name rules apply. ``follow``: a symbolic
    link in the last component is resolved (off for what is moved or deleted: the link itself).
    ``notes``: refuse the protected folders for reads too.
    """
    canon = normalize_rel_path(rel)
    if canon and (write or notes):
        _refuse_protected(rel, canon.split("/", 1)[0], write=write)
    if new and canon:
        _check_new_names(canon, rel)
    real_root = root.resolve()
    candidate = real_root / canon if canon else real_root
    parts = _inside(real_root, _resolve(candidate, rel), rel)
    if parts and (write or notes):
        # A symbolic link inside the vault may lead into a protected folder.
        _refuse_protected(rel, parts[0], write=write, via_link=True)
    if not canon:
        return _Where(real_root, canon, (), "")
    if not follow:
        # Resolved again, so checked again: the folders may have changed since.
        folders = _inside(real_root, _resolve(candidate.parent, rel), rel)
        return _Where(real_root, canon, folders, candidate.name)
    return _Where(real_root, canon, parts[:-1], parts[-1] if parts else "")


def _resolve(path: Path, rel: str) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a link changing under us, or a loop of links
        raise PathRefusedError(
            f"Path {rel!r} could not be resolved: a symbolic link on it is changing or loops. "
            "Check the folders on that path and retry."
        ) from None


def _inside(real_root: Path, real: Path, rel: str) -> tuple[str, ...]:
    """``real``'s components below the vault root; PathRefusedError when it is not below it."""
    if real != real_root and real_root not in real.parents:
        raise PathRefusedError(
            f"Path {rel!r} leads outside the vault (through a symbolic link); "
            "only files inside the vault can be used."
        )
    return real.relative_to(real_root).parts


def confine(root: Path, rel: str, *, write: bool = False) -> Path:
    """Return the absolute path of ``rel`` inside the vault at ``root``.

    With ``write=True`` the protected folders (``.obsidian``, ``.git``, ``.trash``) and names that
    are not portable (see the module docstring) are refused. Symlinks are resolved; a path whose
    real location lies outside the vault is refused. The path is for looking, not for writing:
    writes go through this module's functions, which cannot be raced out of the vault.
    """
    _locate(root, rel, write=write, new=write, notes=False)
    canon = normalize_rel_path(rel)
    real_root = root.resolve()
    return real_root / canon if canon else real_root


class _Dir:
    """An open folder inside the vault, reached without following links; names are relative."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def _p(self, name: str) -> str:
        return name if self.fd is not None else str(self.path / name)

    def open(self, name: str, flags: int, mode: int = 0o666) -> int:
        if self.fd is None:
            return os.open(self._p(name), flags | _BINARY, mode)
        return os.open(name, flags, mode, dir_fd=self.fd)

    def lstat(self, name: str) -> os.stat_result:
        if self.fd is None:
            return os.lstat(self._p(name))
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def unlink(self, name: str) -> None:
        if self.fd is None:
            os.unlink(self._p(name))
        else:
            os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        """Remove the empty folder ``name`` (OSError for one holding anything, or a file)."""
        if self.fd is None or os.rmdir not in os.supports_dir_fd:
            os.rmdir(self.path / name)
        else:
            os.rmdir(name, dir_fd=self.fd)

    def mkdir(self, name: str) -> None:
        if self.fd is None:
            os.mkdir(self._p(name))
        else:
            os.mkdir(name, dir_fd=self.fd)

    def link(self, name: str, dest: _Dir, dest_name: str) -> None:
        """Hard-link ``name`` (a link itself, not what it points to) as ``dest_name``."""
        if self.fd is None or dest.fd is None:
            os.link(self._p(name), dest._p(dest_name))
        else:
            os.link(name, dest_name, src_dir_fd=self.fd, dst_dir_fd=dest.fd, follow_symlinks=False)

    def rename(self, name: str, dest: _Dir, dest_name: str) -> None:
        """``os.replace``: atomic, and over an existing file."""
        if self.fd is None or dest.fd is None:
            os.replace(self._p(name), dest._p(dest_name))
        else:
            os.replace(name, dest_name, src_dir_fd=self.fd, dst_dir_fd=dest.fd)

    def exchange(self, name: str, other: str) -> bool:
        """Swap the files ``name`` and ``other`` atomically; False (nothing done) where the
        system cannot."""
        if self.fd is None:
            return exchange(None, self._p(name), self._p(other))
        return exchange(self.fd, name, other)

    def fsync(self) -> None:
        # Makes a rename durable; not every platform lets a directory be opened or synced.
        with contextlib.suppress(OSError):
            if self.fd is not None:
                os.fsync(self.fd)
                return
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def _folder(
    where: _Where, folders: tuple[str, ...] | None = None, *, create: bool = False
) -> Iterator[_Dir]:
    """Open a folder below the vault root one component at a time, never following a link.

    Raises FileNotFoundError for a missing folder (unless ``create``), PathRefusedError when a
    component is (or became) a symbolic link, AlreadyExistsError when it is a file.
    """
    parts = where.folders if folders is None else folders
    if not _AT:
        path = where.root.joinpath(*parts)
        if create:
            path.mkdir(parents=True, exist_ok=True)
        elif not path.is_dir():
            raise FileNotFoundError(errno.ENOENT, "no such folder", str(path))
        yield _Dir(path, None)
        return
    current = _Dir(where.root, os.open(where.root, os.O_RDONLY | _DIRECTORY))
    try:
        for i, part in enumerate(parts):
            flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW
            try:
                try:
                    fd = current.open(part, flags)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        current.mkdir(part)
                    fd = current.open(part, flags)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                sub = "/".join(parts[: i + 1])
                if stat.S_ISLNK(current.lstat(part).st_mode):
                    raise PathRefusedError(
                        f"'{sub}' became a symbolic link while '{where.canon}' was being used; "
                        "nothing was written. Check that folder and retry."
                    ) from None
                raise AlreadyExistsError(
                    f"'{sub}' is a file, not a folder, so nothing can be put in or taken from "
                    f"'{where.canon}'. Choose a path whose folders are folders, or ask the person "
                    "to rename that file."
                ) from None
            current.close()
            current = _Dir(current.path / part, fd)
        yield current
    finally:
        current.close()


# The checks each write makes before it changes anything: the write calls its check first, and a
# dry run (or a plan) calls the same check, so that a preview is refused exactly where the write
# would be. Each looks, without writing, at what the write will touch: the folders it opens (a
# file or a link on the way), the name it takes (something there already) or removes (gone).


def _note_exists(canon: str) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"'{canon}' already exists. Use operation='update_note' or 'append_note' to change it, or "
        "choose another name."
    )


def _parent_of(canon: str) -> str:
    return canon.rsplit("/", 1)[0] if "/" in canon else ""


def _create_errors(canon: str) -> OSErrorMapping:
    return {FileNotFoundError: missing_folder(_parent_of(canon), f"create note at '{canon}'")}


def _folder_errors(canon: str) -> OSErrorMapping:
    return {FileNotFoundError: missing_folder(_parent_of(canon), f"create folder '{canon}'")}


def _look(where: _Where) -> os.stat_result | None:
    """The item at ``where``, reached as the write will reach it, not following a link: None
    when its name is free. FileNotFoundError when a folder on the way is missing; what
    ``_folder`` raises for a folder on the way that is a file or a link."""
    with _folder(where) as folder:
        try:
            return folder.lstat(where.name)
        except FileNotFoundError:
            return None


def _replace_where(root: Path, rel: str) -> _Where:
    """What ``replace_note`` checks before it reads the note: a path inside the vault, out of the
    protected folders (a link there too), with a portable name (a note named otherwise by another
    program is not rewritten: the name would not survive a sync)."""
    where = _locate(root, rel, write=True, new=True)
    if not where.name:
        raise InvalidArgumentError("Give the note to write, e.g. 'Projects/Plan.md'.")
    return where


def check_replace(root: Path, rel: str) -> None:
    """Refuse, writing nothing, what ``replace_note`` would refuse before reading the note."""
    _replace_where(root, rel)


def _create_check(root: Path, rel: str, *, create_folders: bool) -> _Where:
    """Everything ``create_note`` checks before it writes: the name (portable, linkable, no twin
    in case or accents), the folders on the way (each a folder; missing ones only with
    ``create_folders``) and the name being free."""
    where = _locate(root, rel, write=True, new=True, follow=False)
    if not where.name:
        raise InvalidArgumentError("Give the new note's path, e.g. 'Projects/Plan.md'.")
    _check_new_parts(where.root, where.canon, rel)
    try:
        with map_os_errors(where.canon, "create", _create_errors(where.canon)):
            there = _look(where)
    except NotFoundError:
        if not create_folders:
            raise
        return where  # the folders are made, so the name is free
    if there is not None:
        raise _note_exists(where.canon)
    return where


def check_create_note(root: Path, rel: str, *, create_folders: bool = True) -> None:
    """Refuse, writing nothing, what ``create_note`` would refuse."""
    _create_check(root, rel, create_folders=create_folders)


def _existing_folder(mode: int, canon: str) -> None:
    """Something of ``mode`` is at ``canon``: fine if it is a folder, AlreadyExistsError
    otherwise."""
    if stat.S_ISDIR(mode):
        return
    what = "a symbolic link" if stat.S_ISLNK(mode) else "a file"
    raise AlreadyExistsError(f"'{canon}' is {what}, not a folder; choose another name.")


def _folder_check(root: Path, rel: str, *, create_parents: bool) -> tuple[_Where, bool]:
    """Everything ``create_folder`` checks before it writes; whether the folder exists already."""
    canon = normalize_rel_path(rel)
    if not canon:
        raise InvalidArgumentError("Give the folder to create, e.g. 'Projects/2025'.")
    where = _locate(root, canon, write=True, new=True, follow=False)
    _check_new_parts(where.root, canon, rel)
    try:
        with map_os_errors(canon, "create folder", _folder_errors(canon)):
            there = _look(where)
    except NotFoundError:
        if not create_parents:
            raise
        return where, False
    if there is not None:
        _existing_folder(there.st_mode, canon)
    return where, there is not None


def check_create_folder(root: Path, rel: str, *, create_parents: bool = True) -> bool:
    """Refuse, writing nothing, what ``create_folder`` would refuse; whether the folder is there
    already (then ``create_folder`` changes nothing)."""
    return _folder_check(root, rel, create_parents=create_parents)[1]


def _taken(src_rel: str, dst_rel: str) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"Cannot move '{src_rel}' to '{dst_rel}': something already exists there. "
        "Choose another destination or move the existing item first."
    )


def _move_errors(src_rel: str, dst_rel: str) -> OSErrorMapping:
    missing = NotFoundError(f"'{src_rel}' doesn't exist; check the path with list_structure.")
    return {FileExistsError: _taken(src_rel, dst_rel), FileNotFoundError: missing}


def _not_into_itself(src: _Where, dst: _Where, src_rel: str, *, is_dir: bool) -> None:
    inner = (*src.folders, src.name)
    if is_dir and (*dst.folders, dst.name)[: len(inner)] == inner:
        raise PathRefusedError(f"Cannot move folder '{src_rel}' into itself.")


def _move_check(root: Path, src_rel: str, dst_rel: str) -> tuple[_Where, _Where]:
    """Everything ``move_path`` checks before it moves: both paths (the source not followed if
    a link; the destination's name as a new one), the source there, a folder not moved into
    itself, the folders on the destination's way (missing ones are made) and its name free."""
    src = _locate(root, src_rel, write=True, follow=False)
    dst = _locate(root, dst_rel, write=True, new=True, follow=False)
    if not src.name or not dst.name:
        raise InvalidArgumentError("The vault root itself can't be moved; name a note or folder.")
    _check_new_parts(dst.root, dst.canon, dst_rel, ignore=src.canon, keep_name=dst.name == src.name)
    with map_os_errors(src_rel, "move", _move_errors(src_rel, dst_rel)):
        there = _look(src)
        if there is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", src_rel)
        _not_into_itself(src, dst, src_rel, is_dir=stat.S_ISDIR(there.st_mode))
        if stat.S_ISLNK(there.st_mode) and dst.folders != src.folders:
            _keep_link_meaning(src, src_rel)
        try:
            taken = _look(dst) is not None
        except FileNotFoundError:
            taken = False  # a folder still to be made
        if taken:
            raise _taken(src_rel, dst_rel)
    return src, dst


def _keep_link_meaning(src: _Where, src_rel: str) -> None:
    """Refuse to carry a symbolic link with a relative target into another folder: there it
    would lead somewhere else (or nowhere)."""
    with _folder(src) as folder:
        if folder.fd is None:
            target = os.readlink(folder.path / src.name)
        else:
            target = os.readlink(src.name, dir_fd=folder.fd)
    if not os.path.isabs(target):
        raise PathRefusedError(
            f"'{src_rel}' is a symbolic link to '{target}', relative to its folder: moved to "
            "another folder it would lead somewhere else. Rename it within its folder, or ask "
            "the person to move what it leads to instead."
        )


def check_move(root: Path, src_rel: str, dst_rel: str) -> None:
    """Refuse, writing nothing, what ``move_path`` would refuse."""
    _move_check(root, src_rel, dst_rel)


def _nothing_to_delete(rel: str) -> NotFoundError:
    return NotFoundError(f"'{rel}' doesn't exist; nothing was deleted.")


def _trash_failed(rel: str, exc: OSError) -> StorageError:
    return StorageError(f"Could not move '{rel}' to .trash/: {exc.strerror or exc}.")


def _trash_check(root: Path, rel: str) -> tuple[_Where, _Where]:
    """Everything ``move_to_trash`` checks before it moves: the item (the link itself, not what
    it leads to, but never one leading into a protected folder), there; ``.trash`` inside the
    vault and a folder (or still to be made)."""
    if not normalize_rel_path(rel):
        raise InvalidArgumentError("Give the note or folder to delete, e.g. 'Projects/Old.md'.")
    src = _locate(root, rel, write=True, follow=False)
    # Refuses a .trash that is a link leading out of the vault.
    trash = _locate(root, ".trash", write=False, notes=False)
    try:
        if _look(src) is None:
            raise _nothing_to_delete(rel)
        with contextlib.suppress(FileNotFoundError), _folder(trash, (*trash.folders, trash.name)):
            pass  # a folder (made by the move when missing)
    except FileNotFoundError:
        raise _nothing_to_delete(rel) from None
    except OSError as exc:
        raise _trash_failed(rel, exc) from None
    return src, trash


def check_trash(root: Path, rel: str) -> None:
    """Refuse, writing nothing, what ``move_to_trash`` would refuse."""
    _trash_check(root, rel)


def decode_note(data: bytes, rel: str) -> tuple[str, TextFormat]:
    """Decode a note's bytes to text with ``\\n`` line endings, remembering the format."""
    bom = data.startswith(_BOM)
    if bom:
        data = data[len(_BOM) :]
    if b"\x00" in data:
        raise UnreadableNoteError(f"'{rel}' is not a text file (it contains NUL bytes).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableNoteError(
            f"'{rel}' is not valid UTF-8 (byte {exc.start}); convert it to UTF-8 to use it."
        ) from None
    crlf = text.count("\r\n")
    lf = text.count("\n")
    newline: Newline = "\r\n" if crlf and crlf * 2 >= lf else "\n"
    if not crlf:
        return text, TextFormat(newline=newline, bom=bom)
    original = text if crlf != lf else None  # mixed endings: remember them line by line
    return text.replace("\r\n", "\n"), TextFormat(newline=newline, bom=bom, original=original)


def encode_note(text: str, fmt: TextFormat) -> bytes:
    """Encode ``\\n``-text back into the note's on-disk format."""
    if fmt.original is not None:
        text = _restore_mixed_endings(text, fmt.original, fmt.newline)
    elif fmt.newline == "\r\n":
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    data = text.encode("utf-8")
    return _BOM + data if fmt.bom else data


def _restore_mixed_endings(text: str, original: str, newline: Newline) -> str:
    """Give unchanged lines their original ending; new lines get the note's usual one."""
    old_lines = original.splitlines(keepends=True)
    old_plain = [line.rstrip("\r\n") for line in old_lines]
    final_newline = text.endswith("\n")
    new_plain = text.split("\n")
    if final_newline:
        new_plain.pop()  # split() leaves an empty string after the last ending
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_plain, new_plain, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(old_lines[i1:i2])
        else:
            out.extend(line + newline for line in new_plain[j1:j2])
    # An old last line without an ending may now be followed by new lines: give it one.
    out = [line if line.endswith("\n") else line + newline for line in out[:-1]] + out[-1:]
    result = "".join(out)
    # The last line ends as the new text says, whatever the old line it matched had.
    if not final_newline:
        result = (
            result.removesuffix("\r\n") if result.endswith("\r\n") else result.removesuffix("\n")
        )
    elif not result.endswith("\n"):
        result += newline
    return result


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset) if hasattr(os, "pread") else os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _not_found(rel: str) -> NotFoundError:
    return NotFoundError(
        f"Note '{rel}' doesn't exist. Search for it with obsidian_query_vault "
        "(e.g. queryType='semantic_search') to find the right path."
    )


def _refused_link(rel: str) -> PathRefusedError:
    return PathRefusedError(
        f"'{rel}' became a symbolic link while it was being used; nothing was read or written. "
        "Check it and retry."
    )


def _read_in(folder: _Dir, name: str, rel: str) -> NoteText:
    fd = folder.open(name, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InvalidArgumentError(f"'{rel}' is a folder, not a note.")
        data = _read_fd(fd)
    finally:
        os.close(fd)
    text, fmt = decode_note(data, rel)
    return NoteText(text, fmt, content_version(data), st.st_mtime_ns, st.st_size)


def read_note(root: Path, rel: str) -> NoteText:
    """Read a note; raises NotFoundError, UnreadableNoteError, PathRefusedError or StorageError.

    ``.obsidian/``, ``.git/`` and ``.trash/`` are refused: they hold no notes.
    """
    where = _locate(root, rel, write=False)
    if not where.name:
        raise InvalidArgumentError(f"'{rel}' is a folder, not a note.")
    mapping: OSErrorMapping = {
        FileNotFoundError: _not_found(rel),
        IsADirectoryError: InvalidArgumentError(f"'{rel}' is a folder, not a note."),
        errno.ELOOP: _refused_link(rel),  # the note became a symbolic link after it was checked
    }
    try:
        with map_os_errors(rel, "read", mapping), _folder(where) as folder:
            return _read_in(folder, where.name, rel)
    except AlreadyExistsError:  # a folder on the way is a file
        raise _not_found(rel) from None


_NAME_BYTES = 255  # a file name's length limit (NAME_MAX) on the file systems vaults live on


def _temp_name() -> str:
    return f".vaultpilot-{secrets.token_hex(6)}.tmp"


def _write_temp(folder: _Dir, data: bytes, mode: int | None) -> tuple[str, os.stat_result]:
    """Write and fsync ``data`` into a new temp file; returns its name and final stat."""
    name = _temp_name()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    fd = folder.open(name, flags, 0o644 if mode is None else mode)
    try:
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # the umask may have cut bits the note had
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            folder.unlink(name)
        raise
    os.close(fd)
    return name, st


def _stale(rel: str, expected: str, found: str) -> StaleVersionError:
    return StaleVersionError(
        f"'{rel}' changed since you read it (expected version {expected}, found {found}). "
        "Read the note again and redo the change on the current text."
    )


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_ino, b.st_size, b.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class _Swapped:
    fd: int  # on the replaced file, to see whether anything was saved into it after the check
    leased: bool  # ``fd`` holds a read lease taken before the check (the caller drops it)
    put_back: bool = False  # a program was opening it to save: it is the note again
    kept: str | None = None  # the conflict copy ``_put_back`` kept, if any


def _swap_in(
    folder: _Dir,
    tmp: str,
    name: str,
    old: str,
    base: NoteText,
    rel: str,
    ours: os.stat_result,
    watch: int | None,
) -> _Swapped:
    """Rename ``tmp`` (``ours``) over ``name`` only if the note is still exactly ``base``.

    ``old`` is a hard link to the note made just before. With a read lease held from the check
    on, no program can start saving into the note: one that opens it for writing waits for the
    lease. If one opened it (by its old name) as the rename happened, the note is put back
    before the lease is dropped, so its save lands in the note and no reader meanwhile sees
    this change without it. The lease stays held for the caller's last look. A note another
    program keeps open for writing gets no lease; the caller's check after the rename covers it.
    """
    fd = folder.open(old, os.O_RDONLY | _NOFOLLOW)
    lease = _take_lease(fd, limit=0.2)
    try:
        held = os.fstat(fd)
        if (held.st_size, held.st_mtime_ns) != (base.size, base.mtime_ns):
            raise _stale(rel, base.version, content_version(_read_fd(fd)))
        found = content_version(_read_fd(fd))
        if found != base.version:
            raise _stale(rel, base.version, found)
        # Nothing but this stat between the last check and the rename: the window stays tiny.
        if not _same(folder.lstat(name), held):
            raise _stale(rel, base.version, "a newer one")
        folder.rename(tmp, folder, name)
        leased = lease == "held"
        if leased and _lease_broken(fd):
            return _Swapped(fd, leased, True, _put_back(folder, old, name, ours, watch))
        return _Swapped(fd, leased)
    except BaseException:
        if lease == "held":
            _drop_lease(fd)
        os.close(fd)
        raise


def _settle(
    folder: _Dir,
    old: str,
    name: str,
    base: NoteText,
    ours: os.stat_result,
    swapped: _Swapped,
    watch: int | None,
) -> tuple[bool, str | None]:
    """After the rename: whether a program saved into the replaced file (``swapped.fd``, also
    named ``old``) after the check, and the conflict copy kept, if any. Unlinks ``old``.

    An editor that opened the note before the rename saves into the replaced file: that very
    file is put back (``_put_back``), unless the note was opened since. The replaced file is
    read-leased from the check (or, where a program had it open then, from when it closed it)
    until ``old`` is gone: a program opening it to write before that waits and is seen.
    """
    late, kept, leased = swapped.put_back, swapped.kept, swapped.leased
    try:
        try:
            if not late:
                if leased:  # held since the check: nobody wrote into it, one opening it waits
                    late = _lease_broken(swapped.fd)
                else:  # one had it open to write then: wait for it to close, then look
                    got = _take_lease(swapped.fd, limit=1.0, watch=watch)
                    leased = got == "held"
                    late = got == "busy" or content_version(_read_fd(swapped.fd)) != base.version
                if late:
                    kept = _put_back(folder, old, name, ours, watch)
        finally:  # the one place ``old`` goes once the rename is done, raised or not
            with contextlib.suppress(OSError):
                folder.unlink(old)
        if leased and not late and _lease_broken(swapped.fd):
            # A program opened the replaced file to write between that look and the unlink:
            # its save goes where no name leads any more. Let it save, then keep its text.
            _drop_lease(swapped.fd)
            leased = False
            _wait_for_writers(swapped.fd)
            data = _read_fd(swapped.fd)
            if content_version(data) != base.version:
                kept = _keep_text_beside(folder, data, name)
        return late, kept
    finally:
        if leased:
            _drop_lease(swapped.fd)  # a program waiting to save the replaced file goes on now


def _watch(folder: _Dir, tmp: str) -> int | None:
    """A descriptor holding a write lease on the new file ``tmp``, so that any program opening
    it once it is the note is seen (``_put_back``); None where leases are not to be had."""
    if fcntl is None or not hasattr(fcntl, "F_SETLEASE"):
        return None
    fd = folder.open(tmp, os.O_RDONLY | _NOFOLLOW)
    if _take_lease(fd, limit=0.0, write=True) == "held":
        return fd
    os.close(fd)
    return None


def _unwatch(fd: int | None) -> None:
    if fd is not None:
        _drop_lease(fd)  # a program waiting to open the note goes on now
        os.close(fd)


def _keep_text_beside(folder: _Dir, data: bytes, name: str) -> str:
    """Write ``data`` as a conflict copy next to ``name``; its name."""
    tmp, _ = _write_temp(folder, data, None)
    try:
        return _keep_beside(folder, tmp, name)
    finally:
        with contextlib.suppress(OSError):
            folder.unlink(tmp)


def _keep_beside(folder: _Dir, old: str, name: str) -> str:
    """Hard-link the replaced file ``old`` as a conflict copy next to ``name``; its name. The
    name is cut to fit a file name's 255 bytes (a note with a long name still gets its copy:
    failing here would lose the text only ``old`` holds)."""
    stem = name[:-3] if name.lower().endswith(".md") else name
    stamp = time.strftime("%Y-%m-%d %H%M%S")
    for n in range(1, 100):
        suffix = f" (conflict {stamp}{'' if n == 1 else f' {n}'}).md"
        room = _NAME_BYTES - len(suffix.encode("utf-8"))
        short = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore").rstrip(" .")
        copy = f"{short}{suffix}"
        try:
            folder.link(old, folder, copy)
        except FileExistsError:
            continue
        return copy
    raise StorageError(f"Could not keep a conflict copy of '{name}': too many copies exist.")


def _wait_for_writers(fd: int, *, limit: float = 1.0) -> bool:
    """Wait (bounded) until no process has the file behind ``fd`` open for writing; False when
    one still has it open at the deadline (its save may still land there).

    An editor saving in place truncates, then writes: one that opened the old file before our
    rename may still be writing into it (on a busy machine it can be descheduled between its
    open and its write). Linux refuses a read lease while any writer has the file open, which
    is the cheapest way to ask. Elsewhere (or without the right to take a lease) this returns
    True at once and only what was already written is seen.
    """
    taken = _take_lease(fd, limit=limit)
    if taken == "held":
        _drop_lease(fd)
    return taken != "busy"


Lease = Literal["held", "busy", "unavailable"]


def _take_lease(fd: int, *, limit: float, write: bool = False, watch: int | None = None) -> Lease:
    """A read lease on the file behind ``fd``, waiting (bounded) until no process has it open
    for writing: "held" (until ``_drop_lease``; a process opening it for writing meanwhile waits
    for the drop), "busy" (still open for writing at the deadline), or "unavailable" (not Linux,
    leases off, or not our file). ``write``: a write lease instead, which any other open of the
    file (to read too) breaks and waits for; only to be had on a file nobody else has open.
    ``watch``: a descriptor with a write lease; "busy" at once when a program waits on it (it
    may be the very one that keeps ``fd`` open, so the wait would only hold up both)."""
    if fcntl is None or not hasattr(fcntl, "F_SETLEASE"):
        return "unavailable"
    deadline = time.monotonic() + limit
    with contextlib.suppress(OSError):
        # A broken lease is signalled; make that signal one that is ignored by default.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGWINCH)
    while True:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK if write else fcntl.F_RDLCK)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return "busy"
            if watch is not None and _lease_broken(watch, write=True):
                return "busy"
            time.sleep(0.002)
            continue
        except OSError:
            return "unavailable"
        return "held"


def _lease_broken(fd: int, *, write: bool = False) -> bool:
    """Whether a process is waiting to open the leased file for writing (``write``: to open it
    at all)."""
    try:
        return int(fcntl.fcntl(fd, fcntl.F_GETLEASE)) != (fcntl.F_WRLCK if write else fcntl.F_RDLCK)
    except OSError:
        return False


def _drop_lease(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


def _untouched(folder: _Dir, old: str, ours: os.stat_result, watch: int | None) -> bool:
    """Whether this change's file (``ours``, just swapped out to ``old``) is still exactly this
    change and nobody can base a save on it: with ``watch``, nobody opened it (the write lease
    is unbroken); else nobody has it open for writing (waited for, bounded)."""
    if watch is not None:
        return not _lease_broken(watch, write=True) and _same(os.fstat(watch), ours)
    displaced = folder.open(old, os.O_RDONLY | _NOFOLLOW)
    try:
        return _wait_for_writers(displaced) and _same(os.fstat(displaced), ours)
    finally:
        os.close(displaced)


def _put_back(
    folder: _Dir, old: str, name: str, ours: os.stat_result, watch: int | None = None
) -> str | None:
    """Put the replaced file ``old`` (saved into after the check) back as the note; None, or
    the conflict copy's name when the note was saved again on top of this change meanwhile
    (then that newest save stays the note and ``old`` is kept beside it).

    Where the system can swap two names atomically, nothing can come between the look at the
    note and the restore: the swap first, then the file it displaced is checked (still exactly
    this change, nobody writing into it: dropped; else swapped back and ``old`` kept beside).
    ``watch`` is a descriptor holding a write lease on this change's file (``ours``) since
    before it became the note: a program that opened the note meanwhile broke it. Such a
    program may have read this change and may yet save it into whatever the name holds; the
    text only ``old`` has would be overwritten by that save, so ``old`` is kept beside instead.
    Elsewhere a check and a rename, with a tiny window between them.
    """
    if folder.exchange(old, name):
        if _untouched(folder, old, ours, watch):
            return None
        folder.exchange(old, name)  # back: the newest save stays the note
        return _keep_beside(folder, old, name)
    if _same(folder.lstat(name), ours):
        folder.rename(old, folder, name)
        return None
    # Saved again since the rename, on top of this change: the text saved into the old file in
    # between would be lost, so it is kept beside the note.
    return _keep_beside(folder, old, name)


def replace_note(
    root: Path,
    rel: str,
    text: str,
    fmt: TextFormat,
    *,
    expected_version: str | None = None,
    base: NoteText | None = None,
) -> NoteText:
    """Atomically replace an existing note's text, keeping its format and permissions.

    ``base`` is the note as the caller read it (``read_note``); without it the note is read here.
    With ``expected_version`` the write is refused if the base is not that version. Either way
    the note must still be the base right before the rename, else StaleVersionError.
    """
    where = _replace_where(root, rel)
    data = encode_note(text, fmt)
    missing = NotFoundError(
        f"Note '{rel}' doesn't exist. Use operation='create_note' to create it."
    )
    mapping: OSErrorMapping = {FileNotFoundError: missing, errno.ELOOP: _refused_link(rel)}
    with map_os_errors(rel, "write", mapping), _folder(where) as folder:
        if base is None:
            base = _read_in(folder, where.name, rel)
        if expected_version is not None and base.version != expected_version:
            raise _stale(rel, expected_version, base.version)
        mode = stat.S_IMODE(folder.lstat(where.name).st_mode)
        tmp, ours = _write_temp(folder, data, mode)
        # Keep the replaced file reachable until it is known that nothing was saved into it
        # after the check (a temp name, so a crash leaves nothing the next start keeps).
        old = _temp_name()
        watch = _watch(folder, tmp)
        try:
            folder.link(where.name, folder, old)
            swapped = _swap_in(folder, tmp, where.name, old, base, rel, ours, watch)
        except BaseException:
            _unwatch(watch)
            for leftover in (tmp, old):
                with contextlib.suppress(OSError):
                    folder.unlink(leftover)
            raise
        try:
            late, kept = _settle(folder, old, where.name, base, ours, swapped, watch)
        finally:
            os.close(swapped.fd)
            _unwatch(watch)
        if kept is not None:
            raise ConflictKeptError(
                f"'{rel}' was saved by another program while it was being written: this "
                f"change is in the note, and the text that program saved is kept in "
                f"'{posixpath.join(posixpath.dirname(rel), kept)}' "
                "beside it. Tell the person; do not redo the change."
            )
        if late:
            raise StaleVersionError(
                f"'{rel}' was saved by another program while it was being written; its "
                "text was kept and this change was not applied. Read the note again and "
                "redo the change."
            )
        folder.fsync()
        st = folder.lstat(where.name)
    return NoteText(text, fmt, content_version(data), st.st_mtime_ns, st.st_size)


def missing_folder(folder: str, for_what: str) -> NotFoundError:
    """The answer when ``folder`` is missing and creating it was not asked for."""
    return NotFoundError(
        f"Cannot {for_what}: folder '{folder}' doesn't exist. Set createFolders=true "
        "to automatically create missing folders, or use operation='create_folder' first."
    )


def create_note(
    root: Path, rel: str, text: str, *, create_folders: bool = True, fmt: TextFormat | None = None
) -> NoteText:
    """Create a new note; refuses (AlreadyExistsError) if anything exists at ``rel``."""
    where = _create_check(root, rel, create_folders=create_folders)
    canon = where.canon
    data = encode_note(text, fmt or TextFormat())
    made = missing_parents(root, canon) if create_folders else []
    with (
        _no_new_folders_on_failure(root, made),
        map_os_errors(canon, "create", _create_errors(canon)),
        _folder(where, create=create_folders) as folder,
    ):
        tmp, _ = _write_temp(folder, data, None)
        try:
            folder.link(tmp, folder, where.name)  # fails instead of overwriting
        except FileExistsError:
            raise _note_exists(canon) from None
        finally:
            with contextlib.suppress(OSError):
                folder.unlink(tmp)
        folder.fsync()
        st = folder.lstat(where.name)
    return NoteText(text, fmt or TextFormat(), content_version(data), st.st_mtime_ns, st.st_size)


def create_folder(root: Path, rel: str, *, create_parents: bool = True) -> bool:
    """Create a folder; returns False if it already existed."""
    where, exists = _folder_check(root, rel, create_parents=create_parents)
    if exists:
        return False
    canon = where.canon
    with (
        map_os_errors(canon, "create folder", _folder_errors(canon)),
        _folder(where, create=create_parents) as folder,
    ):
        try:
            folder.mkdir(where.name)
        except FileExistsError:
            _existing_folder(folder.lstat(where.name).st_mode, canon)
            return False
        folder.fsync()
    return True


@contextlib.contextmanager
def _no_new_folders_on_failure(root: Path, made: list[str]) -> Iterator[None]:
    """Remove the folders ``made`` for a write (innermost first, each only if still empty)
    when the write fails, so a refused note leaves no trace."""
    try:
        yield
    except BaseException:
        for folder in reversed(made):
            remove_empty_folder(root, folder)
        raise


def missing_parents(root: Path, rel: str) -> list[str]:
    """The folders above ``rel`` (vault-relative) that do not exist yet, outermost first: those a
    write of ``rel`` would create. A name that exists as anything (a link too) counts as there."""
    parts = rel.strip("/").split("/")[:-1]
    out: list[str] = []
    for i in range(len(parts), 0, -1):
        folder = "/".join(parts[:i])
        if os.path.lexists(root / folder):
            break
        out.append(folder)
    return out[::-1]


def remove_empty_folder(root: Path, rel: str) -> bool:
    """Remove the folder ``rel`` if it is an empty folder; True when it was removed.

    Anything else is left as it is and gives False: a folder holding anything, a file or a
    symbolic link there now, a path gone already or one this module may not write (a protected
    folder, outside the vault). The folder is removed relative to its parent's descriptor, so a
    parent swapped for a link mid-way makes it fail rather than remove something elsewhere.
    """
    try:
        where = _locate(root, rel, write=True, follow=False)
    except RequestError:
        return False
    if not where.name:
        return False  # the vault root itself
    try:
        with _folder(where) as parent:
            if not stat.S_ISDIR(parent.lstat(where.name).st_mode):
                return False
            parent.rmdir(where.name)  # refuses a folder that holds anything
            parent.fsync()
    except (OSError, RequestError):
        return False
    return True


def move_path(root: Path, src_rel: str, dst_rel: str) -> None:
    """Move a note or folder without ever overwriting what is at the destination."""
    src, dst = _move_check(root, src_rel, dst_rel)
    taken = _taken(src_rel, dst_rel)
    with map_os_errors(src_rel, "move", _move_errors(src_rel, dst_rel)), _folder(src) as src_dir:
        is_dir = stat.S_ISDIR(src_dir.lstat(src.name).st_mode)
        _not_into_itself(src, dst, src_rel, is_dir=is_dir)
        with _folder(dst, create=True) as dst_dir:
            with contextlib.suppress(FileNotFoundError):
                dst_dir.lstat(dst.name)
                raise taken
            if is_dir:
                src_dir.rename(src.name, dst_dir, dst.name)
            else:
                src_dir.link(src.name, dst_dir, dst.name)
                src_dir.unlink(src.name)
            dst_dir.fsync()
        src_dir.fsync()


def _into_trash(
    src_dir: _Dir, src: str, bin_: _Dir, parts: tuple[str, str, str], *, is_dir: bool
) -> str:
    """Move ``src`` into the trash folder under the first free numbered name; returns it."""
    stem, dot, ext = parts
    n = 0
    while True:
        name = f"{stem}{f' {n}' if n else ''}{dot}{ext}"
        try:
            if is_dir:
                with contextlib.suppress(FileNotFoundError):
                    bin_.lstat(name)
                    raise FileExistsError
                src_dir.rename(src, bin_, name)
            else:
                src_dir.link(src, bin_, name)
                src_dir.unlink(src)
            return name
        except FileExistsError:
            n += 1


def move_to_trash(root: Path, rel: str) -> str:
    """Move a note or folder into the vault's ``.trash/``; returns its path inside the vault.

    An item already in the trash with the same name is kept: the new one gets a numbered name.
    """
    src, trash = _trash_check(root, rel)
    try:
        bin_parts = (*trash.folders, trash.name)
        with _folder(src) as src_dir:
            is_dir = stat.S_ISDIR(src_dir.lstat(src.name).st_mode)
            stem, dot, ext = src.name.rpartition(".") if not is_dir else (src.name, "", "")
            if not stem:  # a name like ".hidden"
                stem, dot, ext = src.name, "", ""
            with _folder(trash, bin_parts, create=True) as bin_:
                name = _into_trash(src_dir, src.name, bin_, (stem, dot, ext), is_dir=is_dir)
                bin_.fsync()
            src_dir.fsync()
    except FileNotFoundError:
        raise _nothing_to_delete(rel) from None
    except OSError as exc:
        raise _trash_failed(rel, exc) from None
    return f".trash/{name}"


def remove_temp_files(root: Path, paths: list[str]) -> int:
    """Remove our leftover temp files (vault paths from a scan); returns how many went.

    Call only while holding the vault's write lock: then no write of ours is in progress.
    """
    removed = 0
    for rel in paths:
        try:
            where = _locate(root, rel, write=False, notes=False, follow=False)
            if not is_temp_name(where.name):
                continue
            with _folder(where) as folder:
                folder.unlink(where.name)
            removed += 1
        except (OSError, PathRefusedError, AlreadyExistsError):
            continue  # gone already, or the folder changed: the next start tries again
    return removed
