"""Walk a vault and turn each changed note into rows for the index.

``scan_vault`` lists every file with its mtime and size, skipping dot-folders (``.obsidian``,
``.trash``, ``.git``, ...) and symbolic links that lead outside the vault. ``scan_folders`` stats
the same files but keeps only the folders whose stamp (a fingerprint of their files' names,
mtimes and sizes) is not the one a sync stored for them. ``load_note`` reads one
note, hashes it, parses it and resolves its links; it runs in worker processes during a large sync,
so it takes plain values and returns a plain, picklable ``NoteRecord``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from hashlib import blake2b
from itertools import compress, repeat
from operator import attrgetter, not_
from pathlib import Path
from stat import S_ISDIR, S_ISLNK
from typing import Any, NamedTuple

from vaultpilot.errors import StorageError, UnreadableNoteError
from vaultpilot.index.search import CJK
from vaultpilot.vault.files import content_version, decode_note, is_temp_name
from vaultpilot.vault.parse import parse_note
from vaultpilot.vault.resolve import LinkResolver, target_key

__all__ = [
    "MAX_NOTE_BYTES",
    "FileStat",
    "FolderScan",
    "NoteRecord",
    "PathScan",
    "load_note",
    "scan_folders",
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
# (O_NOFOLLOW: a folder swapped for a link after its lstat is not followed out of the vault.)
_OPEN_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_NAME = attrgetter("name")
_MODE = attrgetter("st_mode")
_MTIME = attrgetter("st_mtime_ns")
_SIZE = attrgetter("st_size")

# A folder's files as read: (names, their stats, sub-folder names, plain). ``plain``: no symbolic
# links and nothing vanished while it was read, so the stats are the files' own ``lstat``s and
# the folder can have a stamp.
_Listing = tuple[list[str], list[os.stat_result], list[str], bool]


# Listing errors that mean the folder is not (or no longer) part of what can be indexed.
_SKIPPED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ELOOP})


def _listing(
    path: str, prefix: str, root_parent: str, temp_files: list[str] | None
) -> _Listing | None:
    """The files and sub-folders of the folder at ``path`` (vault prefix ``prefix``), skipping
    dot-names (temp files among them go to ``temp_files``); None if it cannot be read.

    Every file is stat'ed, whatever its folder's mtime says: a note edited in place (how
    Obsidian saves) changes its own mtime, not its folder's. The common case runs no Python per
    file beyond one ``lstat`` call: names are taken, filtered, sorted and split by C-level
    ``map``/``compress``. Where the platform allows, the files are stat'ed relative to the open
    folder (``dir_fd``), so the kernel resolves one name per file instead of the whole path.
    """
    fd = -1
    try:
        if _DIR_FD:
            fd = os.open(path, _OPEN_DIR)
        with os.scandir(fd if fd >= 0 else path) as listed:
            names = list(map(_NAME, listed))
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        if exc.errno in _SKIPPED:
            return None  # gone, or not ours to read: skipped; status reports files it cannot see
        # Anything else (too many open files, an I/O error) says nothing about the folder's
        # files: taking them for deleted would drop their rows and vectors. Stop instead.
        raise StorageError(
            f"Could not list the vault folder '{prefix or '/'}': {exc.strerror or exc}. Nothing "
            "was changed in the index; try again (if it keeps failing, check the disk)."
        ) from None
    try:
        joined = "\0".join(names)
        if joined[:1] == "." or "\0." in joined:  # only then look at names one by one
            if temp_files is not None:
                temp_files.extend(prefix + n for n in names if n[0] == "." and is_temp_name(n))
            names = [n for n in names if n[0] != "."]
        names.sort()  # the stamp depends on the order: make it the same on every platform
        try:
            if fd >= 0:
                stats = [os.lstat(n, dir_fd=fd) for n in names]
            else:
                stats = list(map(os.lstat, map(os.path.join, repeat(path), names)))
        except OSError:
            return _careful(path, fd, names, root_parent)  # one vanished: the slow way
        modes = list(map(_MODE, stats))
        if any(map(S_ISLNK, modes)):
            return _careful(path, fd, names, root_parent)
        dirs = list(map(S_ISDIR, modes))
        if not any(dirs):
            return names, stats, [], True
        files = list(map(not_, dirs))
        return (
            list(compress(names, files)),
            list(compress(stats, files)),
            list(compress(names, dirs)),
            True,
        )
    finally:
        if fd >= 0:
            os.close(fd)


def _careful(path: str, fd: int, names: list[str], root_parent: str) -> _Listing:
    """``_listing`` one name at a time, for a folder holding symbolic links or losing files.

    A link counts as the file it leads to, if that is a file inside the vault; links to
    folders and out of the vault are never followed. A file gone before its stat is left out.
    """
    files: list[str] = []
    stats: list[os.stat_result] = []
    subs: list[str] = []
    for name in names:
        try:
            st = os.lstat(name, dir_fd=fd) if fd >= 0 else os.lstat(os.path.join(path, name))
            if S_ISDIR(st.st_mode):
                subs.append(name)
                continue
            if S_ISLNK(st.st_mode):
                real = os.path.realpath(os.path.join(path, name))
                if not real.startswith(root_parent) or not os.path.isfile(real):
                    continue
                st = os.stat(real)
        except OSError:
            continue  # vanished between listing and stat
        files.append(name)
        stats.append(st)
    return files, stats, subs, False


def _stamp(names: list[str], stats: list[os.stat_result]) -> str | None:
    """A fingerprint of a folder's files: their names, mtimes and sizes, in name order.

    Equal stamps mean the same files with the same (mtime, size), which is all a sync compares
    per file (None: mtimes outside what 64 bits hold; such a folder is always compared).
    """
    digest = blake2b(len(names).to_bytes(8, "little"), digest_size=16)
    try:
        digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
        digest.update(array("q", map(_MTIME, stats)))
        digest.update(array("q", map(_SIZE, stats)))
    except (OverflowError, UnicodeEncodeError):
        return None
    return digest.hexdigest()


def _view(prefix: str, names: list[str], stats: list[os.stat_result]) -> dict[str, FileStat]:
    paths = map(prefix.__add__, names)
    return dict(zip(paths, map(FileStat, map(_MTIME, stats), map(_SIZE, stats)), strict=True))


@dataclass(frozen=True, slots=True)
class FolderScan:
    """What ``scan_folders`` saw: every folder's stamp, and the files of the folders it kept.

    Folders are keyed as the index's ``files.folder`` column keys them: ``""`` for the vault's
    top folder, ``"a/b"`` below it. ``stamps[f]`` is None for a folder that has no stamp (it
    holds symbolic links, or lost a file while it was read): it is always compared file by file.
    """

    root: str  # the vault's real path
    stamps: dict[str, str | None]
    counts: dict[str, int]  # how many files each folder holds
    # vault path -> stat, for the folders kept: the very listings ``stamps`` were computed from
    views: dict[str, dict[str, FileStat]]
    late: dict[str, dict[str, FileStat]] = field(default_factory=dict)  # read by ``view``

    def view(self, folder: str) -> dict[str, FileStat]:
        """The files directly in ``folder``: as scanned if kept, else read now (the index's
        stamps changed since the scan; a folder no longer there has no files). A folder read
        now may differ from its stamp: ``views`` alone holds what the stamps describe."""
        found = self.views.get(folder)
        if found is None:
            found = self.late.get(folder)
        if found is None:
            prefix = folder + "/" if folder else ""
            listing = _listing(os.path.join(self.root, folder), prefix, self.root + os.sep, None)
            found = {} if listing is None else _view(prefix, listing[0], listing[1])
            self.late[folder] = found
        return found

    def files(self) -> dict[str, FileStat]:
        """Every kept folder's files in one mapping (all of them when none was skipped)."""
        out: dict[str, FileStat] = {}
        for found in self.views.values():
            out.update(found)
        return out


def _walk(
    real_root: str,
    path: str,
    folder: str,
    *,
    known: Mapping[str, str | None] | None,
    temp_files: list[str] | None,
) -> FolderScan:
    """Walk the folder at ``path`` (vault folder ``folder``) and everything under it.

    With ``known`` (stamps by folder), each folder gets a stamp, and only the folders whose
    stamp differs from the known one (or have none) keep their files; without it every folder
    keeps its files and none is stamped.
    """
    root_parent = real_root + os.sep
    stamps: dict[str, str | None] = {}
    counts: dict[str, int] = {}
    views: dict[str, dict[str, FileStat]] = {}
    stack: list[tuple[str, str]] = [(path, folder)]
    while stack:
        path, folder = stack.pop()
        prefix = folder + "/" if folder else ""
        listing = _listing(path, prefix, root_parent, temp_files)
        if listing is None:
            continue
        names, stats, subs, plain = listing
        stamp = _stamp(names, stats) if plain and known is not None else None
        stamps[folder] = stamp
        counts[folder] = len(names)
        if stamp is None or known is None or known.get(folder) != stamp:
            views[folder] = _view(prefix, names, stats)
        stack.extend((os.path.join(path, name), prefix + name) for name in subs)
    return FolderScan(real_root, stamps, counts, views)


def scan_folders(
    root: Path, known: Mapping[str, str | None], *, temp_files: list[str] | None = None
) -> FolderScan:
    """Stat every file in the vault, keeping the files of only the folders whose stamp is not
    the ``known`` one (what a sync must compare file by file); the same rules as ``scan_vault``.
    """
    real_root = os.path.realpath(root)
    return _walk(real_root, real_root, "", known=known, temp_files=temp_files)


def scan_vault(root: Path, *, temp_files: list[str] | None = None) -> dict[str, FileStat]:
    """Every file in the vault by vault path, skipping dot-folders and escaping links.

    With ``temp_files`` the vault paths of leftover ``.vaultpilot-*.tmp`` files (from a killed
    write) are collected into it on the same walk, for the caller to remove.
    """
    real_root = os.path.realpath(root)
    return _walk(real_root, real_root, "", known=None, temp_files=temp_files).files()


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
            found.update(_walk(real_root, full, rel, known=None, temp_files=None).files())
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
