"""Resolve a link's target text to a file, as Obsidian does (semantics rules 4 and 5).

``LinkResolver`` is built from the set of vault files. ``resolve(source, target, syntax)``:

1. An empty target (``[[#Heading]]``) is the source note itself; a link with neither target
   nor subpath (``[[|alias]]``, ``[[|]]``) is unresolved, as Obsidian records it.
2. A target starting with ``./`` or ``../`` is relative to the source note's folder (markdown
   links, and the wikilinks Obsidian writes with the "relative path" link format).
3. Matching is case-insensitive and ``[[Note]]`` equals ``[[Note.md]]``, and Unicode-normalised
   (NFC) on both sides: a file name stored decomposed (NFD, as macOS writes it) matches a link
   typed composed, and the other way round. Paths are returned as they are on disk.
4. An exact vault path wins; otherwise, among the files with that name (whose path ends with the
   target when it names folders), one in the source note's own folder; otherwise the shortest
   path (ties broken alphabetically, so the answer never depends on scan order).
5. Aliases are not link targets; an unresolved link returns ``None``.

``target_key(target)`` is the lower-cased file name a link depends on: whenever a file with that
key is added or removed, links with that key must be resolved again. The index relies on this
to keep incremental sync equal to a rebuild.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable

__all__ = ["LinkResolver", "file_key", "fold", "note_title", "target_key"]


def fold(text: str) -> str:
    """Text as names are compared: NFC-normalised and lower-cased (ASCII stays cheap)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", text).lower()


def _strip_md(name: str) -> str:
    return name[:-3] if name.lower().endswith(".md") else name


def note_title(path: str) -> str:
    """A note's title as Obsidian shows it: its file name without folders and ``.md``."""
    return _strip_md(path.rsplit("/", 1)[-1])


def file_key(path: str) -> str:
    """The key under which a file can be found by name: notes without ``.md``."""
    return fold(note_title(path))


def target_key(target: str) -> str:
    """The file-name key a link target depends on ("" for a same-note link)."""
    return fold(_strip_md(target.strip().rsplit("/", 1)[-1]))


class LinkResolver:
    """Resolves link targets against a fixed set of vault paths (notes and attachments)."""

    __slots__ = ("_by_key", "_by_path", "_cache")

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_path: dict[str, str] = {}
        self._by_key: dict[str, list[str]] = {}
        for path in paths:
            low = fold(path)
            # Paths differing only in case: the answer must not depend on the order given.
            if low not in self._by_path or path < self._by_path[low]:
                self._by_path[low] = path
            self._by_key.setdefault(file_key(path), []).append(path)
        for candidates in self._by_key.values():
            candidates.sort(key=lambda p: (len(p), p))
        self._cache: dict[tuple[str, str, str], str | None] = {}

    def resolve(
        self, source: str, target: str, syntax: str = "wiki", *, subpath: str | None = None
    ) -> str | None:
        """The vault path ``target`` leads to from note ``source``, or None if unresolved.

        Give the link's ``subpath`` to tell ``[[#H]]`` (the source itself) from ``[[|alias]]``
        (no target and no subpath: unresolved).
        """
        target = target.strip()
        if not target:
            return None if subpath == "" else source
        folder = source.rsplit("/", 1)[0] if "/" in source else ""
        key = (folder, target, syntax)
        if key in self._cache:
            return self._cache[key]
        found = self._resolve(folder, target, syntax)
        self._cache[key] = found
        return found

    def _exact(self, path: str) -> str | None:
        low = fold(path)
        hit = self._by_path.get(low)
        if hit is None and not low.endswith(".md"):
            hit = self._by_path.get(low + ".md")
        return hit

    def _resolve(self, folder: str, target: str, syntax: str) -> str | None:
        if target.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(folder, target))
            if joined.startswith("../") or joined == "..":
                return None
            return self._exact(joined)
        if syntax == "markdown" and folder and "/" in target:
            # A markdown path is tried relative to the note first, then vault-wide.
            hit = self._exact(f"{folder}/{target}")
            if hit is not None:
                return hit
        target = target.lstrip("/")
        exact = self._exact(target)
        if exact is not None:
            return exact
        candidates = self._by_key.get(target_key(target))
        if not candidates:
            return None
        if "/" in target:
            suffix = "/" + fold(_strip_md(target))
            candidates = [c for c in candidates if fold(_strip_md(c)).endswith(suffix)]
            if not candidates:
                return None
        name = target.rsplit("/", 1)[-1].lower()
        has_ext = "." in name and not name.endswith(".md")
        if not has_ext:
            # [[Note]] names a markdown note; an attachment needs its extension (rule 3).
            notes = [c for c in candidates if c.lower().endswith(".md")]
            candidates = notes or candidates
        for c in candidates:
            c_folder = c.rsplit("/", 1)[0] if "/" in c else ""
            if c_folder == folder:
                return c
        return candidates[0]
