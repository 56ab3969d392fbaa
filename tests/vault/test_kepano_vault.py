"""The vault engine on a real vault: kepano/kepano-obsidian, read in place (never copied or
written). Skipped when the shared corpus is not present."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from vaultpilot.vault.config import DailyNotesConfig, read_vault_config
from vaultpilot.vault.files import read_note
from vaultpilot.vault.frontmatter_edit import edit_frontmatter
from vaultpilot.vault.parse import ParsedNote, parse_note
from vaultpilot.vault.resolve import LinkResolver

KEPANO = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpora" / "kepano-obsidian"


@pytest.fixture(scope="module")
def vault() -> Path:
    if not KEPANO.is_dir():
        pytest.skip(f"corpus not present: {KEPANO}")
    return KEPANO


@pytest.fixture(scope="module")
def paths(vault: Path) -> list[str]:
    """Every file outside dot-folders, as vault paths."""
    out: list[str] = []
    for folder, dirnames, filenames in os.walk(vault):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                out.append((Path(folder) / name).relative_to(vault).as_posix())
    return sorted(out)


@pytest.fixture(scope="module")
def notes(vault: Path, paths: list[str]) -> dict[str, ParsedNote]:
    return {p: parse_note(p, read_note(vault, p).text) for p in paths if p.endswith(".md")}


@pytest.fixture(scope="module")
def resolver(paths: list[str]) -> LinkResolver:
    return LinkResolver(paths)


def _resolved(note: ParsedNote, resolver: LinkResolver) -> list[tuple[str, str, str | None]]:
    return [
        (lk.kind, lk.target, resolver.resolve(note.path, lk.target, lk.syntax)) for lk in note.links
    ]


def test_every_note_parses(notes: dict[str, ParsedNote]) -> None:
    assert len(notes) >= 100
    assert "Readme.md" in notes
    # Templates' unquoted {{date}} placeholders are read as text, as Obsidian shows them.
    assert [p for p in notes if notes[p].frontmatter_error] == []


def test_templates_with_placeholders_keep_their_frontmatter(
    notes: dict[str, ParsedNote],
) -> None:
    """28 templates write `created: {{date}}` (or similar) unquoted: their property links and
    tags were all lost while the placeholder made the YAML unreadable."""
    placeholder = re.compile(r"^[\w-]+: \{\{", re.MULTILINE)
    templates = [
        n for p, n in notes.items() if p.startswith("Templates/") and placeholder.search(n_fm(n))
    ]
    assert len(templates) == 28
    assert sum(lk.kind == "property" for n in templates for lk in n.links) == 31
    assert sum(t.source == "frontmatter" for n in templates for t in n.tags) == 15
    book = notes["Templates/Book Template.md"]
    assert book.properties["created"] == "{{date}}"
    assert [t.name for t in book.tags] == ["to-read"]
    # ...and a tag can be added to each of them without losing anything.
    for note in templates:
        text = read_note(KEPANO, note.path).text
        edited = parse_note(note.path, edit_frontmatter(text, add_tags=["reviewed"]).text)
        assert edited.properties == {**note.properties, "tags": edited.properties["tags"]}
        assert edited.frontmatter_error is None


def n_fm(note: ParsedNote) -> str:
    """The frontmatter text of a parsed note (what lies before its body)."""
    return read_note(KEPANO, note.path).text[: note.body_offset]


def test_daily_notes_config_read(vault: Path, paths: list[str]) -> None:
    cfg = read_vault_config(vault)
    assert cfg.daily_notes == DailyNotesConfig(
        folder="Daily", format="YYYY-MM-DD", template="Templates/Daily Note Template"
    )
    assert cfg.templates_folder == "Templates"
    assert cfg.app.attachment_folder_path == "Attachments"
    assert cfg.app.always_update_links is True
    assert cfg.problems == ()
    # The template path is stored without .md; the note itself has it.
    assert cfg.daily_notes.template + ".md" in paths


def test_meeting_note_links(notes: dict[str, ParsedNote], resolver: LinkResolver) -> None:
    note = notes["Notes/2023-09-12 Meeting with Steph.md"]
    assert note.properties["date"] == "2023-09-12"
    assert _resolved(note, resolver) == [
        ("property", "Meetings", "Categories/Meetings.md"),
        ("property", "Obsidian", "References/Obsidian.md"),
        ("property", "Steph Ango", "References/Steph Ango.md"),
        ("property", "Emergence", None),
        ("link", "Out of Control", "References/Out of Control.md"),
        ("link", "Emergence", None),
    ]
    assert [lk.line for lk in note.links] == [3, 7, 11, 13, 15, 15]


def test_attachment_in_property_resolves(
    notes: dict[str, ParsedNote], resolver: LinkResolver
) -> None:
    note = notes["References/Out of Control.md"]
    cover = [lk for lk in note.links if lk.prop == "cover"]
    assert [(lk.target, lk.line) for lk in cover] == [("out-of-control.jpg", 4)]
    assert resolver.resolve(note.path, "out-of-control.jpg") == "Attachments/out-of-control.jpg"
    assert (note.properties["isbn13"], note.properties["created"]) == (9780201483406, "2023-09-12")


def test_base_embeds_resolve(notes: dict[str, ParsedNote], resolver: LinkResolver) -> None:
    daily = notes["Daily/2023-09-12.md"]
    assert _resolved(daily, resolver) == [("embed", "Daily.base", "Templates/Bases/Daily.base")]
    genre = notes["Templates/Video Game Genre Template.md"]
    assert [(lk.target, lk.subpath) for lk in genre.links] == [("Games.base", "#Genre")]
    assert resolver.resolve(genre.path, "Games.base") == "Templates/Bases/Games.base"


def test_case_insensitive_link_and_emoji_tag(
    notes: dict[str, ParsedNote], resolver: LinkResolver
) -> None:
    note = notes["Notes/Evergreen notes turn ideas into objects that you can manipulate.md"]
    assert [(t.name, t.source) for t in note.tags] == [("0🌲", "frontmatter")]
    body = [lk for lk in note.links if lk.kind == "link"]
    assert body[0].target == "evergreen"
    assert resolver.resolve(note.path, "evergreen") == "Categories/Evergreen.md"
    assert [lk.target for lk in body].count("Everything is a remix") == 2
