"""Putting back a note an editor saved into while a tool replaced it (``files._put_back``).

Real files in a real folder; the swap is the system's own (``renameat2`` on Linux, else the
check-and-rename fallback, exercised here too by turning the swap off).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.vault import files
from vaultpilot.vault.exchange import exchange


@pytest.fixture(params=["swap", "fallback"])
def folder(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[files._Dir]:
    (tmp_path / "a").write_text("a", encoding="utf-8")
    (tmp_path / "b").write_text("b", encoding="utf-8")
    if request.param == "swap" and not exchange(None, str(tmp_path / "a"), str(tmp_path / "b")):
        pytest.skip("this system cannot swap two names atomically")
    if request.param == "fallback":
        monkeypatch.setattr(files, "exchange", lambda *args: False)
    fd = os.open(tmp_path, os.O_RDONLY)
    yield files._Dir(tmp_path, fd)
    os.close(fd)


def _setup(folder: files._Dir) -> os.stat_result:
    (folder.path / "Note.md").write_text("this change\n", encoding="utf-8")  # what the tool wrote
    (folder.path / ".old.tmp").write_text("the editor's late save\n", encoding="utf-8")
    return os.stat(folder.path / "Note.md")


def test_the_system_swaps_two_names(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a", encoding="utf-8")
    (tmp_path / "b").write_text("b", encoding="utf-8")
    if exchange(None, str(tmp_path / "a"), str(tmp_path / "b")):
        assert (tmp_path / "a").read_text(encoding="utf-8") == "b"
        assert (tmp_path / "b").read_text(encoding="utf-8") == "a"
    else:  # nothing done where the system cannot
        assert (tmp_path / "a").read_text(encoding="utf-8") == "a"


def test_the_late_save_is_put_back_when_nothing_came_after(folder: files._Dir) -> None:
    ours = _setup(folder)
    assert files._put_back(folder, ".old.tmp", "Note.md", ours) is None
    assert (folder.path / "Note.md").read_text(encoding="utf-8") == "the editor's late save\n"
    assert not list(folder.path.glob("Note (conflict *).md"))


def test_a_save_on_top_of_the_change_stays_and_the_late_one_is_kept_beside(
    folder: files._Dir,
) -> None:
    ours = _setup(folder)
    time.sleep(0.01)
    with open(folder.path / "Note.md", "w", encoding="utf-8") as fh:  # in place, as editors do
        fh.write("this change\nand a save on top of it\n")
    copy = files._put_back(folder, ".old.tmp", "Note.md", ours)
    assert copy is not None and copy.startswith("Note (conflict ")
    assert (folder.path / "Note.md").read_text(encoding="utf-8") == (
        "this change\nand a save on top of it\n"
    )
    assert (folder.path / copy).read_text(encoding="utf-8") == "the editor's late save\n"
