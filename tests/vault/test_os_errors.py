"""errors.map_os_errors: the file system's failures become our error leaves, with the path,
the reason and what to do; our bugs are not relabelled."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from vaultpilot.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    OSErrorMapping,
    PathRefusedError,
    SetupError,
    StorageError,
    map_os_errors,
)
from vaultpilot.vault.files import create_folder, create_note, move_path, read_note


def test_unmapped_failures_are_storage_errors_naming_path_reason_and_remedy(
    tmp_path: Path,
) -> None:
    with pytest.raises(StorageError) as caught, map_os_errors("Notes/A.md", "read"):
        (tmp_path / "file").write_text("x")
        os.listdir(tmp_path / "file")  # a real ENOTDIR
    assert str(caught.value) == (
        "Could not read 'Notes/A.md': Not a directory. Check the disk and retry."
    )
    assert caught.value.__cause__ is None  # no traceback of ours or the OS's travels with it
    for code, remedy in ((errno.EACCES, "may read and write"), (errno.ENOSPC, "free some space")):
        with pytest.raises(StorageError, match=remedy), map_os_errors(tmp_path, "write"):
            raise OSError(code, os.strerror(code))


def test_a_name_too_long_is_the_callers_mistake(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"File name too long\. Choose a shorter name"):
        create_note(tmp_path, "n" * 300 + ".md", "text")
    assert list(tmp_path.iterdir()) == []


def test_mapped_kinds_and_errnos_most_specific_first(tmp_path: Path) -> None:
    gone = NotFoundError("gone")
    mapping: OSErrorMapping = {
        OSError: SetupError,
        FileNotFoundError: gone,
        errno.ELOOP: PathRefusedError,
    }
    with pytest.raises(NotFoundError) as caught, map_os_errors("x", "open", mapping):
        (tmp_path / "missing").read_text()
    assert caught.value is gone
    made = map_os_errors("x", "make", mapping, advice="Do this.")
    with pytest.raises(SetupError, match=r"Could not make 'x': File exists\. Do this"), made:
        os.mkdir(tmp_path)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    opened = map_os_errors("x", "open", mapping)
    with pytest.raises(PathRefusedError, match="Could not open 'x': Too many levels"), opened:
        os.open(tmp_path / "loop", os.O_RDONLY | os.O_NOFOLLOW)


def test_bugs_pass_through_unchanged() -> None:
    with pytest.raises(KeyError), map_os_errors("x", "read"):
        _ = dict[str, int]()["missing"]
    with pytest.raises(TypeError), map_os_errors("x", "read"):
        len(5)  # type: ignore[arg-type]


def test_the_vault_writes_keep_their_specific_answers(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="Search for it"):
        read_note(tmp_path, "Missing.md")
    with pytest.raises(NotFoundError, match="createFolders=true"):
        create_note(tmp_path, "No/Such/Note.md", "x", create_folders=False)
    with pytest.raises(NotFoundError, match="createFolders=true"):
        create_folder(tmp_path, "No/Such", create_parents=False)
    create_note(tmp_path, "A.md", "a")
    create_note(tmp_path, "B.md", "b")
    with pytest.raises(AlreadyExistsError, match="something already exists there"):
        move_path(tmp_path, "A.md", "B.md")
    with pytest.raises(NotFoundError, match="doesn't exist; check the path"):
        move_path(tmp_path, "C.md", "D.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["A.md", "B.md"]
