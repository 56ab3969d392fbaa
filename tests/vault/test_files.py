"""files.py: path confinement, atomic writes that keep the on-disk format, create/move without
overwriting, trash (rule 20) and rename without link rewriting (rule 19)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.vault.helpers import write
from vaultpilot.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
    StaleVersionError,
    UnreadableNoteError,
)
from vaultpilot.vault.files import (
    TextFormat,
    confine,
    content_version,
    create_folder,
    create_note,
    decode_note,
    encode_note,
    move_path,
    move_to_trash,
    normalize_rel_path,
    read_note,
    replace_note,
)

BOM = b"\xef\xbb\xbf"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    return vault


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_bytes(b"secret\n")
    return folder


def _symlink(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except (OSError, NotImplementedError):
        pytest.skip("symbolic links are not available here")


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under root (without following links), with file bytes."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            is_file = path.is_file() and not path.is_symlink()
            out[rel] = path.read_bytes() if is_file else None
    return out


# --- Confinement ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "says"),
    [
        ("../x.md", "contains '..'"),
        ("a/../../x.md", "contains '..'"),
        ("a/..", "contains '..'"),
        ("/etc/passwd", "is absolute"),
        ("C:/Users/x.md", "is absolute"),
        ("c:x.md", "is absolute"),
        ("C:", "is absolute"),
        ("a\x00b.md", "NUL"),
        ("a\\b.md", "uses '\\'"),
        ("..\\x.md", "uses '\\'"),
    ],
)
def test_confine_refuses_paths_leaving_the_vault(root: Path, rel: str, says: str) -> None:
    with pytest.raises(PathRefusedError) as err:
        confine(root, rel)
    assert says in str(err.value)


def test_confine_refuses_non_strings(root: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        confine(root, 42)  # type: ignore[arg-type]


def test_confine_normalises_harmless_forms(root: Path) -> None:
    assert normalize_rel_path("./a//b/./c.md") == "a/b/c.md"
    assert normalize_rel_path("a/b/") == "a/b"
    assert confine(root, "./a//b/c.md") == root.resolve() / "a" / "b" / "c.md"
    assert confine(root, "") == root.resolve()


def test_file_symlink_escaping_the_vault_is_refused(root: Path, outside: Path) -> None:
    _symlink(root / "link.md", outside / "secret.md")
    for call in (
        lambda: confine(root, "link.md"),
        lambda: read_note(root, "link.md"),
        lambda: replace_note(root, "link.md", "pwned\n", TextFormat()),
        lambda: move_to_trash(root, "link.md"),
    ):
        with pytest.raises(PathRefusedError, match="leads outside the vault"):
            call()
    assert (outside / "secret.md").read_bytes() == b"secret\n"


def test_folder_symlink_escaping_the_vault_is_refused(root: Path, outside: Path) -> None:
    _symlink(root / "ext", outside)
    with pytest.raises(PathRefusedError, match="leads outside the vault"):
        read_note(root, "ext/secret.md")
    with pytest.raises(PathRefusedError, match="leads outside the vault"):
        create_note(root, "ext/new.md", "x\n")
    with pytest.raises(PathRefusedError, match="leads outside the vault"):
        create_note(root, "ext/sub/new.md", "x\n")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_dangling_symlink_to_outside_is_refused(root: Path, outside: Path) -> None:
    _symlink(root / "dangling.md", outside / "not-yet.md")
    with pytest.raises(PathRefusedError):
        create_note(root, "dangling.md", "x\n")
    assert not (outside / "not-yet.md").exists()


def test_symlink_inside_the_vault_is_followed_for_reading(root: Path) -> None:
    write(root, "Real.md", "real\n")
    _symlink(root / "Alias.md", root / "Real.md")
    assert read_note(root, "Alias.md").text == "real\n"


@pytest.mark.parametrize(
    "rel",
    [".obsidian/app.json", ".git/config", ".trash/x.md", ".Obsidian/x.md", "./.git/HEAD"],
)
def test_writes_into_protected_folders_are_refused(root: Path, rel: str) -> None:
    write(root, "Note.md", "n\n")
    before = _tree(root)
    for call in (
        lambda: create_note(root, rel, "x\n"),
        lambda: replace_note(root, rel, "x\n", TextFormat()),
        lambda: move_path(root, "Note.md", rel),
        lambda: create_folder(root, rel),
        lambda: move_to_trash(root, rel),
    ):
        with pytest.raises(PathRefusedError, match="note operations never change"):
            call()
    assert _tree(root) == before


def test_protected_folders_can_be_read(root: Path) -> None:
    write(root, ".obsidian/app.json", "{}")
    assert confine(root, ".obsidian/app.json") == root.resolve() / ".obsidian" / "app.json"


def test_symlink_into_a_protected_folder_is_refused_for_writes(root: Path) -> None:
    write(root, ".obsidian/app.json", "{}")
    _symlink(root / "cfg", root / ".obsidian")
    _symlink(root / "app-link.json", root / ".obsidian" / "app.json")
    with pytest.raises(PathRefusedError, match=r"leads into \.obsidian/"):
        create_note(root, "cfg/new.md", "x\n")
    with pytest.raises(PathRefusedError, match=r"leads into \.obsidian/"):
        replace_note(root, "app-link.json", "{}", TextFormat())
    assert sorted(p.name for p in (root / ".obsidian").iterdir()) == ["app.json"]
    with pytest.raises(PathRefusedError, match=r"is inside \.obsidian/ \(through a symbolic link"):
        read_note(root, "cfg/app.json")


def test_trash_symlinked_outside_is_refused(root: Path, outside: Path) -> None:
    write(root, "Note.md", "n\n")
    _symlink(root / ".trash", outside)
    with pytest.raises(PathRefusedError, match="leads outside the vault"):
        move_to_trash(root, "Note.md")
    assert (root / "Note.md").read_bytes() == b"n\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


# --- Reading and atomic writing -------------------------------------------------------------------


def test_crlf_and_bom_survive_a_rewrite_byte_for_byte(root: Path) -> None:
    original = BOM + b"---\r\ntitle: x\r\n---\r\nline one\r\nline two\r\n"
    write(root, "Win.md", original)
    note = read_note(root, "Win.md")
    assert note.text == "---\ntitle: x\n---\nline one\nline two\n"
    assert note.fmt == TextFormat(newline="\r\n", bom=True)
    assert note.version == content_version(original)

    replace_note(root, "Win.md", note.text, note.fmt, expected_version=note.version)
    assert (root / "Win.md").read_bytes() == original

    result = replace_note(root, "Win.md", note.text + "line three\n", note.fmt)
    expected = original + b"line three\r\n"
    assert (root / "Win.md").read_bytes() == expected
    assert result.version == content_version(expected)
    assert result.size == len(expected)


def test_lf_without_bom_stays_lf(root: Path) -> None:
    write(root, "Unix.md", b"a\nb\n")
    note = read_note(root, "Unix.md")
    assert note.fmt == TextFormat(newline="\n", bom=False)
    replace_note(root, "Unix.md", "a\nb\nc\n", note.fmt)
    assert (root / "Unix.md").read_bytes() == b"a\nb\nc\n"


def test_encode_decode_round_trip() -> None:
    data = BOM + "é\r\nü\r\n".encode()
    text, fmt = decode_note(data, "x.md")
    assert (text, fmt) == ("é\nü\n", TextFormat("\r\n", True))
    assert encode_note(text, fmt) == data
    assert encode_note("a\r\nb\n", TextFormat("\r\n")) == b"a\r\nb\r\n"


def test_write_leaves_no_temp_files_and_keeps_permissions(root: Path) -> None:
    path = write(root, "Note.md", "old\n")
    path.chmod(0o600)
    replace_note(root, "Note.md", "new\n", TextFormat())
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_bytes() == b"new\n"


def test_stale_expected_version_is_refused_and_file_untouched(root: Path) -> None:
    write(root, "Note.md", "v1\n")
    seen = read_note(root, "Note.md")
    write(root, "Note.md", "v2 by someone else\n")
    with pytest.raises(StaleVersionError, match="changed since you read it"):
        replace_note(root, "Note.md", "my edit\n", seen.fmt, expected_version=seen.version)
    assert (root / "Note.md").read_bytes() == b"v2 by someone else\n"
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]


def test_replace_missing_note_is_not_found(root: Path) -> None:
    with pytest.raises(NotFoundError):
        replace_note(root, "Nope.md", "x\n", TextFormat())
    assert list(root.iterdir()) == []


def test_read_errors(root: Path) -> None:
    write(root, "bin.md", b"abc\x00def")
    write(root, "latin1.md", "caf\xe9".encode("latin-1"))
    (root / "Folder").mkdir()
    with pytest.raises(UnreadableNoteError, match="NUL bytes"):
        read_note(root, "bin.md")
    with pytest.raises(UnreadableNoteError, match="not valid UTF-8"):
        read_note(root, "latin1.md")
    with pytest.raises(InvalidArgumentError, match="is a folder"):
        read_note(root, "Folder")
    with pytest.raises(NotFoundError):
        read_note(root, "Missing.md")


# --- Create ---------------------------------------------------------------------------------------


def test_create_refuses_to_overwrite(root: Path) -> None:
    write(root, "Note.md", "precious\n")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        create_note(root, "Note.md", "replacement\n")
    assert (root / "Note.md").read_bytes() == b"precious\n"
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]


def test_create_makes_folders_and_keeps_format(root: Path) -> None:
    result = create_note(root, "A/B/New.md", "x\ny\n", fmt=TextFormat("\r\n", True))
    assert (root / "A/B/New.md").read_bytes() == BOM + b"x\r\ny\r\n"
    assert result.version == content_version(BOM + b"x\r\ny\r\n")
    assert sorted(p.name for p in (root / "A/B").iterdir()) == ["New.md"]


def test_create_without_folders_refuses_missing_parent(root: Path) -> None:
    with pytest.raises(NotFoundError, match="doesn't exist"):
        create_note(root, "Missing/New.md", "x\n", create_folders=False)
    assert list(root.iterdir()) == []


def test_create_folder(root: Path) -> None:
    assert create_folder(root, "P/Q") is True
    assert create_folder(root, "P/Q") is False
    assert (root / "P" / "Q").is_dir()


# --- Move (rule 19: a rename never rewrites links by itself) --------------------------------------


def test_move_refuses_to_overwrite(root: Path) -> None:
    write(root, "A.md", "a\n")
    write(root, "B.md", "b\n")
    with pytest.raises(AlreadyExistsError, match="already exists there"):
        move_path(root, "A.md", "B.md")
    assert _tree(root) == {"A.md": b"a\n", "B.md": b"b\n"}


def test_rule_19_move_renames_without_touching_links(root: Path) -> None:
    """Partial: link updating on rename is not implemented in the vault engine; a plain move is
    Obsidian's ``vault.rename``, which never updates links."""
    write(root, "Old.md", "old\n")
    write(root, "Linker.md", "see [[Old]] and [[Old#h|Old]]\n")
    move_path(root, "Old.md", "Sub/New.md")
    assert _tree(root) == {
        "Linker.md": b"see [[Old]] and [[Old#h|Old]]\n",
        "Sub": None,
        "Sub/New.md": b"old\n",
    }


def test_move_folder_and_refuse_moving_into_itself(root: Path) -> None:
    write(root, "F/n.md", "n\n")
    with pytest.raises(PathRefusedError, match="into itself"):
        move_path(root, "F", "F/Sub/Deeper")
    assert _tree(root) == {"F": None, "F/n.md": b"n\n"}
    move_path(root, "F", "G/F2")
    assert _tree(root) == {"G": None, "G/F2": None, "G/F2/n.md": b"n\n"}


def test_move_missing_source(root: Path) -> None:
    with pytest.raises(NotFoundError):
        move_path(root, "Nope.md", "Other.md")


# --- Trash (rule 20) ------------------------------------------------------------------------------


def test_rule_20_local_trash_keeps_both_items_on_a_name_clash(root: Path) -> None:
    """Partial: trashOption "system" and "none" are not implemented; deleting always moves the
    item to the vault's .trash/ (Obsidian's "local"), which loses nothing."""
    write(root, "A/Note.md", "first\n")
    write(root, "B/Note.md", "second\n")
    write(root, "C/Note.md", "third\n")
    assert move_to_trash(root, "A/Note.md") == ".trash/Note.md"
    assert move_to_trash(root, "B/Note.md") == ".trash/Note 1.md"
    assert move_to_trash(root, "C/Note.md") == ".trash/Note 2.md"
    trash = root / ".trash"
    assert {p.name: p.read_bytes() for p in trash.iterdir()} == {
        "Note.md": b"first\n",
        "Note 1.md": b"second\n",
        "Note 2.md": b"third\n",
    }
    assert not (root / "A/Note.md").exists()


def test_trash_folders_and_extensionless_names(root: Path) -> None:
    write(root, "X/Proj/a.md", "a\n")
    write(root, "Y/Proj/b.md", "b\n")
    write(root, "README", "r1\n")
    assert move_to_trash(root, "X/Proj") == ".trash/Proj"
    assert move_to_trash(root, "Y/Proj") == ".trash/Proj 1"
    assert move_to_trash(root, "README") == ".trash/README"
    assert _tree(root / ".trash") == {
        "Proj": None,
        "Proj/a.md": b"a\n",
        "Proj 1": None,
        "Proj 1/b.md": b"b\n",
        "README": b"r1\n",
    }


def test_trash_refuses_missing_and_the_vault_itself(root: Path) -> None:
    with pytest.raises(NotFoundError):
        move_to_trash(root, "Missing.md")
    with pytest.raises(InvalidArgumentError):
        move_to_trash(root, "")
    with pytest.raises(InvalidArgumentError):
        move_to_trash(root, "./")
    assert list(root.iterdir()) == []


def test_mixed_line_endings_survive_an_edit_byte_for_byte(tmp_path: Path) -> None:
    """A note mixing LF and CRLF keeps each unchanged line's own ending after a rewrite."""
    from vaultpilot.vault.files import read_note, replace_note

    root = tmp_path / "v"
    root.mkdir()
    raw = b"---\r\ntags: [a]\r\n---\nbody one\r\nbody two\nlast"
    (root / "m.md").write_bytes(raw)
    note = read_note(root, "m.md")
    assert note.text == "---\ntags: [a]\n---\nbody one\nbody two\nlast"
    edited = note.text.replace("tags: [a]", "tags: [a, b]\nstatus: done")
    replace_note(root, "m.md", edited, note.fmt)
    assert (root / "m.md").read_bytes() == (
        b"---\r\ntags: [a, b]\r\nstatus: done\r\n---\nbody one\r\nbody two\nlast"
    )
    same = read_note(root, "m.md")
    replace_note(root, "m.md", same.text + "\nappended\n", same.fmt)
    assert (root / "m.md").read_bytes().endswith(b"body two\nlast\r\nappended\r\n")


# --- Portable names, hidden folders, protected reads ----------------------------------------------


@pytest.mark.parametrize(
    ("rel", "says"),
    [
        (".obsidian./x.md", "ending in a dot or a space"),
        (".git /config", "ending in a dot or a space"),
        ("Note .md", "ending in a dot or a space"),
        ("Folder./Note.md", "ending in a dot or a space"),
        ("Work /Note.md", "ending in a dot or a space"),
        ("CON.md", "Windows reserves"),
        ("nul", "Windows reserves"),
        ("Projects/com1.txt.md", "Windows reserves"),
        ("LPT9/x.md", "Windows reserves"),
        ("Aux.md", "Windows reserves"),
        ("a<b.md", "'<'"),
        ("What?.md", "'?'"),
        ('say "hi".md', "'\"'"),
        ("Meeting: notes.md", "':'"),
        ("pipe|.md", "'|'"),
        ("star*.md", "'*'"),
        ("tab\there.md", "'\\t'"),
        (".hidden/x.md", "hidden name '.hidden'"),
        ("Projects/.drafts/x.md", "hidden name '.drafts'"),
        (".x.md", "hidden name '.x.md'"),
    ],
)
def test_names_that_are_hidden_or_not_portable_are_never_created(
    root: Path, rel: str, says: str
) -> None:
    write(root, "Note.md", "n\n")
    before = _tree(root)
    for call in (
        lambda: create_note(root, rel, "x\n"),
        lambda: create_folder(root, rel),
        lambda: move_path(root, "Note.md", rel),
        lambda: replace_note(root, rel, "x\n", TextFormat()),
    ):
        with pytest.raises(PathRefusedError) as err:
            call()
        assert says in str(err.value), str(err.value)
    assert _tree(root) == before


def test_existing_oddly_named_notes_can_still_be_read_and_moved_away(root: Path) -> None:
    write(root, "Odd .md", "odd\n")
    assert read_note(root, "Odd .md").text == "odd\n"
    move_path(root, "Odd .md", "Fixed.md")
    assert _tree(root) == {"Fixed.md": b"odd\n"}


def test_console_names_inside_other_words_are_fine(root: Path) -> None:
    for rel in ("Console.md", "Contacts/Auxiliary.md", "NULL.md", "com10.md"):
        create_note(root, rel, "ok\n")
    assert read_note(root, "com10.md").text == "ok\n"


@pytest.mark.parametrize("rel", [".obsidian/app.json", ".git/config", ".trash/Old.md"])
def test_protected_folders_are_not_read_as_notes(root: Path, rel: str) -> None:
    write(root, rel, "secret config\n")
    with pytest.raises(PathRefusedError, match="note tools do not read it"):
        read_note(root, rel)


# --- Compare right before the rename --------------------------------------------------------------


def test_a_change_after_the_read_is_refused_even_without_an_expected_version(root: Path) -> None:
    write(root, "Note.md", "v1\n")
    seen = read_note(root, "Note.md")
    write(root, "Note.md", "v1 and a line saved in place\n")
    with pytest.raises(StaleVersionError, match="changed since you read it"):
        replace_note(root, "Note.md", "v1\nmine\n", seen.fmt, base=seen)
    assert (root / "Note.md").read_bytes() == b"v1 and a line saved in place\n"
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]


def test_same_size_same_mtime_change_is_caught_by_the_hash(root: Path) -> None:
    path = write(root, "Note.md", "aaaa\n")
    seen = read_note(root, "Note.md")
    path.write_bytes(b"bbbb\n")
    os.utime(path, ns=(seen.mtime_ns, seen.mtime_ns))  # an editor within one clock tick
    with pytest.raises(StaleVersionError):
        replace_note(root, "Note.md", "mine\n", seen.fmt, base=seen)
    assert path.read_bytes() == b"bbbb\n"
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]


def test_a_replace_based_on_the_current_text_succeeds_and_leaves_no_temp(root: Path) -> None:
    write(root, "Note.md", "v1\n")
    seen = read_note(root, "Note.md")
    new = replace_note(root, "Note.md", "v2\n", seen.fmt, base=seen, expected_version=seen.version)
    assert new.version == content_version(b"v2\n")
    assert sorted(p.name for p in root.iterdir()) == ["Note.md"]


def test_temp_files_are_recognised_and_removed(root: Path) -> None:
    from vaultpilot.vault.files import is_temp_name, remove_temp_files

    write(root, "A/.vaultpilot-0123456789ab.tmp", "half")
    write(root, ".vaultpilot-ba9876543210.tmp", "half")
    write(root, "A/.vaultpilot-notes.tmp", "someone's own file")
    assert is_temp_name(".vaultpilot-0123456789ab.tmp")
    assert not is_temp_name(".vaultpilot-notes.tmp") and not is_temp_name("x.md")
    paths = ["A/.vaultpilot-0123456789ab.tmp", ".vaultpilot-ba9876543210.tmp", "A/x.md"]
    assert remove_temp_files(root, paths) == 2
    assert _tree(root) == {"A": None, "A/.vaultpilot-notes.tmp": b"someone's own file"}
