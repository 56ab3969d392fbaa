"""What a run changed in the vault, read back from the change journal.

An agent run is one change set whose id is the run's id (``agent.vault_tools``), so after each
write the terminal view asks ``RunChanges.new()`` for the file changes it has not shown yet (to
print ``Edit(Inbox.md) +3 −1``), and at the end ``summary()`` for every note the run touched
(its first "before" against its last "after"), with the change set's id for the undo hint.
Reading the journal never fails a run: a journal that cannot be read gives no lines. A folder
made only to hold a created or moved item (the journal's ``mkdir`` above another change's path)
is not a line of its own: the item's line already says where it went.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultpilot.cli.steps import line_counts
from vaultpilot.errors import VaultpilotError
from vaultpilot.memory.journal import Journal, StoredChange, without_parent_folders

__all__ = ["FileStep", "RunChanges"]


@dataclass(frozen=True, slots=True)
class FileStep:
    path: str
    kind: str  # create, update, delete, move, mkdir
    added: int
    removed: int
    moved_from: str | None = None

    def describe(self) -> str:
        match self.kind:
            case "create":
                return f"{self.path} (new, +{self.added})"
            case "delete":
                return f"{self.path} (deleted)"
            case "move":
                return f"{self.moved_from} → {self.path}"
            case "mkdir":
                return f"{self.path}/ (new folder)"
        return f"{self.path} +{self.added} −{self.removed}"


class RunChanges:
    def __init__(self, journal: Journal | None, vault: str) -> None:
        self.journal = journal
        self.vault = vault
        self.run_id: str | None = None
        self._seen = 0

    def start(self, run_id: str) -> None:
        self.run_id = run_id
        self._seen = 0

    def _changes(self) -> tuple[StoredChange, ...]:
        if self.journal is None or self.run_id is None:
            return ()
        try:
            changes = self.journal.get(self.vault, self.run_id).changes
        except VaultpilotError:
            return ()  # no change set yet: nothing written
        return without_parent_folders(changes)

    def new(self) -> list[FileStep]:
        """The file changes made since the last call."""
        fresh = [c for c in self._changes() if c.seq > self._seen]
        if fresh:
            self._seen = max(c.seq for c in fresh)
        return [
            self._step(c.kind, c.path_before, c.path_after, c.hash_before, c.hash_after)
            for c in fresh
        ]

    def summary(self) -> list[FileStep]:
        """Every path the run touched, its first state against its last."""
        # path now -> [kind overall, hash before the run, path before the run, hash now]
        state: dict[str, list[str | None]] = {}
        for c in self._changes():
            if c.kind == "delete":
                entry = state.pop(c.path_before or "", None)
                if entry is not None and entry[0] == "create":
                    continue  # made and deleted in the same run: nothing to show
                origin = entry[2] if entry else c.path_before
                state[c.path_before or "?"] = ["delete", c.hash_before, origin, None]
            elif c.kind == "move":
                entry = state.pop(c.path_before or "", None) or [
                    "move",
                    c.hash_before,
                    c.path_before,
                    c.hash_after,
                ]
                if entry[0] != "create":
                    entry[0] = "move"
                state[c.path_after or "?"] = entry
            else:
                key = c.path_after or "?"
                entry = state.get(key) or [c.kind, c.hash_before, key, None]
                entry[3] = c.hash_after
                state[key] = entry
        return [
            self._step(str(kind), origin, path, before, after)
            for path, (kind, before, origin, after) in state.items()
        ]

    def _step(
        self,
        kind: str,
        before_path: str | None,
        after_path: str | None,
        before: str | None,
        after: str | None,
    ) -> FileStep:
        path = (before_path if kind == "delete" else after_path) or before_path or "?"
        added = removed = 0
        if kind in ("create", "update", "move") and self.journal is not None and after:
            try:
                old = self.journal.blob(before, path).decode("utf-8", "replace") if before else ""
                new = self.journal.blob(after, path).decode("utf-8", "replace") if after else ""
                added, removed = line_counts(old, new)
            except VaultpilotError:
                pass
        moved = before_path if kind == "move" else None
        return FileStep(path, kind, added, removed, moved)
