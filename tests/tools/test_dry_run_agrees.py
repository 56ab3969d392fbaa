"""A dry run answers exactly as the real call would.

For every write operation of ``obsidian_vault_manager`` and a table of hostile names (characters
some platforms refuse, trailing dots and spaces, invisible characters, ``..``, absolute paths,
the protected folders, symbolic links in and out of the vault, names differing only in case,
targets that exist), the dry run and then the real call run on a fresh small vault built here:
both succeed, or both fail with the same error (and a bulk operation fails the same notes), and
the dry run leaves every byte, link and folder as it was: the vault's, those outside it its links
lead to, and the system trash's. (The daily notes folder is a link out of the vault, so an append
to a daily note not written yet, which creates it, is refused.)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.tools import ToolContext, open_context, run_tool
from vaultpilot.tools.operations import MANAGER_OPERATIONS

NOW = datetime(2025, 11, 12, 18, 0, tzinfo=UTC)
BODY = "# {title}\n\nbody text, see [[Plan]].\n"

# Notes whose names no new note may have, put there by another program (as on Linux).
HOSTILE_NOTES = ["a<b.md", "c:d.md", "e|f.md", "g .md", "h..md", "RTL\u202eevil.md", "i\u200bj.md"]


def _build(root: Path, outside: Path) -> None:
    """A small vault: notes linking to each other, folders, the protected folders, notes with
    names no new note may have, and links: to a note, to a folder, into .obsidian, out of the
    vault (to a folder and to a note)."""
    notes = ["Plan.md", "Other.md", "Folder/Inner.md", "Folder/Sub/Deep.md", *HOSTILE_NOTES]
    for rel in notes:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BODY.format(title=Path(rel).stem), encoding="utf-8")
    (root / "Archive").mkdir()
    (root / "Archive" / "Kept.md").write_text(BODY.format(title="Kept"), encoding="utf-8")
    (root / "Empty").mkdir()
    (root / "Loose").write_text("a file without an extension\n", encoding="utf-8")
    (root / "Binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff body text")  # not a text note
    (root / "Latin1.md").write_bytes("# Caf\u00e9\n\nbody text\n".encode("latin-1"))
    (root / "Caf\u00e9.md").write_text(BODY.format(title="Caf\u00e9"), encoding="utf-8")  # NFC
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}\n", encoding="utf-8")
    # Daily notes go into a link leading out of the vault: an append to a new one creates it.
    daily = root / ".obsidian" / "daily-notes.json"
    daily.write_text('{"folder": "LinkOut", "format": "YYYY-MM-DD"}\n', encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / ".trash").mkdir()
    (root / ".trash" / "Old.md").write_text("# Old\n", encoding="utf-8")
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nbody text\n", encoding="utf-8")
    os.symlink(".obsidian", root / "LinkObs")
    os.symlink("Folder", root / "LinkIn")
    os.symlink("Plan.md", root / "LinkNote.md")
    os.symlink(outside, root / "LinkOut")
    os.symlink(outside / "secret.md", root / "OutNote.md")
    stamp = int(NOW.timestamp() - 86400) * 1_000_000_000
    for path in [*root.rglob("*"), *outside.rglob("*")]:
        if not path.is_symlink():
            os.utime(path, ns=(stamp, stamp))


# Names for a note, a folder or a destination: hostile, existing, twins in case, links.
NAMES = [
    *HOSTILE_NOTES,
    "new<1.md",
    "new:2.md",
    "new|3.md",
    "New .md",
    "New..md",
    "Trail.",
    "Zero\u200bWidth.md",
    "Bidi\u202eFolder",
    "../escape.md",
    "Folder/../../escape.md",
    "/etc/passwd",
    "/abs.md",
    "C:/x.md",
    ".obsidian",
    ".obsidian/app.json",
    ".obsidian/New.md",
    ".git/config",
    ".trash",
    ".trash/Old.md",
    ".hidden.md",
    "LinkObs",
    "LinkObs/app.json",
    "LinkObs/New.md",
    "LinkOut",
    "LinkOut/secret.md",
    "LinkOut/New.md",
    "LinkOut/2025-11-13.md",
    "LinkIn",
    "LinkIn/Inner.md",
    "LinkIn/New.md",
    "LinkNote.md",
    "OutNote.md",
    "plan.md",
    "PLAN",
    "Cafe\u0301.md",  # the NFD twin of Caf\u00e9.md
    "Binary.md",
    "Latin1.md",
    "x" * 300 + ".md",
    "",
    "/",
    ".",
    "  Plan.md  ",
    "Folder/./Inner.md",
    "Folder/",
    "folder",
    "FOLDER/New.md",
    "Plan.md",
    "Other.md",
    "Folder",
    "Folder/Inner.md",
    "Archive",
    "Archive/Kept.md",
    "Empty",
    "Loose",
    "Loose/New.md",
    "Plan.md/New.md",
    "Missing/New.md",
    "Fresh.md",
    "Fresh",
]

STALE = "0123456789abcdef"  # a version no note of the vault has
VAULT = "(the vault, changed first)"  # not an argument: how the vault differs from _build's


def _system_trash(root: Path, outside: Path) -> None:
    (root / ".obsidian" / "app.json").write_text('{"trashOption": "system"}\n', encoding="utf-8")


def _trash_leads_out(root: Path, outside: Path) -> None:
    (root / ".trash" / "Old.md").unlink()
    (root / ".trash").rmdir()
    os.symlink(outside, root / ".trash")


def _trash_is_a_file(root: Path, outside: Path) -> None:
    (root / ".trash" / "Old.md").unlink()
    (root / ".trash").rmdir()
    (root / ".trash").write_text("not a folder\n", encoding="utf-8")


CHANGES = {
    "system trash": _system_trash,
    ".trash out": _trash_leads_out,
    ".trash file": _trash_is_a_file,
}

# The calls of each operation, "{}" standing for each name of NAMES: as the note or folder
# changed, or as where an existing one goes.
SLOTS: dict[str, list[dict[str, Any]]] = {
    "create_note": [
        {"target": "{}", "content": "# New\n"},
        {"target": "{}", "content": "# New\n", "createFolders": True},
    ],
    "update_note": [
        {"target": "{}", "content": "# New text\n"},
        {"target": "{}", "content": "# New text\n", "expectedVersion": STALE},
    ],
    "edit_note": [{"target": "{}", "edits": [{"oldText": "body text", "newText": "BODY"}]}],
    "append_note": [{"target": "{}", "content": "- more"}],
    "delete_note": [
        {"target": "{}", "confirmDestructive": True},
        {"target": "{}", "confirmDestructive": True, "expectedVersion": STALE},
        {"target": "{}", "confirmDestructive": True, VAULT: "system trash"},
        {"target": "{}", "confirmDestructive": True, VAULT: ".trash out"},
        {"target": "{}", "confirmDestructive": True, VAULT: ".trash file"},
    ],
    "move_note": [
        {"target": "{}", "destination": "Archive"},
        {"target": "Other.md", "destination": "{}"},
        {"target": "Other.md", "destination": "{}", "createFolders": True},
    ],
    "create_folder": [{"target": "{}"}, {"target": "{}", "createFolders": True}],
    "delete_folder": [
        {"target": "{}", "confirmDestructive": True, "recursive": True},
        {"target": "{}", "confirmDestructive": True, "recursive": True, VAULT: "system trash"},
        {"target": "{}", "confirmDestructive": True, "recursive": True, VAULT: ".trash out"},
    ],
    "move_folder": [
        {"target": "{}", "destination": "Archive"},
        {"target": "Folder", "destination": "{}", "createFolders": True},
    ],
    "bulk_tag": [{"targets": ["{}", "Other.md"], "metadata": {"tags": ["reviewed"]}}],
    "bulk_move": [
        {"targets": ["{}"], "destination": "Archive"},
        {"targets": ["Other.md"], "destination": "{}", "createFolders": True},
    ],
    "bulk_update_metadata": [{"targets": ["{}", "Other.md"], "metadataChanges": {"status": 1}}],
}


def _fill(value: Any, name: str) -> Any:
    if value == "{}":
        return name
    if isinstance(value, list):
        return [_fill(v, name) for v in value]
    return value


CASES = [
    pytest.param(op, {k: _fill(v, name) for k, v in slot.items()}, id=f"{op}-{i}-{name!r}")
    for op, slots in SLOTS.items()
    for i, slot in enumerate(slots)
    for name in NAMES
]


def test_the_table_covers_every_write_operation() -> None:
    assert set(SLOTS) == {name for name, op in MANAGER_OPERATIONS.items() if op.writes}


def _tree(top: Path) -> dict[str, str]:
    """Every folder, file (its bytes' hash) and link (where it leads) under ``top``, links not
    followed, the index left out (a dry run brings it up to date with the vault)."""
    out: dict[str, str] = {}
    for folder, dirs, names in os.walk(top, followlinks=False):
        if Path(folder) == top:
            dirs.remove("index")
        for name in [*dirs, *names]:
            path = Path(folder) / name
            if path.is_symlink():
                out[str(path)] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[str(path)] = "folder"
            else:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ToolContext, Path]]:
    root, outside = tmp_path / "vault", tmp_path / "outside"
    root.mkdir()
    _build(root, outside)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home"))  # the system trash, if asked
    ctx = open_context(root, tmp_path / "index" / "index.db", now=lambda: NOW)
    try:
        yield ctx, outside
    finally:
        ctx.conn.close()


def _outcome(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    out = run_tool(ctx, "obsidian_vault_manager", arguments)
    failed = sorted((f["path"], f["reason"]) for f in out.result.get("failures", []))
    return {
        "success": out.result.get("success"),
        "error": type(out.error).__name__ if out.error is not None else None,
        "failures": failed,
    }


@pytest.mark.parametrize(("operation", "arguments"), CASES)
def test_a_dry_run_answers_as_the_real_call(
    fresh: tuple[ToolContext, Path], operation: str, arguments: dict[str, Any]
) -> None:
    ctx, outside = fresh
    arguments = dict(arguments)
    change = arguments.pop(VAULT, None)
    if change is not None:
        CHANGES[change](ctx.root, outside)
    call = {"operation": operation, **arguments}
    before = _tree(ctx.root.parent)
    preview = _outcome(ctx, {**call, "dryRun": True})
    assert _tree(ctx.root.parent) == before, "the dry run wrote"
    real = _outcome(ctx, call)
    assert preview == real, f"dry run {preview}, real call {real}"
