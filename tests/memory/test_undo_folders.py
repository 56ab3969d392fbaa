"""The two vault inspections undo and the journal make through ``vault.files``: removing a folder
a change set created (only an empty folder, never a link, a protected folder or a path outside
the vault) and naming the folders a write would create. (Undo's own folder rules are in
test_journal.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vaultpilot.vault import files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Empty").mkdir(parents=True)
    (root / "Full").mkdir()
    (root / "Full" / "note.md").write_text("kept\n", encoding="utf-8")
    (root / "file.md").write_text("a note\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / "Elsewhere").mkdir()
    (root / "Link").symlink_to(root / "Elsewhere", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    return root


def test_remove_empty_folder_removes_only_an_empty_folder(root: Path) -> None:
    assert files.remove_empty_folder(root, "Empty") is True
    assert not os.path.lexists(root / "Empty")
    for kept in ("Full", "file.md", "Link", ".git", "../outside", "Missing", "", "Empty"):
        assert files.remove_empty_folder(root, kept) is False, kept
    assert (root / "Full" / "note.md").is_file() and (root / "file.md").is_file()
    assert (root / "Link").is_symlink() and (root / "Elsewhere").is_dir()
    assert (root / ".git").is_dir() and (root.parent / "outside").is_dir()


def test_missing_parents_names_the_folders_a_write_would_create(root: Path) -> None:
    assert files.missing_parents(root, "New/Deeper/x.md") == ["New", "New/Deeper"]
    assert files.missing_parents(root, "Full/New/x.md") == ["Full/New"]
    assert files.missing_parents(root, "Full/x.md") == []
    assert files.missing_parents(root, "x.md") == []
    assert files.missing_parents(root, "Link/x.md") == []  # a link counts as there
