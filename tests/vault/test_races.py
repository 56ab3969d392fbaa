"""Confinement that cannot be raced: a folder swapped for a link out of the vault mid-write.

A real process swaps the vault folder ``Swap`` for a symbolic link to a folder outside the vault
and back, as fast as it can, while this process creates and replaces notes inside ``Swap``.
Writes may be refused while the link is there; none may land outside. Bounded in count and time.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from vaultpilot.errors import VaultpilotError
from vaultpilot.vault.files import create_note, read_note, replace_note

SWAPPER = """
import os, sys, time
vault, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
folder, parked = os.path.join(vault, "Swap"), os.path.join(vault, "Swap-parked")
end = time.monotonic() + seconds
print("swapping", flush=True)
swaps = 0
while time.monotonic() < end:
    os.rename(folder, parked)
    os.symlink(outside, folder, target_is_directory=True)
    os.unlink(folder)
    os.rename(parked, folder)
    swaps += 1
    time.sleep(0.0002)  # leave the real folder in place a moment, so some writes get through
print(swaps, flush=True)
"""

CREATES = 600


def _symlinks_work(tmp_path: Path) -> bool:
    try:
        (tmp_path / "probe").symlink_to(tmp_path)
    except (OSError, NotImplementedError):
        return False
    return True


def test_a_folder_swapped_for_a_link_out_never_receives_a_write(tmp_path: Path) -> None:
    if not _symlinks_work(tmp_path):
        pytest.skip("symbolic links are not available here")
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    (vault / "Swap").mkdir(parents=True)
    (vault / "Swap" / "Base.md").write_text("base\n", encoding="utf-8")
    outside.mkdir()
    (outside / "Base.md").write_text("outside\n", encoding="utf-8")
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(vault), str(outside), "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    created = refused = 0
    crashes: list[str] = []
    started = time.monotonic()
    try:
        assert swapper.stdout is not None and swapper.stdout.readline().strip() == "swapping"
        for i in range(CREATES):
            try:
                create_note(vault, f"Swap/n{i}.md", f"note {i}\n", create_folders=False)
                created += 1
            except VaultpilotError:
                refused += 1
            except Exception as exc:  # a raw error would reach the caller: reported below
                crashes.append(repr(exc))
            try:
                base = read_note(vault, "Swap/Base.md")
                replace_note(
                    vault,
                    "Swap/Base.md",
                    base.text + f"{i}\n",
                    base.fmt,
                    expected_version=base.version,
                )
            except VaultpilotError:
                pass
            except Exception as exc:
                crashes.append(repr(exc))
    finally:
        swapper.kill()
        swapper.wait(timeout=10)
    assert time.monotonic() - started < 60
    assert sorted(p.name for p in outside.iterdir()) == ["Base.md"]
    assert (outside / "Base.md").read_text(encoding="utf-8") == "outside\n"
    assert crashes == []
    assert created + refused == CREATES and created > 0
