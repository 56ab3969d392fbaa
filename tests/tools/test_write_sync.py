"""A write syncs only what it changed: while the file watcher keeps the index live, no tool write
walks the vault, and after each write the index equals a rebuild of the vault. Without a watcher
a write still syncs the whole vault. (A real copy of the example vault, real SQLite, a real file
watcher, the real write tools.)"""

from __future__ import annotations

import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.index.helpers import dump, write
from vaultpilot.index.db import connect
from vaultpilot.index.lookup import all_paths
from vaultpilot.index.sync import sync_vault
from vaultpilot.tools import ToolContext, open_context
from vaultpilot.tools.registry import run_tool
from vaultpilot.tools.session import VaultRuntime

T = TypeVar("T")
Index = dict[str, list[tuple[object, ...]]]

# The vault walk (``scan_vault``) lists every folder with os.scandir (of a descriptor, or of a
# path in the vault); count those calls made by one thread (the one running the write: a lent
# context syncs in the calling thread), so the watcher's own thread cannot blur the count. A
# library listing its own folder (ruamel.yaml looks for plug-ins) is not a vault walk.
_SCANS: dict[str, Any] = {"thread": None, "count": 0, "vault": ""}


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != "os.scandir" or _SCANS["thread"] != threading.get_ident():
        return
    where = args[0] if args else None
    if isinstance(where, int) or str(where).startswith(_SCANS["vault"]):
        _SCANS["count"] += 1


sys.addaudithook(_hook)


def _scans(vault: Path, fn: Callable[[], T]) -> tuple[T, int]:
    _SCANS.update(thread=threading.get_ident(), count=0, vault=str(vault.resolve()))
    try:
        out = fn()
    finally:
        _SCANS["thread"] = None
    return out, int(_SCANS["count"])


def _rebuild(root: Path, where: Path) -> Index:
    shutil.rmtree(where, ignore_errors=True)
    fresh = connect(where / "index.db")
    try:
        sync_vault(fresh, root, workers=1)
        return dump(fresh)
    finally:
        fresh.close()


def _index(db: Path) -> Index:
    conn = connect(db, read_only=True)
    try:
        return dump(conn)
    finally:
        conn.close()


def _runtime(vault: Path, db: Path, *, watch: bool) -> VaultRuntime:
    rt = VaultRuntime(vault, db, source="server", slots=2, watch=watch)
    rt.open()
    assert rt.live_info()["state"] == ("live" if watch else "off")
    return rt


@pytest.fixture
def db(data_dir: Path) -> Path:
    return data_dir / "vaults" / "v" / "index.db"


@pytest.fixture
def live(example_vault: Path, db: Path) -> Iterator[VaultRuntime]:
    rt = _runtime(example_vault, db, watch=True)
    yield rt
    rt.close()


WRITES: list[tuple[str, dict[str, Any]]] = [
    (
        "create",
        {
            "operation": "create_note",
            "target": "Projects/Write Sync.md",
            "content": "# Write Sync\nSee [[Home]] and [[Database Migration]]. #synced\n",
        },
    ),
    # A second 'Database Migration' note, at the root: links that meant the one in Projects/
    # would now lead to it, so they are rewritten to full paths.
    (
        "create with link protection",
        {"operation": "create_note", "target": "Database Migration.md", "content": "# Other\n"},
    ),
    ("update", {"operation": "update_note", "target": "Inbox.md", "content": "# Inbox\nemptied\n"}),
    ("append", {"operation": "append_note", "target": "Home.md", "content": "appended line"}),
    (
        "edit",
        {
            "operation": "edit_note",
            "target": "Recipes/Weeknight Dal.md",
            "heading": "Weeknight Dal",
            "content": "A new closing line.",
        },
    ),
    # Renamed, so every [[Database Migration]] link across the vault is rewritten.
    (
        "move with link rewrites",
        {
            "operation": "move_note",
            "target": "Projects/Database Migration.md",
            "destination": "Archive/2024/Postgres Migration.md",
        },
    ),
    (
        "delete",
        {
            "operation": "delete_note",
            "target": "Travel/Norway Fjords.md",
            "confirmDestructive": True,
        },
    ),
    (
        "bulk_tag",
        {
            "operation": "bulk_tag",
            "targets": ["People/Lena Park.md", "People/Marcus Feld.md", "Reference/Books/Peak.md"],
            "metadata": {"tags": ["synced"]},
        },
    ),
    (
        "bulk_move",
        {"operation": "bulk_move", "targets": ["Recipes/Crème Brûlée.md"], "destination": "Travel"},
    ),
]


def _write(rt: VaultRuntime, arguments: dict[str, Any]) -> dict[str, Any]:
    outcome = rt.call_tool("obsidian_vault_manager", arguments)
    assert outcome.error is None, outcome.result
    assert outcome.result.get("success"), outcome.result
    return outcome.result


def test_writes_while_live_walk_nothing_and_leave_the_index_equal_to_a_rebuild(
    live: VaultRuntime, example_vault: Path, db: Path, tmp_path: Path
) -> None:
    for what, arguments in WRITES:
        result, scans = _scans(
            example_vault,
            lambda arguments=arguments: _write(live, arguments),  # type: ignore[misc]
        )
        assert scans == 0, f"{what}: the write walked the vault ({scans} folder listings)"
        # Checked at once, without waiting for the watcher: the write synced what it changed.
        assert _index(db) == _rebuild(example_vault, tmp_path / "fresh"), what
        if what == "move with link rewrites":
            assert re.search(r"updated \d+ links? in", result["message"]), result  # rewritten
            indexed = set(live.call(lambda ctx: all_paths(ctx.conn)))
            assert "Projects/Database Migration.md" not in indexed
            assert "Archive/2024/Postgres Migration.md" in indexed
        if what == "create with link protection":
            assert "full paths" in " ".join(result.get("warnings", [])), result


def test_folder_moves_and_deletes_while_live_leave_the_index_equal_to_a_rebuild(
    live: VaultRuntime, example_vault: Path, db: Path, tmp_path: Path
) -> None:
    moved = {"operation": "move_folder", "target": "Projects/Garden", "destination": "Archive"}
    _write(live, moved)
    assert _index(db) == _rebuild(example_vault, tmp_path / "fresh")
    gone = {
        "operation": "delete_folder",
        "target": "Recipes",
        "confirmDestructive": True,
        "recursive": True,
    }
    _write(live, gone)
    assert _index(db) == _rebuild(example_vault, tmp_path / "fresh")


def test_an_agent_runs_writes_while_live_walk_nothing(
    live: VaultRuntime, example_vault: Path, db: Path, tmp_path: Path
) -> None:
    ctx = live.open_run_context()
    try:
        arguments = {
            "operation": "move_note",
            "target": "People/Priya Raman.md",
            "destination": "Archive",
        }
        outcome, scans = _scans(
            example_vault, lambda: run_tool(ctx, "obsidian_vault_manager", arguments)
        )
    finally:
        ctx.conn.close()
        if ctx.journal is not None:
            ctx.journal.close()
    assert outcome.error is None and outcome.result["success"], outcome.result
    assert scans == 0
    assert _index(db) == _rebuild(example_vault, tmp_path / "fresh")


def test_without_a_watcher_a_write_still_syncs_the_whole_vault(
    example_vault: Path, db: Path, tmp_path: Path
) -> None:
    rt = _runtime(example_vault, db, watch=False)
    try:
        # A change no tool made: only a walk of the vault finds it.
        write(example_vault, "Made Elsewhere.md", "# Made elsewhere\n")
        arguments = {"operation": "append_note", "target": "Home.md", "content": "one more line"}
        _, scans = _scans(example_vault, lambda: _write(rt, arguments))
        assert scans > 0  # the count sees a walk when there is one
        assert _index(db) == _rebuild(example_vault, tmp_path / "fresh")
    finally:
        rt.close()


def test_a_one_shot_context_given_paths_still_syncs_everything(
    example_vault: Path, tmp_path: Path
) -> None:
    ctx: ToolContext = open_context(example_vault, tmp_path / "cli" / "index.db")
    try:
        ctx.fresh()
        write(example_vault, "Made Elsewhere.md", "# Made elsewhere\n")
        write(example_vault, "Inbox.md", "# Inbox\nrewritten\n")
        ctx.fresh(force=True, paths=["Inbox.md"])  # no watcher: the whole vault, as before
        assert "Made Elsewhere.md" in all_paths(ctx.conn)
        assert dump(ctx.conn) == _rebuild(example_vault, tmp_path / "fresh")
    finally:
        ctx.conn.close()
        if ctx.journal is not None:
            ctx.journal.close()
