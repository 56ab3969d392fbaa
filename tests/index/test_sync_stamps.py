"""Folder stamps: a full sync compares file by file only the folders whose stamp changed, and
still always ends equal to a rebuild (in-place edits, old mtimes, folders moved in and out,
links, dot-folders, scoped syncs between full ones, interrupted syncs, a busy index)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.index.helpers import assert_equals_rebuild, dump, write
from tests.index.test_sync_property import body, path
from tests.index.vault_changes import apply_change, scratch_vault
from vaultpilot.index.db import connect
from vaultpilot.index.scan import scan_folders, scan_vault
from vaultpilot.index.stamps import StampUpdate, read_stamps, store_stamps
from vaultpilot.index.sync import sync_paths, sync_vault
from vaultpilot.index.writer import delete_files


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "A.md", "# A\nSee [[B]] and [[Sub/C]].\n")
    write(root, "B.md", "# B\nBack to [[A]] and [[Missing]].\n")
    write(root, "Sub/C.md", "C links [[B]] ![[pic.png]]\n")
    write(root, "Sub/Deep/D.md", "D links [[C]]\n")
    write(root, "pic.png", b"\x89PNG\r\n\x1a\n")
    write(root, ".obsidian/app.json", "{}")
    return root


@pytest.fixture
def conn(vault: Path, tmp_path: Path) -> sqlite3.Connection:
    c = connect(tmp_path / "db" / "index.db")
    sync_vault(c, vault, workers=1)
    return c


def compared(conn: sqlite3.Connection, root: Path) -> set[str]:
    """The folders a full sync would now compare file by file."""
    return set(scan_folders(root, read_stamps(conn)).views)


def set_mtime(path: Path, ns: int) -> None:
    os.utime(path, ns=(ns, ns))


def test_a_synced_vault_is_stamped_and_a_no_change_sync_compares_nothing(
    vault: Path, conn: sqlite3.Connection
) -> None:
    stamps = read_stamps(conn)
    assert set(stamps) == {"", "Sub", "Sub/Deep"}  # not .obsidian
    assert None not in stamps.values()
    assert compared(conn, vault) == set()
    report = sync_vault(conn, vault, workers=1)
    assert (report.parsed, report.added, report.deleted) == (0, 0, 0)
    assert read_stamps(conn) == stamps


def test_in_place_edit_of_the_same_size_is_found(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    note = vault / "Sub/C.md"
    old = note.stat()
    text = note.read_text(encoding="utf-8")
    with note.open("r+", encoding="utf-8") as fh:  # truncate + write, as Obsidian saves
        fh.truncate(0)
        fh.write(text.replace("links", "LINKS"))
    set_mtime(note, old.st_mtime_ns + 1)  # one nanosecond later, same size
    assert note.stat().st_size == old.st_size
    assert compared(conn, vault) == {"Sub"}
    assert sync_vault(conn, vault, workers=1).parsed == 1
    assert compared(conn, vault) == set()
    assert_equals_rebuild(conn, vault, tmp_path)


def test_a_note_given_an_older_mtime_is_found(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    note = vault / "Sub/Deep/D.md"
    old = note.stat()
    note.write_text("D links [[A]]\n", encoding="utf-8")
    set_mtime(note, old.st_mtime_ns - 10**12)  # touched back in time
    assert sync_vault(conn, vault, workers=1).parsed == 1
    assert_equals_rebuild(conn, vault, tmp_path)


@pytest.mark.parametrize("folder", ["", "Sub/", "Sub/Deep/"])
def test_add_delete_and_rename_in_a_folder(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path, folder: str
) -> None:
    write(vault, f"{folder}New.md", "new [[A]]")
    sync_vault(conn, vault, workers=1)
    (vault / f"{folder}New.md").rename(vault / f"{folder}Renamed.md")  # same mtime and size
    assert sync_vault(conn, vault, workers=1).added == 1
    assert compared(conn, vault) == set()
    (vault / f"{folder}Renamed.md").unlink()
    assert sync_vault(conn, vault, workers=1).deleted == 1
    assert_equals_rebuild(conn, vault, tmp_path)


def test_a_folder_moved_out_and_back_in(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    shutil.move(vault / "Sub", outside)
    report = sync_vault(conn, vault, workers=1)
    assert report.deleted == 2  # C.md and Deep/D.md, and the two folders' stamps with them
    assert set(read_stamps(conn)) == {""}
    shutil.move(outside, vault / "Moved")
    assert sync_vault(conn, vault, workers=1).added == 2
    assert set(read_stamps(conn)) == {"", "Moved", "Moved/Deep"}
    (vault / "Moved").rename(vault / ".hidden")  # into a dot-folder: out of the vault
    assert sync_vault(conn, vault, workers=1).deleted == 2
    assert_equals_rebuild(conn, vault, tmp_path)


def test_dot_folders_and_dot_files_do_not_unstamp(vault: Path, conn: sqlite3.Connection) -> None:
    write(vault, ".obsidian/workspace.json", "{}")
    write(vault, "Sub/.DS_Store", "x")
    assert compared(conn, vault) == set()
    assert sync_vault(conn, vault, workers=1).added == 0


def test_temp_file_leftovers_are_found_in_stamped_folders(
    vault: Path, conn: sqlite3.Connection
) -> None:
    write(vault, "Sub/.vaultpilot-0123456789ab.tmp", "half a write")
    leftovers: list[str] = []
    sync_vault(conn, vault, workers=1, temp_files=leftovers)
    assert leftovers == ["Sub/.vaultpilot-0123456789ab.tmp"]
    assert compared(conn, vault) == set()


def test_a_folder_holding_links_is_always_compared(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    (vault / "Links").mkdir()
    (vault / "Links/to-c.md").symlink_to(vault / "Sub/C.md")
    (vault / "Links/to-sub").symlink_to(vault / "Sub", target_is_directory=True)
    write(tmp_path, "secret.md", "outside")
    (vault / "Links/out.md").symlink_to(tmp_path / "secret.md")
    sync_vault(conn, vault, workers=1)
    assert read_stamps(conn)["Links"] is None
    assert compared(conn, vault) == {"Links"}
    # The target is edited: the link's folder did not change, the link's own lstat neither.
    write(vault, "Sub/C.md", "C now links [[A]]")
    assert sync_vault(conn, vault, workers=1).parsed == 2  # Sub/C.md and Links/to-c.md
    assert "Links/out.md" not in scan_vault(vault)
    assert_equals_rebuild(conn, vault, tmp_path)


def test_a_rebuild_for_new_parse_rules_clears_the_stamps(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    conn.execute("UPDATE index_meta SET value = 'older' WHERE key = 'parse_rules'")
    conn.execute("UPDATE folder_stamps SET stamp = 'from before'")
    write(vault, "Sub/Deep/E.md", "E")
    report = sync_vault(conn, vault, workers=1)
    assert report.parsed == 5  # every note read again, not just the new one
    assert "from before" not in read_stamps(conn).values()
    assert compared(conn, vault) == set()
    assert_equals_rebuild(conn, vault, tmp_path)


def test_any_write_to_a_folders_rows_clears_its_stamp(conn: sqlite3.Connection) -> None:
    before = read_stamps(conn)
    conn.execute("UPDATE files SET mtime_ns = mtime_ns + 1 WHERE path = 'Sub/C.md'")
    conn.execute("DELETE FROM files WHERE path = 'Sub/Deep/D.md'")
    conn.execute(
        "INSERT INTO files (path, path_lower, folder, title, is_note, mtime_ns, size)"
        " VALUES ('New/x.png', 'new/x.png', 'New', 'x.png', 0, 1, 1)"
    )
    after = read_stamps(conn)
    assert after == {**before, "Sub": None, "Sub/Deep": None, "New": None}
    conn.execute("UPDATE files SET word_count = 7 WHERE path = 'A.md'")  # not what stamps cover
    assert read_stamps(conn)[""] == before[""]


def test_a_scoped_sync_between_full_syncs_cannot_hide_a_change(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    # The disk goes back to exactly the stamped state after a scoped sync indexed another one:
    # the stamp matches the disk again, but not the rows, so it must not be trusted.
    note = vault / "Sub/C.md"
    first, st = note.read_bytes(), note.stat()
    note.write_bytes(first.replace(b"links", b"LINKS"))
    sync_paths(conn, vault, ["Sub/C.md"], workers=1)
    assert read_stamps(conn)["Sub"] is None
    note.write_bytes(first)
    set_mtime(note, st.st_mtime_ns)
    assert sync_vault(conn, vault, workers=1).parsed == 1
    assert_equals_rebuild(conn, vault, tmp_path)


def test_an_interrupted_sync_leaves_stamps_that_still_find_the_change(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    for i in range(40):  # enough notes that progress is reported note by note
        write(vault, f"Bulk/N{i}.md", f"[[A]] {i}")

    def stop(done: int, total: int) -> None:
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync_vault(conn, vault, workers=1, progress=stop)
    assert "Bulk" not in read_stamps(conn)  # rolled back with the rows
    assert sync_vault(conn, vault, workers=1).added == 40
    assert_equals_rebuild(conn, vault, tmp_path)


def test_a_file_changed_during_the_sync_leaves_its_folder_unstamped(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    for i in range(40):
        write(vault, f"Bulk/N{i}.md", f"[[A]] {i}")

    def edit(done: int, total: int) -> None:
        if done == 1:  # after the scan, before N39 is read
            write(vault, "Bulk/N39.md", "changed after the scan")

    sync_vault(conn, vault, workers=1, progress=edit)
    assert read_stamps(conn)["Bulk"] is None
    assert sync_vault(conn, vault, workers=1).parsed == 0  # the row already has what it read
    assert read_stamps(conn)["Bulk"] is not None
    assert_equals_rebuild(conn, vault, tmp_path)


def test_a_folder_read_after_the_scan_is_not_stamped(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    # Another connection's sync changed the stored stamps between this sync's scan and its plan,
    # and the folder was moved away in between: its files read then (none) are not what the
    # scanned stamp describes, so the stamp must not be stored for the (now empty) rows.
    conn.execute("UPDATE folder_stamps SET stamp = NULL WHERE folder = 'Sub/Deep'")
    scan = scan_folders(vault, {**read_stamps(conn), "Sub/Deep": "stale"})
    assert "Sub/Deep" in scan.views
    kept = scan.views.pop("Sub/Deep")  # as if the scan had trusted it
    shutil.move(vault / "Sub/Deep", tmp_path / "away")
    assert scan.view("Sub/Deep") == {}
    conn.execute("BEGIN IMMEDIATE")
    gone = [i for (i,) in conn.execute("SELECT id FROM files WHERE folder = 'Sub/Deep'")]
    delete_files(conn, gone)  # what that plan writes: the folder's files are gone
    store_stamps(conn, StampUpdate(scan, ("Sub/Deep",), ()))
    conn.execute("COMMIT")
    assert read_stamps(conn)["Sub/Deep"] is None
    shutil.move(tmp_path / "away", vault / "Sub/Deep")  # back, exactly as scanned
    assert set(scan_folders(vault, read_stamps(conn)).views["Sub/Deep"]) == set(kept)
    assert sync_vault(conn, vault, workers=1).added == 1
    assert_equals_rebuild(conn, vault, tmp_path)


def test_stamps_wait_for_no_one(vault: Path, conn: sqlite3.Connection, tmp_path: Path) -> None:
    conn.execute("UPDATE folder_stamps SET stamp = NULL")  # as after a scoped sync
    other = connect(tmp_path / "db" / "index.db")
    other.execute("BEGIN IMMEDIATE")  # a long write elsewhere
    try:
        started = time.perf_counter()
        report = sync_vault(conn, vault, workers=1)
        assert time.perf_counter() - started < 5  # not the 30 s busy timeout
        assert report.parsed == 0
        assert set(read_stamps(conn).values()) == {None}
    finally:
        other.execute("ROLLBACK")
        other.close()
    sync_vault(conn, vault, workers=1)
    assert None not in read_stamps(conn).values()


def test_a_read_only_connection_syncs_with_nothing_to_write(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    conn.execute("UPDATE folder_stamps SET stamp = NULL")
    reader = connect(tmp_path / "db" / "index.db", read_only=True)
    try:
        assert sync_vault(reader, vault, workers=1).parsed == 0
    finally:
        reader.close()
    assert set(read_stamps(conn).values()) == {None}


def test_an_index_from_before_stamps_gets_them(vault: Path, tmp_path: Path) -> None:
    db = tmp_path / "old" / "index.db"
    old = connect(db)
    sync_vault(old, vault, workers=1)
    for trigger in ("files_stamp_added", "files_stamp_removed", "files_stamp_changed"):
        old.execute(f"DROP TRIGGER {trigger}")
    old.execute("DROP TABLE folder_stamps")
    old.execute("DELETE FROM _migrations WHERE name = 'add_folder_stamps'")
    old.close()
    shutil.rmtree(vault / "Sub/Deep")  # gone while no stamp recorded it
    conn = connect(db)
    assert read_stamps(conn) == {"": None, "Sub": None, "Sub/Deep": None}
    assert sync_vault(conn, vault, workers=1).deleted == 1
    assert set(read_stamps(conn)) == {"", "Sub"}
    assert None not in read_stamps(conn).values()
    assert_equals_rebuild(conn, vault, tmp_path)


def test_stamps_equal_for_a_rebuilt_index(
    vault: Path, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    fresh = connect(tmp_path / "fresh2" / "index.db")
    sync_vault(fresh, vault, workers=1)
    assert read_stamps(fresh) == read_stamps(conn)
    assert dump(fresh) == dump(conn)
    fresh.close()


# Property: full syncs, scoped syncs of what changed, and files put back exactly as they were at
# the last full sync (content and mtime: the disk returns to a stamped state, while the rows may
# hold what a scoped sync indexed since), in any order, end equal to a rebuild.
FOLDER = st.sampled_from(["One", "One/Two", "Three"])
few = st.builds(lambda f, n: f"{f}{n}.md", st.sampled_from(["", "One/"]), st.sampled_from("ab"))
op = st.one_of(
    st.tuples(st.just("write"), few, body),
    st.tuples(st.just("write"), path, body),
    st.tuples(st.just("rename"), path, path),
    st.tuples(st.just("delete"), few, st.just("")),
    st.tuples(st.just("move_folder"), FOLDER, FOLDER),
    st.tuples(st.just("put_back"), st.just(""), st.just("")),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
    st.tuples(st.just("sync_paths"), st.just(""), st.just("")),
)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*.md")
    }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=16))
@example(
    [
        ("write", "One/a.md", "[[b]]"),
        ("sync", "", ""),
        ("write", "One/a.md", "[[c]]"),
        ("sync_paths", "", ""),
        ("put_back", "", ""),
    ]
)
def test_any_mix_of_syncs_equals_rebuild(ops: list[tuple[str, str, str]]) -> None:
    with scratch_vault() as (tmp, root, conn):
        kept: dict[str, tuple[bytes, int]] = {}
        touched: list[str] = []
        for kind, a, b in ops:
            if kind == "sync":
                sync_vault(conn, root, workers=1)
                kept = _snapshot(root)
            elif kind == "sync_paths":
                sync_paths(conn, root, touched, workers=1)
                touched = []
            else:
                touched += apply_change(root, kind, a, b, kept=kept)
        sync_vault(conn, root, workers=1)
        assert scan_folders(root, read_stamps(conn)).views == {}
        assert_equals_rebuild(conn, root, tmp)


def test_large_and_small_changes_across_many_files(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    for i in range(600):
        write(root, f"A/a{i}.md", f"[[b{i}]] [[c{i % 10}]]")
        write(root, f"B/b{i}.md", f"[[a{i}]] #t{i % 7}")
    for i in range(10):
        write(root, f"C/c{i}.md", f"[[a{i}]]")
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, root, workers=2)
    # 1,200 of 1,210 files: one plan of the whole vault.
    for i in range(600):
        write(root, f"A/a{i}.md", f"[[b{i + 1}]] [[c{i % 9}]]")
        write(root, f"B/b{i}.md", f"[[a{i + 1}]] #u{i % 5}")
    (root / "C/c3.md").rename(root / "C/c3 moved.md")
    report = sync_vault(conn, root, workers=2)
    assert (report.parsed, report.added, report.deleted) == (1201, 1, 1)  # the rename: 1 + 1
    assert compared(conn, root) == set()
    # 600 files in one folder: compared on their own, the rest as indexed.
    for i in range(600):
        write(root, f"A/a{i}.md", f"[[c{i % 10}]] [[c3 moved]]")
    (root / "A/a5.md").unlink()
    report = sync_vault(conn, root, workers=2)
    assert (report.parsed, report.deleted) == (599, 1)
    assert_equals_rebuild(conn, root, tmp_path)
