"""The version of every note the agent has read, passed back as the write precondition.

Notes come back from obsidian_get_context with a ``version`` (a hash of their bytes), and a
single-note write of obsidian_vault_manager returns the new one. ``NoteVersions`` records them
(``observe``), and before a write to a note it has seen (update_note, append_note, move_note,
delete_note) without an ``expectedVersion``, ``precondition`` supplies it. The tool then refuses
the write if the note changed since (e.g. edited in Obsidian meanwhile), and the model is told to
read it again: an edit made outside the agent is never overwritten.

Notes are matched by path (any case, ``.md`` optional) or by a unique file name, since the model
may name a note by its title. One instance lives as long as a conversation in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GUARDED_OPERATIONS", "NoteVersions"]

_READER = "obsidian_get_context"
_WRITER = "obsidian_vault_manager"
GUARDED_OPERATIONS = frozenset({"update_note", "append_note", "move_note", "delete_note"})


def _key(name: str) -> str:
    low = name.strip().strip("/").lower()
    return low[:-3] if low.endswith(".md") else low


class NoteVersions:
    def __init__(self) -> None:
        self._by_key: dict[str, tuple[str, str]] = {}  # key -> (path, version)

    def __len__(self) -> int:
        return len(self._by_key)

    def record(self, path: str, version: str) -> None:
        self._by_key[_key(path)] = (path, version)

    def forget(self, path: str) -> None:
        self._by_key.pop(_key(path), None)

    def version_of(self, name: str) -> str | None:
        key = _key(name)
        if key in self._by_key:
            return self._by_key[key][1]
        matches = [v for k, (_, v) in self._by_key.items() if k.rsplit("/", 1)[-1] == key]
        return matches[0] if len(matches) == 1 else None

    def observe(self, tool: str, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """Learn versions from a tool's result."""
        if tool == _READER:
            notes = [result.get("primaryNote"), *(result.get("relatedNotes") or [])]
            for note in notes:
                if isinstance(note, Mapping) and isinstance(note.get("version"), str):
                    self.record(str(note["path"]), str(note["version"]))
        elif tool == _WRITER and result.get("success") is not False:
            operation = arguments.get("operation")
            paths = result.get("affectedPaths") or []
            target = arguments.get("target")
            if operation in ("move_note", "delete_note") and isinstance(target, str):
                self.forget(target)
            version = result.get("version")
            if isinstance(version, str) and paths:
                self.record(str(paths[0]), version)

    def precondition(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments the loop adds to a write: ``{"expectedVersion": ...}`` or nothing."""
        if tool != _WRITER or arguments.get("operation") not in GUARDED_OPERATIONS:
            return {}
        if arguments.get("expectedVersion") or arguments.get("expected_version"):
            return {}
        target = arguments.get("target")
        version = self.version_of(target) if isinstance(target, str) else None
        return {"expectedVersion": version} if version else {}
