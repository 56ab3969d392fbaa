"""Walk a vault and turn each changed note into rows for the index.

``scan_vault`` lists every file with its mtime and size, skipping dot-folders (``.obsidian``,
``.trash``, ``.git``, ...) and symbolic links that lead outside the vault. ``load_note`` reads one
note, hashes it, parses it and resolves its links; it runs in worker processes during a large sync,
so it takes plain values and returns a plain, picklable ``NoteRecord``.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from vaultpilot.errors import UnreadableNoteError
from vaultpilot.index.search import CJK
from vaultpilot.vault.files import content_version, decode_note, is_temp_name
from vaultpilot.vault.parse import parse_note
from vaultpilot.vault.resolve import LinkResolver, target_key

__all__ = [
    "MAX_NOTE_BYTES",
    "FileStat",
    "NoteRecord",
    "PathScan",
    "load_note",
    "scan_paths",
    "scan_vault",
]

MAX_NOTE_BYTES = 8 * 1024 * 1024


class FileStat(NamedTuple):
    """A file's modification time and size: what decides whether it must be read again.

    (A NamedTuple rather than a dataclass: one is built per vault file on every sync.)
    """

    mtime_ns: int
    size: int


class NoteRecord(NamedTuple):
    """Everything the index stores for one note; ``error`` set means the note was skipped.

    A NamedTuple of plain values: parse workers send one per note to the writing process, and a
    tuple pickles and unpickles at a fraction of the cost of a dataclass instance.
    """

    path: str
    mtime_ns: int
    size: int
    hash: str | None
    error: str | None = None
    unchanged: bool = False  # the content hash matched the indexed one: only stat changed
    vanished: bool = False  # deleted between the scan and the read
    title: str = ""
    word_count: int = 0
    frontmatter: str | None = None
    frontmatter_error: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[tuple[str, str, int], ...] = ()  # (tag, source, line)
    properties: tuple[tuple[str, str | None, float | None], ...] = ()
    # (target_text, target_key, subpath, alias, kind, syntax, line, resolved path or None)
    links: tuple[tuple[str, str, str, str | None, str, str, int, str | None], ...] = ()
    headings: tuple[tuple[int, str, int], ...] = ()
    blocks: tuple[tuple[str, int], ...] = ()
    body: str = ""
    cjk: bool = False


_DIR_FD = os.stat in os.supports_dir_fd and os.open in os.supports_dir_fd


def _open_folder(folder: str) -> tuple[int, list[os.DirEntry[str]]] | None:
    """The folder's descriptor (-1 without ``dir_fd`` support) and entries; None if unreadable."""
    fd = -1
    try:
        if _DIR_FD:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            return fd, list(os.scandir(fd))
        return fd, list(os.scandir(folder))
    except OSError:
        if fd >= 0:
            os.close(fd)
        return None


def _file_stat(
    entry: os.DirEntry[str], folder: str, fd: int, root_parent: str
) -> os.stat_result | None:
    """A file entry's stat; None for a link out of the vault or to a folder, or a vanished file."""
    try:
        if entry.is_symlink():
            real = os.path.realpath(os.path.join(folder, entry.name))
            if not real.startswith(root_parent) or not os.path.isfile(real):
                return None  # never follow links out of the vault, nor folder links
            return os.stat(real)
        if fd >= 0:
            return os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None  # vanished between listing and stat


def _walk(
    real_root: str,
    folder: str,
    prefix: str,
    out: dict[str, FileStat],
    temp_files: list[str] | None,
) -> None:
    """Add every file under ``folder`` (vault path ``prefix``) to ``out``; see ``scan_vault``.

    Where the platform allows, each folder is opened once and its files are stat'ed relative to
    it (``dir_fd``): the kernel then resolves one name per file instead of the whole path, which
    is most of what a no-change sync costs (the stat of every file is what catches a note edited
    in place, whose folder's mtime does not change).
    """
    root_parent = real_root + os.sep
    stack: list[tuple[str, str]] = [(folder, prefix)]
    while stack:
        folder, prefix = stack.pop()
        listed = _open_folder(folder)
        if listed is None:
            continue  # an unreadable folder is skipped; status reports files it cannot see
        fd, entries = listed
        try:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    if temp_files is not None and is_temp_name(name):
                        temp_files.append(prefix + name)
                    continue
                st: os.stat_result | None = None
                try:
                    if entry.is_file(follow_symlinks=False) and fd >= 0:  # the common case
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    elif not entry.is_symlink() and entry.is_dir(follow_symlinks=False):
                        stack.append((os.path.join(folder, name), prefix + name + "/"))
                    else:
                        st = _file_stat(entry, folder, fd, root_parent)
                except OSError:
                    pass  # vanished between listing and stat
                if st is not None:
                    out[prefix + name] = FileStat(st.st_mtime_ns, st.st_size)
        finally:
            if fd >= 0:
                os.close(fd)


def scan_vault(root: Path, *, temp_files: list[str] | None = None) -> dict[str, FileStat]:
    """Every file in the vault by vault path, skipping dot-folders and escaping links.

    With ``temp_files`` the vault paths of leftover ``.vaultpilot-*.tmp`` files (from a killed
    write) are collected into it on the same walk, for the caller to remove.
    """
    out: dict[str, FileStat] = {}
    real_root = os.path.realpath(root)
    _walk(real_root, real_root, "", out, temp_files)
    return out


@dataclass(frozen=True, slots=True)
class PathScan:
    """What ``scan_paths`` saw: the files now under the given paths, and what they cover.

    ``covers(p)`` is true for every vault path whose state the scan decided: the given paths
    themselves and, for folders (present or gone), everything under them. An indexed path it
    covers that is not in ``found`` is gone from the vault.
    """

    found: dict[str, FileStat]
    exact: frozenset[str]
    prefixes: tuple[str, ...]  # "folder/" for every given path, which may have been a folder

    def covers(self, path: str) -> bool:
        return path in self.exact or path.startswith(self.prefixes)


def scan_paths(root: Path, paths: Iterable[str]) -> PathScan:
    """Stat just ``paths`` (vault paths of files or folders, present or gone) under ``root``.

    The same rules as ``scan_vault``: a path with a dot-named part is not part of the vault, a
    folder is walked, a symbolic link counts only as a file inside the vault, and a path reached
    through a linked folder does not count. The result equals ``scan_vault`` restricted to what
    it covers, which is what lets ``sync_paths`` equal a full sync.
    """
    real_root = os.path.realpath(root)
    found: dict[str, FileStat] = {}
    exact: set[str] = set()
    for given in paths:
        rel = given.strip("/")
        if not rel:
            continue
        exact.add(rel)
        parts = rel.split("/")
        if any(part.startswith(".") for part in parts):
            continue  # dot-folders and dot-files are never indexed
        full = os.path.join(real_root, *parts)
        parent = os.path.dirname(full)
        if os.path.realpath(parent) != parent:
            continue  # under a linked folder, which the full walk does not follow either
        try:
            st = os.lstat(full)
        except OSError:
            continue  # gone: covered, so indexed files at or under it are deleted
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(full)
            if real.startswith(real_root + os.sep) and os.path.isfile(real):
                try:
                    st = os.stat(real)
                except OSError:
                    continue
                found[rel] = FileStat(st.st_mtime_ns, st.st_size)
        elif stat.S_ISDIR(st.st_mode):
            _walk(real_root, full, rel + "/", found, None)
        else:
            found[rel] = FileStat(st.st_mtime_ns, st.st_size)
    return PathScan(found, frozenset(exact), tuple(p + "/" for p in sorted(exact)))


def _prop_rows(props: dict[str, Any]) -> list[tuple[str, str | None, float | None]]:
    rows: list[tuple[str, str | None, float | None]] = []

    def add(key: str, value: Any) -> None:
        if isinstance(value, list):
            if not value:
                rows.append((key, None, None))
            for item in value:
                add(key, item)
        elif value is None:
            rows.append((key, None, None))
        elif isinstance(value, bool):
            rows.append((key, "true" if value else "false", None))
        elif isinstance(value, int | float):
            rows.append((key, str(value), float(value)))
        elif isinstance(value, dict):
            rows.append((key, json.dumps(value, ensure_ascii=False, default=str), None))
        else:
            rows.append((key, str(value), None))

    for key, value in props.items():
        add(key, value)
    return rows


def load_note(
    root: str, path: str, stat: FileStat, old_hash: str | None, resolver: LinkResolver | None
) -> NoteRecord:
    """Read, hash, parse and resolve one note. Never raises: failures become ``error``.

    Without a resolver the links are left unresolved for the caller to resolve.
    """
    if stat.size > MAX_NOTE_BYTES:
        return NoteRecord(
            path,
            stat.mtime_ns,
            stat.size,
            None,
            error=f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MB; not indexed",
        )
    try:
        with open(os.path.join(root, path), "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(MAX_NOTE_BYTES + 1)
    except FileNotFoundError:
        return NoteRecord(
            path, stat.mtime_ns, stat.size, None, error="vanished during sync", vanished=True
        )
    except OSError as exc:
        return NoteRecord(
            path, stat.mtime_ns, stat.size, None, error=f"could not be read: {exc.strerror or exc}"
        )
    mtime_ns, size = st.st_mtime_ns, st.st_size
    if len(data) > MAX_NOTE_BYTES:
        return NoteRecord(
            path,
            mtime_ns,
            size,
            None,
            error=f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MB; not indexed",
        )
    digest = content_version(data)
    if digest == old_hash:
        return NoteRecord(path, mtime_ns, size, digest, unchanged=True)
    try:
        text, _fmt = decode_note(data, path)
    except UnreadableNoteError as exc:
        return NoteRecord(path, mtime_ns, size, digest, error=str(exc))
    note = parse_note(path, text)
    links = tuple(
        (
            link.target,
            target_key(link.target),
            link.subpath,
            link.alias,
            link.kind,
            link.syntax,
            link.line,
            resolver.resolve(path, link.target, link.syntax, subpath=link.subpath)
            if resolver
            else None,
        )
        for link in note.links
    )
    return NoteRecord(
        path=path,
        mtime_ns=mtime_ns,
        size=size,
        hash=digest,
        title=note.title,
        word_count=note.word_count,
        frontmatter=json.dumps(note.properties, ensure_ascii=False, default=str)
        if note.properties
        else None,
        frontmatter_error=note.frontmatter_error,
        aliases=note.aliases,
        tags=tuple((t.name, t.source, t.line) for t in note.tags),
        properties=tuple(_prop_rows(note.properties)),
        links=links,
        headings=tuple((h.level, h.text, h.line) for h in note.headings),
        blocks=tuple((b.block_id, b.line) for b in note.blocks),
        body=note.body,
        cjk=not text.isascii() and CJK.search(text) is not None,
    )
