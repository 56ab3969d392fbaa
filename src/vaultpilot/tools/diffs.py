"""What a write would do, as unified diffs: the value of ``dryRun`` and of approval previews.

``FileDiff`` is one file's change (``before``/``after`` paths, ``None`` for a file created or
removed) with its unified diff; ``unified`` builds one from two texts. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

__all__ = ["FileDiff", "unified"]


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


def unified(before_path: str | None, after_path: str | None, before: str, after: str) -> FileDiff:
    """The unified diff (3 lines of context) of one file, ``/dev/null`` for a missing side."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{before_path}" if before_path is not None else "/dev/null",
        tofile=f"b/{after_path}" if after_path is not None else "/dev/null",
    )
    # A last line without a newline would run into the next header: mark it as diff(1) does.
    text = "".join(
        ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
    )
    path = after_path if after_path is not None else before_path or ""
    return FileDiff(path, before_path, after_path, text)
