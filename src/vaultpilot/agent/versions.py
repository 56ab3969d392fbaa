"""The version of every note the agent has read, passed back as the write precondition.

Tool results report note versions (a hash of their bytes): what each tool's results carry is
its ``Tool.versions`` fact (obsidian_get_context's notes; a single-note write's new version).
``NoteVersions`` records them (``observe``), and before a write to a note it has seen, of an
operation whose facts say ``guarded`` (it takes ``expectedVersion``), without an
``expectedVersion``, ``precondition`` supplies it. The tool then refuses the write if the note
changed since (e.g. edited in Obsidian meanwhile), and the model is told to read it again: an
edit made outside the agent is never overwritten. After an operation that ``forgets`` (a move, a
delete) the target's version is dropped.

Notes are matched by path (any case, ``.md`` optional) or by a unique file name, since the model
may name a note by its title. One instance lives as long as a conversation in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vaultpilot.tools import TOOLS, Tool

__all__ = ["NoteVersions"]

_BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}


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
        facts = _BY_NAME.get(tool)
        if facts is None or result.get("success") is False or "error" in result:
            return
        op = facts.operation(arguments)
        target = arguments.get("target")
        if op is not None and op.forgets and isinstance(target, str):
            self.forget(target)
        for path, version in facts.versions(result):
            self.record(path, version)

    def precondition(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments the loop adds to a write: ``{"expectedVersion": ...}`` or nothing."""
        facts = _BY_NAME.get(tool)
        op = facts.operation(arguments) if facts is not None else None
        if op is None or not op.guarded:
            return {}
        if arguments.get("expectedVersion") or arguments.get("expected_version"):
            return {}
        target = arguments.get("target")
        version = self.version_of(target) if isinstance(target, str) else None
        return {"expectedVersion": version} if version else {}
