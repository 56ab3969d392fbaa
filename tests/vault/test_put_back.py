"""Putting back a note an editor saved into while a tool replaced it (``files._put_back``).

Real files in a real folder; the swap is the system's own (``renameat2`` on Linux, else the
check-and-rename fallback, exercised here too by turning the swap off).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultpilot.errors import ConflictKeptError, StaleVersionError
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


def _watched(folder: files._Dir) -> int:
    """A write lease on the note as the tool's change holds it (``files._watch``)."""
    fd = os.open(folder.path / "Note.md", os.O_RDONLY)
    if files._take_lease(fd, limit=0.0, write=True) != "held":
        os.close(fd)
        pytest.skip("this system gives no file leases")
    return fd


def test_the_late_save_is_put_back_when_nobody_opened_the_change(folder: files._Dir) -> None:
    ours = _setup(folder)
    watch = _watched(folder)
    try:
        assert files._put_back(folder, ".old.tmp", "Note.md", ours, watch) is None
    finally:
        files._unwatch(watch)
    assert (folder.path / "Note.md").read_text(encoding="utf-8") == "the editor's late save\n"
    assert not list(folder.path.glob("Note (conflict *).md"))


READER = """
import sys
with open(sys.argv[1], encoding="utf-8") as fh:
    print(fh.read(), end="", flush=True)
"""


@pytest.fixture
def swap_folder(tmp_path: Path) -> Iterator[files._Dir]:
    """A folder where the system swaps names (where it cannot, there are no leases either)."""
    (tmp_path / "a").write_text("a", encoding="utf-8")
    (tmp_path / "b").write_text("b", encoding="utf-8")
    if not exchange(None, str(tmp_path / "a"), str(tmp_path / "b")):
        pytest.skip("this system cannot swap two names atomically")
    fd = os.open(tmp_path, os.O_RDONLY)
    yield files._Dir(tmp_path, fd)
    os.close(fd)


def test_a_program_that_opened_the_change_keeps_it_the_note_and_the_late_save_beside(
    swap_folder: files._Dir,
) -> None:
    """It may have read the change and save it again in place: put back, the late save would
    be overwritten by that save, so the late save is kept beside instead."""
    folder = swap_folder
    ours = _setup(folder)
    watch = _watched(folder)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(folder.path / "Note.md")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not files._lease_broken(watch, write=True):  # its open waits on the lease
            assert time.monotonic() < deadline, "the reader never opened the note"
            time.sleep(0.005)
        copy = files._put_back(folder, ".old.tmp", "Note.md", ours, watch)
    finally:
        files._unwatch(watch)
        out, _ = reader.communicate(timeout=20)
    assert out == "this change\n"  # what it read is what the note holds
    assert copy is not None and copy.startswith("Note (conflict ")
    assert (folder.path / "Note.md").read_text(encoding="utf-8") == "this change\n"
    assert (folder.path / copy).read_text(encoding="utf-8") == "the editor's late save\n"


# Another program, holding the note open to write from before the tool's check, first reads
# the note by its name (the tool's change by then), then writes its own line through the old
# descriptor, then saves what it read plus a second line in place (truncate, then write).
TWO_SAVES = """
import os, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
sys.stdin.readline()
with open(path, encoding="utf-8") as fh:
    text = fh.read()
os.write(fd, b"late line 1\\n")
os.close(fd)
time.sleep(0.05)
with open(path, "w", encoding="utf-8") as fh:
    fh.write(text + "late line 2\\n")
"""


def test_a_save_through_the_old_file_survives_a_save_read_from_the_change(tmp_path: Path) -> None:
    """The put-back window: the note holds the change while the other program reads it, then
    the old file (with its first line) is put back, and its second save, made from what it
    read, would overwrite that first line. Both lines stay in the vault and the tool says so."""
    note = tmp_path / "Note.md"
    note.write_text("# Note\n", encoding="utf-8")
    other = subprocess.Popen(
        [sys.executable, "-c", TWO_SAVES, str(note)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    stdin, stdout = other.stdin, other.stdout
    assert stdin is not None and stdout is not None
    assert stdout.readline().strip() == "open"
    base = files.read_note(tmp_path, "Note.md")

    before = note.stat().st_ino

    def proceed() -> None:  # once the tool has renamed its change in
        deadline = time.monotonic() + 20
        while note.stat().st_ino == before and time.monotonic() < deadline:
            time.sleep(0.001)
        stdin.write("\n")
        stdin.flush()

    go = threading.Thread(target=proceed)
    go.start()
    try:
        with pytest.raises((StaleVersionError, ConflictKeptError)) as err:
            files.replace_note(tmp_path, "Note.md", base.text + "tool line\n", base.fmt, base=base)
    finally:
        go.join()
        stdin.close()
        other.wait(timeout=20)
    copies = sorted(tmp_path.glob("Note (conflict *).md"))
    kept = note.read_text(encoding="utf-8") + "".join(c.read_text(encoding="utf-8") for c in copies)
    assert "late line 1\n" in kept and "late line 2\n" in note.read_text(encoding="utf-8")
    if copies:  # a text kept beside is always reported
        assert isinstance(err.value, ConflictKeptError)
        assert copies[0].name in err.value.message
    assert not list(tmp_path.glob(".vaultpilot-*.tmp"))


def test_a_note_with_a_long_name_gets_its_conflict_copy_too(folder: files._Dir) -> None:
    # The copy's name is cut to fit 255 bytes: a name too long to link would have lost the
    # text only the replaced file held (it is unlinked once the write settles).
    name = "ü" * 120 + ".md"  # 243 bytes in UTF-8: no room for the copy's suffix
    (folder.path / name).write_text("a save on top\n", encoding="utf-8")
    (folder.path / ".late.tmp").write_text("the late save\n", encoding="utf-8")
    copy = files._keep_beside(folder, ".late.tmp", name)
    assert len(copy.encode("utf-8")) <= 255 and copy.startswith("ü") and "(conflict " in copy
    assert (folder.path / copy).read_text(encoding="utf-8") == "the late save\n"
