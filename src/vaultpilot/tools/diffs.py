"""What a write would do, as unified diffs: the value of ``dryRun`` and of approval previews.

``FileDiff`` is one file's change (``before``/``after`` paths, ``None`` for a file created or
removed) with its unified diff; ``unified`` builds one from two texts. A move whose text does not
change still gets a diff: its two header lines name both paths (``moved``). A file that is not a
note (an attachment) is shown by name only (``binary``). ``unknown_files`` checks an approved
subset against the files of a change. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FileDiff", "binary", "moved", "unified", "unknown_files"]


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str  # the file's path after the change (before it, for a removal)
    before_path: str | None  # None: the file is created
    after_path: str | None  # None: the file is removed
    diff: str

    def as_json(self) -> dict[str, str | None]:
        return {
            "path": self.path,
            "from": self.before_path,
            "to": self.after_path,
            "diff": self.diff,
        }


def _header(before_path: str | None, after_path: str | None) -> tuple[str, str]:
    return (
        f"a/{before_path}" if before_path is not None else "/dev/null",
        f"b/{after_path}" if after_path is not None else "/dev/null",
    )


def unified(before_path: str | None, after_path: str | None, before: str, after: str) -> FileDiff:
    """The unified diff (3 lines of context) of one file, ``/dev/null`` for a missing side."""
    old, new = _header(before_path, after_path)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=old, tofile=new
    )
    # A last line without a newline would run into the next header: mark it as diff(1) does.
    text = "".join(
        ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
    )
    path = after_path if after_path is not None else before_path or ""
    if not text and before_path != after_path:  # an empty file created or removed
        text = f"--- {old}\n+++ {new}\n"
    return FileDiff(path, before_path, after_path, text)


def moved(before_path: str, after_path: str, before: str, after: str) -> FileDiff:
    """A note moved (and maybe its links rewritten): the headers name both paths even when the
    text stays the same."""
    diff = unified(before_path, after_path, before, after)
    if diff.diff:
        return diff
    old, new = _header(before_path, after_path)
    return FileDiff(after_path, before_path, after_path, f"--- {old}\n+++ {new}\n")


def binary(before_path: str | None, after_path: str | None) -> FileDiff:
    """A file that is not a note (an attachment): moved, created or removed, shown by name."""
    old, new = _header(before_path, after_path)
    path = after_path if after_path is not None else before_path or ""
    return FileDiff(path, before_path, after_path, f"--- {old}\n+++ {new}\n")


def unknown_files(subset: Iterable[str], diffs: Iterable[FileDiff]) -> list[str]:
    """The files of ``subset`` that no diff of the change names."""
    known = {d.path for d in diffs}
    return [f for f in dict.fromkeys(subset) if f not in known]
