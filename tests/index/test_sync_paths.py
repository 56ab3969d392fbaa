"""Property: syncing only the paths that changed (what a file watcher reports) gives the same
index as a full rebuild, for creates, edits, renames, deletes and whole folders moved in and out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.index.helpers import assert_equals_rebuild, write
from tests.index.test_sync_property import body, path
from tests.index.vault_changes import apply_change, scratch_vault
from vaultpilot.index.db import connect
from vaultpilot.index.sync import sync_paths, sync_vault

FOLDER = st.sampled_from(["One", "One/Two", "Three", "Four"])
op = st.one_of(
    st.tuples(st.just("write"), path, body),
    st.tuples(st.just("rename"), path, path),
    st.tuples(st.just("delete"), path, st.just("")),
    st.tuples(st.just("move_folder"), FOLDER, FOLDER),
    st.tuples(st.just("hide_folder"), FOLDER, st.just("")),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=14))
def test_sync_paths_equals_rebuild(ops: list[tuple[str, str, str]]) -> None:
    with scratch_vault() as (tmp, root, conn):
        _replay(conn, root, tmp, ops)


def test_sync_paths_ignores_dot_folders_and_temp_files(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "a.md", "[[b]]")
    conn = connect(tmp_path / "index.db")
    sync_vault(conn, root, workers=1)
    write(root, ".obsidian/b.md", "hidden")
    write(root, ".vaultpilot-x1.tmp", "partial")
    write(root, "b.md", "# B")
    report = sync_paths(conn, root, [".obsidian/b.md", ".vaultpilot-x1.tmp", "b.md"])
    assert report.added == 1
    paths = sorted(p for (p,) in conn.execute("SELECT path FROM files"))
    assert paths == ["a.md", "b.md"]
    target = conn.execute("SELECT f.path FROM links l JOIN files f ON f.id = l.target_id")
    assert target.fetchall() == [("b.md",)]  # the link in a.md now resolves to the new note


# Names SQL cannot fold as Python does (NFC and NFD accents, the Kelvin sign), LIKE's wildcards
# ('_', '%'), and attachments: the scoped plan of a few paths asks the index for the files a
# link can name, so these must come out exactly as a rebuild.
ODD_NAMES = ["Caf\u00e9", "Cafe\u0301", "\u212a", "k", "a_b", "a%b", "axb"]
ODD_FILES = [f"{n}.md" for n in ODD_NAMES] + ["img.png", "IMG.png", "a_b.png"]
odd_path = st.builds(
    lambda f, n: f"{f}{n}", st.sampled_from(["", "One/", "One/Two/"]), st.sampled_from(ODD_FILES)
)


def _replay(
    conn: sqlite3.Connection, root: Path, tmp: Path, ops: list[tuple[str, str, str]]
) -> None:
    """Make the changes to the indexed ``root`` (syncing only the reported paths at each "sync"
    and at the end) and compare with a rebuild."""
    touched: list[str] = []
    for kind, a, b in ops:
        if kind == "sync":
            sync_paths(conn, root, touched, workers=1)
            touched = []
        else:
            touched += apply_change(root, kind, a, b)
    sync_paths(conn, root, touched, workers=1)
    assert_equals_rebuild(conn, root, tmp)


odd_body = st.builds(
    lambda names, embed: " ".join(f"[[{n}]]" for n in names) + f" ![[{embed}]]\n",
    st.lists(st.sampled_from(ODD_NAMES), max_size=3),
    st.sampled_from(["img.png", "IMG.png", "a_b.png", "caf\u00e9"]),
)
odd_op = st.one_of(
    st.tuples(st.just("write"), odd_path, odd_body),
    st.tuples(st.just("rename"), odd_path, odd_path),
    st.tuples(st.just("delete"), odd_path, st.just("")),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(odd_op, min_size=1, max_size=12))
def test_sync_paths_of_odd_names_and_attachments_equals_rebuild(
    ops: list[tuple[str, str, str]],
) -> None:
    hub = " ".join(f"[[{n}]]" for n in ODD_NAMES) + " ![[img.png]]\n"
    with scratch_vault(lambda root: write(root, "Hub.md", hub)) as (tmp, root, conn):
        _replay(conn, root, tmp, ops)
