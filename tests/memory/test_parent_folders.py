"""What a run changed, as a person counts it: a folder made only to hold a note is not a change
of its own (a move into a new folder is one change, in the terminal and in the agent view)."""

from __future__ import annotations

from vaultpilot.memory.journal import StoredChange, without_parent_folders


def _change(seq: int, kind: str, before: str | None, after: str | None) -> StoredChange:
    return StoredChange(seq, kind, "op", before, after, None, None, 0.0)  # type: ignore[arg-type]


def test_only_the_folders_made_to_hold_something_are_left_out() -> None:
    changes = [
        _change(1, "mkdir", None, "Archive/Old"),  # made for the move below
        _change(2, "move", "Recipes/Dal.md", "Archive/Old/Dal.md"),
        _change(3, "mkdir", None, "Empty"),  # create_folder: a change of its own
        _change(4, "mkdir", None, "Deep"),
        _change(5, "mkdir", None, "Deep/er"),  # both made for the note below
        _change(6, "create", None, "Deep/er/Note.md"),
    ]
    kept = without_parent_folders(changes)
    assert [(c.kind, c.path_after) for c in kept] == [
        ("move", "Archive/Old/Dal.md"),
        ("mkdir", "Empty"),
        ("create", "Deep/er/Note.md"),
    ]
