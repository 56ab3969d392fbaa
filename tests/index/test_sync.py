"""Incremental sync: what is re-parsed, bad input, and equality with a rebuild."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.index.helpers import dump, write
from vaultpilot.index.db import connect
from vaultpilot.index.queries import backlinks, outgoing_links, unresolved_links
from vaultpilot.index.sync import _reresolve, sync_vault
from vaultpilot.vault.resolve import LinkResolver, file_key


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "A.md", "---\ntags: [alpha]\n---\n# A\nSee [[B]] and [[Sub/C|see C]].\n")
    write(root, "B.md", "# B\nBack to [[A#A]] and [[Missing]].\n")
    write(root, "Sub/C.md", "C links [[B]] ![[pic.png]]\n")
    write(root, "pic.png", b"\x89PNG\r\n\x1a\n")
    write(root, ".obsidian/app.json", "{}")
    return root


def _rebuild(root: Path, tmp: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(tmp / "fresh" / "index.db")
    sync_vault(conn, root, workers=1)
    out = dump(conn)
    conn.close()
    return out


def test_first_sync_indexes_notes_and_attachments(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    report = sync_vault(conn, vault, counts=True)
    assert (report.notes, report.attachments, report.parsed) == (3, 1, 3)
    assert report.unresolved_links == 1
    assert [r.source for r in backlinks(conn, "B.md")] == ["A.md", "Sub/C.md"]
    assert [r.target for r in outgoing_links(conn, "Sub/C.md")] == ["B.md", "pic.png"]
    assert [(u.source, u.target_text) for u in unresolved_links(conn)] == [("B.md", "Missing")]
    assert not list(vault.glob("**/*.db")), "nothing may be written inside the vault"


def test_no_change_parses_nothing(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    report = sync_vault(conn, vault, counts=True)
    assert (report.parsed, report.added, report.deleted) == (0, 0, 0)


@pytest.mark.parametrize("recorded", ["1", None])  # older rules; built before versioning
def test_an_index_read_by_other_parse_rules_is_rebuilt(
    vault: Path, tmp_path: Path, recorded: str | None
) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault)
    expected = dump(conn)
    # What older rules found and today's do not (a tag they counted), as they left it.
    conn.execute(
        "INSERT INTO tags (file_id, tag, tag_lower, line, source) "
        "SELECT id, 'stale', 'stale', 1, 'inline' FROM files WHERE path = 'B.md'"
    )
    if recorded is None:
        conn.execute("DELETE FROM index_meta")
    else:
        conn.execute("UPDATE index_meta SET value = ? WHERE key = 'parse_rules'", (recorded,))
    conn.commit()
    report = sync_vault(conn, vault)
    assert report.parsed == 3
    assert dump(conn) == expected == _rebuild(vault, tmp_path)
    again = sync_vault(conn, vault)  # the rules are recorded: the next sync trusts the index
    assert again.parsed == 0


def test_touched_but_identical_note_is_not_reparsed(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    write(vault, "A.md", (vault / "A.md").read_text(encoding="utf-8"))
    report = sync_vault(conn, vault, counts=True)
    assert (report.parsed, report.unchanged_content) == (0, 1)
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_adding_the_missing_note_resolves_old_links(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    write(vault, "Later/Missing.md", "now here")
    report = sync_vault(conn, vault, counts=True)
    assert report.parsed == 1 and report.unresolved_links == 0
    assert [r.source for r in backlinks(conn, "Later/Missing.md")] == ["B.md"]
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_same_folder_note_takes_over_resolution(vault: Path, tmp_path: Path) -> None:
    write(vault, "Deep/Er/X.md", "the only X so far")
    write(vault, "Sub/D.md", "[[X]] and [[B]]")
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    assert [r.target for r in outgoing_links(conn, "Sub/D.md")] == ["Deep/Er/X.md", "B.md"]
    write(vault, "Sub/X.md", "a second X, next to D")
    write(vault, "Sub/B.md", "a second B: the exact vault path B.md still wins")
    sync_vault(conn, vault, counts=True)
    assert [r.target for r in outgoing_links(conn, "Sub/D.md")] == ["Sub/X.md", "B.md"]
    assert dump(conn) == _rebuild(vault, tmp_path)
    (vault / "Sub/X.md").unlink()
    sync_vault(conn, vault, counts=True)
    assert outgoing_links(conn, "Sub/D.md")[0].target == "Deep/Er/X.md"
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_delete_and_rename(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    (vault / "B.md").rename(vault / "Sub" / "B2.md")
    (vault / "pic.png").unlink()
    report = sync_vault(conn, vault, counts=True)
    assert (report.added, report.deleted) == (1, 2)
    assert [r.target for r in outgoing_links(conn, "A.md")] == [None, "Sub/C.md"]
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_rebuild_flag_equals_incremental(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    before = dump(conn)
    sync_vault(conn, vault, rebuild=True)
    assert dump(conn) == before


def test_parallel_and_serial_parsing_agree(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for i in range(450):
        write(
            root, f"F{i % 7}/N{i}.md", f"# N{i}\n[[N{(i * 7) % 450}]] #t{i % 5} [[Nope{i % 3}]]\n"
        )
    a = connect(tmp_path / "a" / "index.db")
    b = connect(tmp_path / "b" / "index.db")
    sync_vault(a, root, workers=2)
    sync_vault(b, root, workers=1)
    assert dump(a) == dump(b)


# ---- bad input: each is reported and skipped, and the sync completes -------------------------


def test_bad_files_are_reported_and_skipped(vault: Path, tmp_path: Path) -> None:
    write(vault, "latin1.md", "caf\xe9 [[A]]".encode("latin-1"))
    write(vault, "binary.md", b"\x00\x01\x02PNG\x00")
    write(vault, "empty.md", "")
    write(vault, "badyaml.md", "---\ntitle: 'unclosed\n---\nBody links [[A]] #still\n")
    secret = write(vault, "secret.md", "hidden")
    os.chmod(secret, 0)
    conn = connect(tmp_path / "db" / "index.db")
    try:
        report = sync_vault(conn, vault, counts=True)
    finally:
        os.chmod(secret, 0o644)
    skipped = dict(report.skipped)
    assert "not valid UTF-8" in skipped["latin1.md"]
    assert "NUL" in skipped["binary.md"]
    if os.geteuid() != 0:  # root reads anything
        assert "could not be read" in skipped["secret.md"]
    assert "empty.md" not in skipped
    row = conn.execute("SELECT frontmatter_error FROM files WHERE path = 'badyaml.md'").fetchone()
    assert row[0].startswith("invalid YAML frontmatter")
    # The note with broken YAML is still indexed: its body, links and tags.
    assert [r.source for r in backlinks(conn, "A.md")].count("badyaml.md") == 1
    tags = [
        r[0]
        for r in conn.execute(
            "SELECT tag FROM tags t JOIN files f ON f.id = t.file_id WHERE f.path = 'badyaml.md'"
        )
    ]
    assert tags == ["still"]


def test_huge_note_is_skipped_not_fatal(vault: Path, tmp_path: Path) -> None:
    write(vault, "huge.md", "word " * (2 * 1024 * 1024))  # 10 MB
    conn = connect(tmp_path / "db" / "index.db")
    report = sync_vault(conn, vault, counts=True)
    assert "larger than" in dict(report.skipped)["huge.md"]
    assert report.notes == 4


def test_file_vanishing_mid_sync(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault, counts=True)
    write(vault, "Missing.md", "appears, then vanishes")
    for i in range(40):  # enough notes that they are read one by one, not all up front
        write(vault, f"Bulk/N{i}.md", f"[[Z]] {i}")
    write(vault, "Z.md", "[[B]]")
    calls: list[int] = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if done == 1:
            (vault / "Z.md").unlink()

    report = sync_vault(conn, vault, progress=progress, workers=1, counts=True)
    assert ("Z.md", "vanished during sync") in report.skipped
    assert conn.execute("SELECT COUNT(*) FROM files WHERE path = 'Z.md'").fetchone()[0] == 0
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_editing_a_linked_note_keeps_links_to_it(vault: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, vault)
    write(vault, "B.md", "# B\nrewritten, still the target of A's link\n")
    sync_vault(conn, vault)
    assert [r.source for r in backlinks(conn, "B.md")] == ["A.md", "Sub/C.md"]
    assert dump(conn) == _rebuild(vault, tmp_path)


def test_bulk_sync_rebuilds_indexes_and_equals_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "bulk"
    for i in range(1100):
        write(root, f"F{i % 9}/N{i}.md", f"# N{i}\n[[N{(i * 7) % 1100}]] #t{i % 5}\n")
    conn = connect(tmp_path / "db" / "index.db")
    indexes = sorted(
        r[0]
        for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        )
    )
    sync_vault(conn, root)  # bulk: every note is new
    for i in range(1100):  # bulk again: every note changed, and links to them must survive
        write(root, f"F{i % 9}/N{i}.md", f"# N{i} v2\n[[N{(i * 3) % 1100}]] #u{i % 4}\n")
    sync_vault(conn, root)
    assert (
        sorted(
            r[0]
            for r in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
            )
        )
        == indexes
    )
    assert [r.source for r in backlinks(conn, "F0/N0.md")] == ["F0/N0.md"]
    assert dump(conn) == _rebuild(root, tmp_path)
    # The bulk write's larger FTS buffer is not left behind in the tables' stored settings.
    for table in ("notes_fts_config", "cjk_fts_config"):
        size = conn.execute(f"SELECT v FROM {table} WHERE k = 'hashsize'").fetchone()
        assert size is None or size[0] == 1024 * 1024


@pytest.mark.parametrize("workers", [1, 2])
def test_full_build_resolves_links_once_and_right(tmp_path: Path, workers: int) -> None:
    """A full build keeps the targets its parse resolved (it skips the re-resolve pass): they
    must equal what resolving every stored link again against the finished index gives."""
    root = tmp_path / "v"
    for i in range(420):  # above the one-process threshold, so workers=2 parses in workers
        folder = f"F{i % 3}"
        write(
            root,
            f"{folder}/N{i}.md",
            f"[[N{(i * 5) % 420}]] [[Same]] [[F1/Same]] [rel](../F2/N{i % 7}.md)"
            f" [up](./N{i}.md) ![[pic.png]] [[pic]] [[Nope{i % 4}]] [[#Top]] [[|x]]\n",
        )
    for folder in ("F0", "F1", "F2"):
        write(root, f"{folder}/Same.md", "same name in three folders")
    write(root, "pic.png", b"\x89PNG\r\n\x1a\n")
    conn = connect(tmp_path / "db" / "index.db")
    sync_vault(conn, root, rebuild=True, workers=workers)
    built = dump(conn)
    resolved = conn.execute("SELECT COUNT(*) FROM links WHERE target_id IS NOT NULL").fetchone()
    assert resolved[0] > 420 * 5
    paths = [p for (p,) in conn.execute("SELECT path FROM files")]
    ids = dict(conn.execute("SELECT path, id FROM files"))
    conn.execute("BEGIN")
    _reresolve(conn, {file_key(p) for p in paths}, LinkResolver(paths), ids)
    conn.execute("COMMIT")
    assert dump(conn) == built
    assert dump(conn) == _rebuild(root, tmp_path)


def test_first_build_is_consistent_and_restores_foreign_keys(tmp_path: Path) -> None:
    """A first build into an empty index skips the foreign-key lookups; what it writes must
    still pass SQLite's own check, also when a linked note vanishes during the build."""
    root = tmp_path / "first"
    for i in range(1100):
        write(root, f"F{i % 9}/N{i}.md", f"[[N{(i * 7) % 1100}]] [[Gone]] ![[p.png]] #t{i % 5}\n")
    write(root, "Gone.md", "linked from every note, deleted while the build runs")
    write(root, "p.png", b"\x89PNG\r\n\x1a\n")
    conn = connect(tmp_path / "db" / "index.db")

    def progress(done: int, total: int) -> None:
        if done == 1:
            (root / "Gone.md").unlink()

    report = sync_vault(conn, root, workers=1, progress=progress)
    assert ("Gone.md", "vanished during sync") in report.skipped
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    unresolved = conn.execute(
        "SELECT COUNT(*) FROM links WHERE target_text = 'Gone' AND target_id IS NULL"
    ).fetchone()[0]
    assert unresolved == 1100
    assert dump(conn) == _rebuild(root, tmp_path)
