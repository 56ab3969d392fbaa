"""The one module that touches the vault's files.

Contract:

* Every path a caller names is a vault-relative string using ``/``. ``confine`` turns it into an
  absolute path that is guaranteed to lie inside the vault: no ``..`` component, no absolute path,
  no drive letter, no NUL, and no symlink (anywhere along the path) that leads outside.
* Note operations never write inside ``.obsidian/``, ``.git/`` or ``.trash/`` (``.trash/`` is only
  written by ``move_to_trash``).
* Writes are atomic: the new bytes go to a temporary file in the same folder, are fsynced, and
  are renamed over the target, so a crash leaves either the old note or the new one, never half.
  Line endings (LF or CRLF) and a UTF-8 byte-order mark are preserved across a read and a write.
* Creating and moving never overwrite an existing note: both use ``os.link`` (fails if the target
  exists) rather than check-then-rename.
* Deleting moves the note to the vault's ``.trash/`` folder (Obsidian's "local trash").
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vaultpilot.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
    StaleVersionError,
    StorageError,
    UnreadableNoteError,
)

__all__ = [
    "PROTECTED_DIRS",
    "NoteText",
    "TextFormat",
    "confine",
    "content_version",
    "create_folder",
    "create_note",
    "decode_note",
    "encode_note",
    "move_path",
    "move_to_trash",
    "normalize_rel_path",
    "read_note",
    "replace_note",
]

PROTECTED_DIRS = frozenset({".obsidian", ".git", ".trash"})
_DRIVE = re.compile(r"^[A-Za-z]:")
_BOM = b"\xef\xbb\xbf"

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
    """A note's text with ``\\n`` line endings, its storage format, and its version."""

    text: str
    fmt: TextFormat
    version: str
    mtime_ns: int
    size: int


def content_version(data: bytes) -> str:
    """The version of a note: a short hash of its exact bytes."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


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
        raise PathRefusedError(
            f"Path {rel!r} is absolute; give a path relative to the vault root, "
            "e.g. 'Projects/Plan.md'."
        )
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefusedError(
            f"Path {rel!r} contains '..'; paths may not leave the vault. "
            "Give the path from the vault root instead."
        )
    return "/".join(parts)


def confine(root: Path, rel: str, *, write: bool = False) -> Path:
    """Return the absolute path of ``rel`` inside the vault at ``root``.

    With ``write=True`` the protected folders (``.obsidian``, ``.git``, ``.trash``) are refused.
    Symlinks are resolved; a path whose real location lies outside the vault is refused.
    """
    canon = normalize_rel_path(rel)
    if write and canon:
        first = canon.split("/", 1)[0]
        if first.lower() in PROTECTED_DIRS:
            raise PathRefusedError(
                f"Path {rel!r} is inside {first}/, which note operations never change. "
                "Choose a path outside .obsidian/, .git/ and .trash/."
            )
    real_root = root.resolve()
    candidate = real_root / canon if canon else real_root
    real = candidate.resolve()
    if real != real_root and real_root not in real.parents:
        raise PathRefusedError(
            f"Path {rel!r} leads outside the vault (through a symbolic link); "
            "only files inside the vault can be used."
        )
    if write and real != real_root:
        # A symbolic link inside the vault may lead into a protected folder.
        first_real = real.relative_to(real_root).parts[0]
        if first_real.lower() in PROTECTED_DIRS:
            raise PathRefusedError(
                f"Path {rel!r} leads into {first_real}/ (through a symbolic link), which note "
                "operations never change. Choose a path outside .obsidian/, .git/ and .trash/."
            )
    return candidate


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


def read_note(root: Path, rel: str) -> NoteText:
    """Read a note; raises NotFoundError, UnreadableNoteError or StorageError."""
    path = confine(root, rel)
    try:
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except FileNotFoundError:
        raise NotFoundError(
            f"Note '{rel}' doesn't exist. Search for it with obsidian_query_vault "
            "(e.g. queryType='semantic_search') to find the right path."
        ) from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"'{rel}' is a folder, not a note.") from None
    except OSError as exc:
        raise StorageError(f"Could not read '{rel}': {exc.strerror or exc}.") from None
    text, fmt = decode_note(data, rel)
    return NoteText(text, fmt, content_version(data), st.st_mtime_ns, st.st_size)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename durable; not every platform lets a directory be opened.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_temp(folder: Path, data: bytes, mode: int | None) -> Path:
    tmp = folder / f".vaultpilot-{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644 if mode is None else mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def _ensure_folder(root: Path, folder_rel: str, *, create: bool, for_what: str) -> Path:
    folder = confine(root, folder_rel, write=True)
    if folder.is_dir():
        return folder
    if folder.exists():
        raise AlreadyExistsError(f"'{folder_rel}' is a file, not a folder.")
    if not create:
        raise NotFoundError(
            f"Cannot {for_what}: folder '{folder_rel}' doesn't exist. Set createFolders=true "
            "to automatically create missing folders, or use operation='create_folder' first."
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"Could not create folder '{folder_rel}': {exc.strerror}.") from None
    return folder


def create_note(
    root: Path, rel: str, text: str, *, create_folders: bool = True, fmt: TextFormat | None = None
) -> NoteText:
    """Create a new note; refuses (AlreadyExistsError) if anything exists at ``rel``."""
    path = confine(root, rel, write=True)
    canon = normalize_rel_path(rel)
    parent_rel = canon.rsplit("/", 1)[0] if "/" in canon else ""
    folder = _ensure_folder(
        root, parent_rel, create=create_folders, for_what=f"create note at '{canon}'"
    )
    data = encode_note(text, fmt or TextFormat())
    tmp = _write_temp(folder, data, None)
    try:
        os.link(tmp, path)  # fails with FileExistsError instead of overwriting
    except FileExistsError:
        raise AlreadyExistsError(
            f"'{canon}' already exists. Use operation='update_note' or 'append_note' to change "
            "it, or choose another name."
        ) from None
    except OSError as exc:
        raise StorageError(f"Could not create '{canon}': {exc.strerror}.") from None
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(folder)
    st = path.stat()
    return NoteText(text, fmt or TextFormat(), content_version(data), st.st_mtime_ns, st.st_size)


def replace_note(
    root: Path, rel: str, text: str, fmt: TextFormat, *, expected_version: str | None = None
) -> NoteText:
    """Atomically replace an existing note's text, keeping its format and permissions.

    With ``expected_version`` the write is refused if the note changed since it was read.
    """
    path = confine(root, rel, write=True)
    try:
        current = path.read_bytes()
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        raise NotFoundError(
            f"Note '{rel}' doesn't exist. Use operation='create_note' to create it."
        ) from None
    except OSError as exc:
        raise StorageError(f"Could not read '{rel}': {exc.strerror}.") from None
    if expected_version is not None and content_version(current) != expected_version:
        raise StaleVersionError(
            f"'{rel}' changed since you read it (expected version {expected_version}, found "
            f"{content_version(current)}). Read the note again and redo the change on the "
            "current text."
        )
    data = encode_note(text, fmt)
    tmp = _write_temp(path.parent, data, mode)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"Could not write '{rel}': {exc.strerror}.") from None
    _fsync_dir(path.parent)
    st = path.stat()
    return NoteText(text, fmt, content_version(data), st.st_mtime_ns, st.st_size)


def create_folder(root: Path, rel: str, *, create_parents: bool = True) -> bool:
    """Create a folder; returns False if it already existed."""
    canon = normalize_rel_path(rel)
    if not canon:
        raise InvalidArgumentError("Give the folder to create, e.g. 'Projects/2025'.")
    folder = confine(root, canon, write=True)
    if folder.is_dir():
        return False
    parent_rel = canon.rsplit("/", 1)[0] if "/" in canon else ""
    _ensure_folder(root, parent_rel, create=create_parents, for_what=f"create folder '{canon}'")
    _ensure_folder(root, canon, create=True, for_what=f"create folder '{canon}'")
    return True


def move_path(root: Path, src_rel: str, dst_rel: str) -> None:
    """Move a note or folder without ever overwriting what is at the destination."""
    src = confine(root, src_rel, write=True)
    dst = confine(root, dst_rel, write=True)
    if not src.exists():
        raise NotFoundError(f"'{src_rel}' doesn't exist; check the path with list_structure.")
    if dst.exists():
        raise AlreadyExistsError(
            f"Cannot move '{src_rel}' to '{dst_rel}': something already exists there. "
            "Choose another destination or move the existing item first."
        )
    if src.is_dir() and (dst == src or src in dst.parents):
        raise PathRefusedError(f"Cannot move folder '{src_rel}' into itself.")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            os.rename(src, dst)
        else:
            os.link(src, dst)
            os.unlink(src)
    except FileExistsError:
        raise AlreadyExistsError(
            f"Cannot move '{src_rel}' to '{dst_rel}': something already exists there."
        ) from None
    except OSError as exc:
        raise StorageError(f"Could not move '{src_rel}': {exc.strerror}.") from None
    _fsync_dir(dst.parent)
    _fsync_dir(src.parent)


def move_to_trash(root: Path, rel: str) -> str:
    """Move a note or folder into the vault's ``.trash/``; returns its path inside the vault.

    An item already in the trash with the same name is kept: the new one gets a numbered name.
    """
    if not normalize_rel_path(rel):
        raise InvalidArgumentError("Give the note or folder to delete, e.g. 'Projects/Old.md'.")
    src = confine(root, rel, write=True)
    if not src.exists():
        raise NotFoundError(f"'{rel}' doesn't exist; nothing was deleted.")
    trash = confine(root, ".trash")  # refuses a .trash that is a link leading out of the vault
    trash.mkdir(exist_ok=True)
    stem, dot, ext = src.name.rpartition(".") if src.is_file() else (src.name, "", "")
    if not stem:  # a name like ".hidden"
        stem, dot, ext = src.name, "", ""
    n = 0
    while True:
        name = f"{stem}{f' {n}' if n else ''}{dot}{ext}"
        dest = trash / name
        try:
            if src.is_dir():
                if dest.exists():
                    raise FileExistsError
                os.rename(src, dest)
            else:
                os.link(src, dest)
                os.unlink(src)
            break
        except FileExistsError:
            n += 1
        except OSError as exc:
            raise StorageError(f"Could not move '{rel}' to .trash/: {exc.strerror}.") from None
    _fsync_dir(trash)
    return f".trash/{name}"
