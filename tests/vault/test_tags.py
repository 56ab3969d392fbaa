"""Tags: rules 9-11 of obsidian-semantics.md (inline tag format, where tags count, and tags in
frontmatter)."""

from __future__ import annotations

import pytest

from tests.vault.helpers import inline_tags, parse
from vaultpilot.vault.parse import Tag, is_valid_tag

# --- Rule 9: inline tag format --------------------------------------------------------------------


def test_rule_09_allowed_characters() -> None:
    text = "#a_b #a-b #a/b/c #café #日本語 #✅done #1990s #- #_"
    assert inline_tags(text) == [
        "a_b",
        "a-b",
        "a/b/c",
        "café",
        "日本語",
        "✅done",
        "1990s",
        "-",
        "_",
    ]


def test_rule_09_at_least_one_non_digit() -> None:
    assert inline_tags("#1984 #y1984 #2024") == ["y1984"]


def test_rule_09_no_spaces_and_punctuation_ends_the_tag() -> None:
    assert inline_tags("#two words, #end. #ask? #wow! #x;y") == ["two", "end", "ask", "wow", "x"]


def test_rule_09_tag_cannot_end_in_slash() -> None:
    assert inline_tags("#a/ #b/c/") == ["a", "b/c"]


def test_rule_09_case_kept_as_written() -> None:
    """Tags match case-insensitively in queries; the parser reports each as written."""
    assert inline_tags("#Tag #TAG #tag") == ["Tag", "TAG", "tag"]


@pytest.mark.parametrize(
    ("tag", "valid"),
    [
        ("y1984", True),
        ("a/b", True),
        ("✅", True),
        ("1984", False),
        ("12/34", False),
        ("a/", False),
        ("/a", False),
        ("", False),
        ("a b", False),
        ("a.b", False),
    ],
)
def test_rule_09_is_valid_tag(tag: str, valid: bool) -> None:
    assert is_valid_tag(tag) is valid


def test_rule_09_tag_line_numbers() -> None:
    note = parse("---\ntags: [fm]\n---\nline four #one\n\n#two\n")
    assert note.tags == (
        Tag("fm", 0, "frontmatter"),
        Tag("one", 4, "inline"),
        Tag("two", 6, "inline"),
    )


# --- Rule 10: where tags count --------------------------------------------------------------------


def test_rule_10_hash_after_line_start_or_whitespace() -> None:
    text = "#start x #space\tmid\t#tab a\u00a0#nbsp b\u3000#ideo"
    assert inline_tags(text) == ["start", "space", "tab", "nbsp", "ideo"]


def test_rule_10_punctuation_in_front_blocks_a_tag() -> None:
    """OBS-T: `(#pa) $#pb$ "#pc" .#pd x—#pe` gives no tags."""
    assert inline_tags('(#pa) $#pb$ "#pc" .#pd x—#pe a/#pf') == []


def test_rule_10_underscore_exceptions_and_adjacent_tags() -> None:
    """OBS-T: `x _#uc_ y`, `snake_case_#wc`, `#tl#tm`, `#tn/#to`."""
    assert inline_tags("x _#uc_ y snake_case_#wc #tl#tm #tn/#to") == [
        "uc",
        "wc",
        "tl",
        "tm",
        "tn",
        "to",
    ]


def test_rule_10_tags_in_link_text_count() -> None:
    assert inline_tags("[Discord #tf](https://x.y) and [a #tg][ref]") == ["tf", "tg"]


def test_rule_10_tags_in_table_cells_count() -> None:
    text = "|a|b|\n|-|-|\n|#uo|x|\n\n| h | i |\n| :-- | --: |\n| #padded | y |\n"
    assert inline_tags(text) == ["uo", "padded"]


def test_rule_10_pipe_outside_a_table_still_blocks() -> None:
    assert inline_tags("a|#notatag\n") == []


def test_rule_10_no_tags_in_code_math_html_or_comments() -> None:
    text = (
        "`#inline` and $#m$ and $x #ra y$\n"
        "```\n#fenced\n```\n"
        "\n    #indented\n\n"
        "$$\n#qd\n$$\n"
        "<!-- #comment -->\n"
        "<div>\nhello #tp\n</div>\n\n"
        "<p>x #tr</p>\n\n"
        "after #ok\n"
    )
    assert inline_tags(text) == ["ok"]


def test_rule_10_html_block_ends_at_blank_line() -> None:
    text = "<div>\n#hidden\n\n#shown\n</div>\n\ntext\n\n<span>\n#kind7\n\nx <b>#inline</b>\n"
    assert inline_tags(text) == ["shown"]


def test_rule_10_closing_fence_has_no_info_string() -> None:
    """OBS-T #140: only `prose #tv` is outside code."""
    text = "```markdown\n```typescript\nx #tu\n```\nprose #tv\n```\ncode #tw\n```\n"
    assert inline_tags(text) == ["tv"]


def test_rule_10_url_fragments_are_not_tags() -> None:
    assert inline_tags("https://example.com/page#section and x.html#frag") == []


def test_rule_10_heading_versus_tag() -> None:
    note = parse("# Heading\n#tag\n")
    assert [t.name for t in note.tags] == ["tag"]
    assert [(h.level, h.text) for h in note.headings] == [(1, "Heading")]


def test_rule_10_tags_in_heading_line_count() -> None:
    """Unverified in the reference: pinned as counting (a tag Obsidian might not index costs
    nothing; a missed one would be lost to tag search). The heading text keeps the tag."""
    note = parse("## Plan #draft\n")
    assert [(t.name, t.line) for t in note.tags] == [("draft", 1)]
    assert [(h.level, h.text) for h in note.headings] == [(2, "Plan #draft")]


# --- Rule 11: frontmatter tags --------------------------------------------------------------------


def _fm_tags(yaml_text: str) -> list[str]:
    return [
        t.name for t in parse(f"---\n{yaml_text}\n---\nbody\n").tags if t.source == "frontmatter"
    ]


def test_rule_11_list_without_hash() -> None:
    assert _fm_tags("tags:\n  - project/active\n  - meeting") == ["project/active", "meeting"]
    assert _fm_tags("tags: [a, b]") == ["a", "b"]


def test_rule_11_single_string_accepted() -> None:
    assert _fm_tags("tags: my-tag") == ["my-tag"]


def test_rule_11_hash_prefix_and_duplicates_dropped() -> None:
    assert _fm_tags('tags: ["#a", "b", "a", "b/"]') == ["a", "b"]


def test_rule_11_digits_only_is_not_a_tag() -> None:
    assert _fm_tags("tags: [1984, y1984]") == ["y1984"]


def test_rule_11_comma_string_gives_no_tags() -> None:
    """Obsidian 1.9.3+ flags `tags: 'a, b'` invalid and reads no tags from it."""
    assert _fm_tags("tags: 'a, b'") == []
    assert _fm_tags("tags: a, b") == []
    assert _fm_tags("tags: single") == ["single"]


def test_rule_11_legacy_tag_key_is_not_read() -> None:
    """Obsidian 1.9.2+ reads only `tags`; `tag` is an ordinary property."""
    assert _fm_tags("tag: old\ntags: [new]") == ["new"]
    assert _fm_tags("tag: [old]") == []


def test_rule_11_unquoted_hash_is_a_yaml_comment() -> None:
    note = parse("---\ntags: #a\n---\n")
    assert note.properties == {"tags": None}
    assert note.tags == ()


def test_rule_11_hashtags_in_text_properties_are_not_tags() -> None:
    note = parse('---\nsummary: "about #x and #y"\n---\nbody\n')
    assert note.properties == {"summary": "about #x and #y"}
    assert note.tags == ()


def test_rule_11_yaml_1_2_keeps_on_as_a_tag() -> None:
    assert _fm_tags("tags:\n  - travel\n  - on\n  - yes") == ["travel", "on", "yes"]
