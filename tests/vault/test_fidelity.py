"""Where vaultpilot read or wrote a vault unlike Obsidian, now pinned (docs/obsidian-rules.md).

The comment and block-id cases reproduce, in our own words, notes whose metadata cache Obsidian
itself produced (captured in obsidian-tasks-group/obsidian-tasks, ``tests/Obsidian/__test_data__``)
and the block ids Obsidian's help vault uses.
"""

from __future__ import annotations

import unicodedata

import pytest

from tests.vault.helpers import parse
from vaultpilot.errors import InvalidArgumentError
from vaultpilot.vault.frontmatter_edit import edit_frontmatter
from vaultpilot.vault.resolve import LinkResolver, file_key, target_key

# --- 1: JSON and one-line flow frontmatter keep every property ----------------------------------


@pytest.mark.parametrize(
    "yaml_block",
    [
        '{"title": "json", "tags": ["j"]}',
        "{title: json, tags: [j]}",
        '{"title": "json", "tags": "j"}',
    ],
)
def test_01_bulk_tag_on_flow_frontmatter_keeps_other_properties(yaml_block: str) -> None:
    text = f"---\n{yaml_block}\n---\nbody\n"
    edit = edit_frontmatter(text, add_tags=["reviewed"])
    note = parse(edit.text)
    assert note.frontmatter_error is None
    assert note.properties["title"] == "json"
    assert [t.name for t in note.tags] == ["j", "reviewed"]
    assert edit.text.endswith("\n---\nbody\n") and edit.changed == ("tags",)


def test_01_setting_a_property_on_json_frontmatter_keeps_the_others() -> None:
    text = '---\n{"title": "json", "tags": ["j"], "n": 2}\n---\nbody\n'
    note = parse(edit_frontmatter(text, set_values={"status": "done"}).text)
    assert note.properties == {"title": "json", "tags": ["j"], "n": 2, "status": "done"}


# --- 2: template placeholders are text ----------------------------------------------------------


def test_02_placeholder_values_read_as_text() -> None:
    text = (
        '---\ncategories:\n  - "[[Meetings]]"\ncreated: {{date}}\nday: {{date:YYYY-MM-DD}}\n'
        "people:\n  - {{title}}\ntags:\n  - meeting\n---\nbody\n"
    )
    note = parse(text)
    assert note.frontmatter_error is None
    assert note.properties["created"] == "{{date}}"
    assert note.properties["day"] == "{{date:YYYY-MM-DD}}"
    assert note.properties["people"] == ["{{title}}"]
    assert [lk.target for lk in note.links] == ["Meetings"]
    assert [t.name for t in note.tags] == ["meeting"]


def test_02_bulk_tag_on_a_template_keeps_the_placeholder() -> None:
    text = "---\ncreated: {{date}}\ntags:\n  - book\n---\n"
    edit = edit_frontmatter(text, add_tags=["reviewed"])
    assert edit.text == "---\ncreated: {{date}}\ntags:\n  - book\n  - reviewed\n---\n"


def test_02_other_flow_maps_stay_maps() -> None:
    assert parse("---\nm: {a: 1}\n---\n").properties == {"m": {"a": 1}}


# --- 3: %% comments: links and tags inside are indexed -------------------------------------------


def test_03_comments_like_obsidians_captured_cache() -> None:
    """Our version of the captured note: a task inside a %% block, then two tasks with a tag and a
    link inside inline %% comments. Obsidian's cache (1.8.4) lists the tag in the block, the tag
    and the link in the inline comments, and no list item for the commented-out task."""
    text = (
        "# comments\n\nA commented-out task:\n%%\n- [ ] #todo hidden task\n%%\n\n"
        "- [ ] #todo with a tag: %% #seen-by-obsidian  %% - still counted\n"
        "- [ ] #todo with a link: %% [[Other note]]  %% - still counted\n"
    )
    note = parse(text)
    assert [(t.name, t.line) for t in note.tags] == [
        ("todo", 5),
        ("todo", 8),
        ("seen-by-obsidian", 8),
        ("todo", 9),
    ]
    assert [(lk.target, lk.line) for lk in note.links] == [("Other note", 9)]


def test_03_block_comment_links_count_but_not_its_headings_or_block_ids() -> None:
    note = parse("%%\n## Draft\n[[Later]] #idea ^draft\n%%\n<!-- [[Html]] #html -->\n")
    assert [lk.target for lk in note.links] == ["Later"]
    assert [t.name for t in note.tags] == ["idea"]
    assert note.headings == () and note.blocks == ()


# --- 4 and 5: tags only from `tags`, and a comma string is no tags -------------------------------


def test_04_singular_tag_key_is_not_read_and_bulk_tag_writes_tags() -> None:
    text = "---\ntag: old\n---\n"
    assert parse(text).tags == ()
    edit = edit_frontmatter(text, add_tags=["reviewed"])
    assert edit.text == "---\ntag: old\ntags:\n  - reviewed\n---\n"


@pytest.mark.parametrize("value", ["a, b", "'a, b'", "a b"])
def test_05_comma_or_space_string_gives_no_tags_and_bulk_tag_refuses(value: str) -> None:
    text = f"---\ntags: {value}\n---\nbody\n"
    assert parse(text).tags == ()
    with pytest.raises(InvalidArgumentError, match="reads as no tags") as err:
        edit_frontmatter(text, add_tags=["reviewed"])
    assert "bulk_update_metadata" in err.value.message


def test_05_single_string_tag_still_one_tag() -> None:
    text = "---\ntags: solo\n---\n"
    assert [t.name for t in parse(text).tags] == ["solo"]
    assert parse(edit_frontmatter(text, add_tags=["x"]).text).properties["tags"] == ["solo", "x"]


def test_05_comma_string_aliases_are_no_aliases() -> None:
    assert parse("---\naliases: a, b\n---\n").aliases == ()
    assert parse("---\naliases: [a, b]\n---\n").aliases == ("a", "b")


# --- 6: a comment on the tags line survives ------------------------------------------------------


def test_06_comment_on_tags_line_is_kept() -> None:
    text = "---\ntags: #notatag\ntitle: x\n---\n"
    edit = edit_frontmatter(text, add_tags=["reviewed"])
    assert edit.text == "---\ntags: #notatag\n  - reviewed\ntitle: x\n---\n"
    assert parse(edit.text).properties == {"tags": ["reviewed"], "title": "x"}


# --- 7: inline code in a heading link ------------------------------------------------------------


def test_07_heading_with_inline_code_in_links_and_headings() -> None:
    text = "## Use `move` here\n\nSee [[#`move`|move]] and [[Other#`x` y]].\n"
    note = parse(text)
    assert [(lk.target, lk.subpath, lk.alias) for lk in note.links] == [
        ("", "#`move`", "move"),
        ("Other", "#`x` y", None),
    ]
    assert [h.text for h in note.headings] == ["Use `move` here"]


def test_07_code_outside_links_still_hides_links() -> None:
    assert parse("`[[Not]]` and [[Yes]]").links[0].target == "Yes"
    assert len(parse("`[[Not]]` and [[Yes]]").links) == 1


# --- 8: Unicode normalisation -----------------------------------------------------------------


def test_08_nfd_file_name_and_nfc_link_resolve_both_ways() -> None:
    nfd = unicodedata.normalize("NFD", "Notes/Café.md")
    nfc = unicodedata.normalize("NFC", "Other/Résumé.md")
    resolver = LinkResolver([nfd, nfc, "Index.md"])
    assert resolver.resolve("Index.md", unicodedata.normalize("NFC", "Café")) == nfd  # bytes kept
    assert resolver.resolve("Index.md", unicodedata.normalize("NFD", "Résumé")) == nfc
    assert resolver.resolve("Index.md", unicodedata.normalize("NFC", "Notes/café")) == nfd
    assert file_key(nfd) == target_key(unicodedata.normalize("NFC", "café"))


# --- 9: degenerate links are recorded, unresolved -------------------------------------------------


def test_09_empty_target_links_are_kept_and_unresolved() -> None:
    note = parse("a [[|alias]] b [[|]] c [[]] d [[ ]] e [[#H]]\n")
    assert [(lk.target, lk.subpath, lk.alias) for lk in note.links] == [
        ("", "", "alias"),
        ("", "", ""),
        ("", "#H", None),
    ]
    resolver = LinkResolver(["Note.md"])
    got = [resolver.resolve("Note.md", lk.target, subpath=lk.subpath) for lk in note.links]
    assert got == [None, None, "Note.md"]


# --- 13: a block id right after an embed ---------------------------------------------------------


def test_13_block_id_right_after_an_embed() -> None:
    """Obsidian's help vault writes `![[version-history-collaboration.png]]^version-history-image`
    and embeds it elsewhere as `#^version-history-image`: the id counts without a space."""
    note = parse("![[diagram.png]]^fig-1\n\n[[Note]]^not-an-id\nword^nope\n![x](a.png)^nor\n")
    assert [(b.block_id, b.line) for b in note.blocks] == [("fig-1", 1)]
