"""Links: rules 1-8 of obsidian-semantics.md (forms, target text, embeds, markdown links,
resolution, unresolved links, link formats, and where links do not count)."""

from __future__ import annotations

import pytest

from tests.vault.helpers import links, parse, source_of, targets
from vaultpilot.vault.parse import parse_link_text
from vaultpilot.vault.resolve import LinkResolver, file_key, target_key

# --- Rule 1: wikilink forms ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("[[Note]]", ("Note", "", None)),
        ("[[Note.md]]", ("Note.md", "", None)),
        ("[[Folder/Note]]", ("Folder/Note", "", None)),
        ("[[Note|text]]", ("Note", "", "text")),
        ("[[Note#Heading]]", ("Note", "#Heading", None)),
        ("[[Note#H1#H2]]", ("Note", "#H1#H2", None)),
        ("[[Note#^blockid]]", ("Note", "#^blockid", None)),
        ("[[#Heading]]", ("", "#Heading", None)),
        ("[[#^blockid]]", ("", "#^blockid", None)),
        ("[[Folder/Note#Heading|shown text]]", ("Folder/Note", "#Heading", "shown text")),
        # The order is target#subpath|alias: a '#' after the pipe belongs to the alias.
        ("[[Note|issue #4]]", ("Note", "", "issue #4")),
    ],
)
def test_rule_01_wikilink_forms(written: str, expected: tuple[str, str, str | None]) -> None:
    assert links(f"see {written} here") == [(*expected, "link", "wiki")]


def test_rule_01_subpath_splits_at_first_hash() -> None:
    assert parse_link_text("Note#H1#H2|alias") == ("Note", "#H1#H2", "alias")
    assert parse_link_text("Note") == ("Note", "", None)


def test_rule_01_note_and_note_md_are_the_same_link() -> None:
    resolver = LinkResolver(["Folder/Note.md", "Other.md"])
    assert resolver.resolve("Other.md", "Note") == "Folder/Note.md"
    assert resolver.resolve("Other.md", "Note.md") == "Folder/Note.md"
    assert target_key("Note") == target_key("Note.md") == target_key("Folder/Note.md") == "note"
    assert file_key("Folder/Note.md") == "note"


def test_rule_01_folder_path_starts_at_vault_root() -> None:
    """[[Folder/Note]] names the vault path, not a path below the linking note."""
    resolver = LinkResolver(["Folder/Note.md", "Sub/Folder/Note.md"])
    assert resolver.resolve("Sub/Here.md", "Folder/Note") == "Folder/Note.md"
    assert resolver.resolve("Sub/Here.md", "Sub/Folder/Note") == "Sub/Folder/Note.md"


def test_rule_01_links_carry_exact_line_and_offsets() -> None:
    text = "---\nup: x\n---\n# Title\nA [[One]] b\n\nc ![[Two.png|50]] and [t](Three.md)\n"
    note = parse(text)
    assert [(lk.target, lk.line) for lk in note.links] == [
        ("One", 5),
        ("Two.png", 7),
        ("Three.md", 7),
    ]
    assert [source_of(text, lk) for lk in note.links] == [
        "[[One]]",
        "![[Two.png|50]]",
        "[t](Three.md)",
    ]


# --- Rule 2: target text --------------------------------------------------------------------------


def test_rule_02_spaces_around_target_are_trimmed() -> None:
    assert links("[[ foo ]] and [[foo]]") == [
        ("foo", "", None, "link", "wiki"),
        ("foo", "", None, "link", "wiki"),
    ]
    resolver = LinkResolver(["foo.md"])
    assert resolver.resolve("x.md", " foo ") == "foo.md"


def test_rule_02_single_bracket_does_not_end_target() -> None:
    assert targets("[[Sq]uare]] then [[Next]]") == ["Sq]uare", "Next"]


def test_rule_02_link_does_not_span_lines_or_stay_open() -> None:
    assert targets("[[a\nb]] and [[]] and [[unclosed") == []


def test_rule_02_risky_characters_kept_in_target() -> None:
    """Unverified (the help only says such names "may not work"): keep the target text as
    written, which loses nothing, and resolve it like any other name."""
    assert targets("[[Meeting: 10am]] [[a^b]]") == ["Meeting: 10am", "a^b"]
    resolver = LinkResolver(["Notes/Meeting: 10am.md"])
    assert resolver.resolve("x.md", "Meeting: 10am") == "Notes/Meeting: 10am.md"


# --- Rule 3: embeds -------------------------------------------------------------------------------


def test_rule_03_embeds_use_link_grammar() -> None:
    text = (
        "![[img.png|100]] ![[img.png|100x145]] ![[doc.pdf#page=3]] ![[doc.pdf#height=400]]"
        " ![[Note#Heading]] ![[Note#^blk]] ![[Note]]"
    )
    assert links(text) == [
        ("img.png", "", "100", "embed", "wiki"),
        ("img.png", "", "100x145", "embed", "wiki"),
        ("doc.pdf", "#page=3", None, "embed", "wiki"),
        ("doc.pdf", "#height=400", None, "embed", "wiki"),
        ("Note", "#Heading", None, "embed", "wiki"),
        ("Note", "#^blk", None, "embed", "wiki"),
        ("Note", "", None, "embed", "wiki"),
    ]


def test_rule_03_external_images_are_not_vault_links() -> None:
    text = "![250](https://example.com/a.png) ![alt|100x200](https://example.com/b.png)"
    assert links(text) == []
    assert links("![alt|100x200](pic.png)") == [("pic.png", "", "alt|100x200", "embed", "markdown")]


def test_rule_03_non_markdown_files_need_their_extension() -> None:
    resolver = LinkResolver(["Attachments/Figure 1.png", "Docs/Manual.pdf"])
    assert resolver.resolve("x.md", "Figure 1") is None
    assert resolver.resolve("x.md", "Figure 1.png") == "Attachments/Figure 1.png"
    assert resolver.resolve("x.md", "figure 1.PNG") == "Attachments/Figure 1.png"
    assert resolver.resolve("x.md", "Manual") is None
    assert resolver.resolve("x.md", "Manual.pdf") == "Docs/Manual.pdf"


def test_rule_03_bare_name_prefers_the_note_over_an_extensionless_file() -> None:
    resolver = LinkResolver(["A/Figure", "B/Figure.md"])
    assert resolver.resolve("x.md", "Figure") == "B/Figure.md"


# --- Rule 4: markdown links -----------------------------------------------------------------------


def test_rule_04_markdown_link_forms() -> None:
    text = (
        "[a](Note%20Name.md) [b](<Note Name.md>) [c](Note%20Name.md#Some%20Heading)"
        ' [d](Note%20Name) [e](Note.md "a title") [f](#Local)'
    )
    assert links(text) == [
        ("Note Name.md", "", "a", "link", "markdown"),
        ("Note Name.md", "", "b", "link", "markdown"),
        ("Note Name.md", "#Some Heading", "c", "link", "markdown"),
        ("Note Name", "", "d", "link", "markdown"),
        ("Note.md", "", "e", "link", "markdown"),
        ("", "#Local", "f", "link", "markdown"),
    ]


def test_rule_04_encoded_hash_belongs_to_the_name() -> None:
    """The fragment is split off before percent-decoding: %23 is a '#' in the file name."""
    assert links("[t](C%23%20notes.md#Intro)") == [
        ("C# notes.md", "#Intro", "t", "link", "markdown")
    ]


def test_rule_04_external_destinations_are_not_vault_links() -> None:
    assert links("[x](https://a.example/b#c) [y](mailto:me@example.com) [z](//cdn.example/x)") == []


def test_rule_04_markdown_destination_is_looked_up_vault_wide() -> None:
    """Observed in Obsidian 1.13.7 (OBS-L #1383): no My Note.md at the root."""
    resolver = LinkResolver(["Sub/My Note.md", "md1.md", "Sub/md2.md"])
    assert resolver.resolve("md1.md", "My Note.md", "markdown") == "Sub/My Note.md"
    assert resolver.resolve("md1.md", "Sub/My Note.md", "markdown") == "Sub/My Note.md"
    assert resolver.resolve("Sub/md2.md", "My Note.md", "markdown") == "Sub/My Note.md"
    assert resolver.resolve("Sub/md2.md", "Sub/My Note.md", "markdown") == "Sub/My Note.md"


def test_rule_04_dot_dot_is_relative_to_the_source_note() -> None:
    files = ["Projects/Garden/Overview.md", "Projects/Mobile/Overview.md", "Top.md"]
    resolver = LinkResolver(files)
    source = "Projects/Mobile/Checklist.md"
    assert resolver.resolve(source, "../Garden/Overview.md", "markdown") == files[0]
    assert resolver.resolve(source, "./Overview.md", "markdown") == files[1]
    assert resolver.resolve(source, "../../Top.md", "markdown") == "Top.md"
    assert resolver.resolve(source, "../../../Top.md", "markdown") is None
    assert resolver.resolve(source, "../Garden/Missing.md", "markdown") is None


def test_rule_04_escaped_pipe_in_table_is_the_alias_separator() -> None:
    text = "| who | link |\n|---|---|\n| lead | [[Marcus Feld\\|Marcus]] |\n"
    note = parse(text)
    assert [(lk.target, lk.alias) for lk in note.links] == [("Marcus Feld", "Marcus")]
    assert source_of(text, note.links[0]) == "[[Marcus Feld\\|Marcus]]"


# --- Rule 5: resolution ---------------------------------------------------------------------------


def test_rule_05_matching_is_case_insensitive() -> None:
    resolver = LinkResolver(["My Note.md", "Log.md", "Ext.MD"])
    assert resolver.resolve("x.md", "my note") == "My Note.md"
    assert resolver.resolve("x.md", "log") == "Log.md"
    assert resolver.resolve("x.md", "LOG") == "Log.md"
    assert resolver.resolve("x.md", "Ext.MD") == "Ext.MD"
    assert resolver.resolve("x.md", "ext") == "Ext.MD"


def test_rule_05_exact_vault_path_wins_over_same_folder() -> None:
    resolver = LinkResolver(["Note.md", "b/Note.md", "a/b/Note.md", "zzzz/Note.md"])
    assert resolver.resolve("b/Source.md", "Note") == "Note.md"
    assert resolver.resolve("zzzz/Source.md", "b/Note") == "b/Note.md"


def test_rule_05_same_folder_wins() -> None:
    resolver = LinkResolver(["b/Note.md", "a/b/Note.md", "zzzz/Note.md"])
    assert resolver.resolve("zzzz/Source.md", "Note") == "zzzz/Note.md"
    assert resolver.resolve("a/b/Source.md", "Note") == "a/b/Note.md"


def test_rule_05_ancestor_folder_counts_for_nothing() -> None:
    resolver = LinkResolver(["b/Note.md", "a/b/Note.md", "zzzz/Note.md"])
    assert resolver.resolve("zzzz/deep/Source.md", "Note") == "b/Note.md"


def test_rule_05_otherwise_shortest_path_string() -> None:
    """a/b/Note.md (11 chars, 3 parts) beats zzzz/Note.md (12 chars, 2 parts)."""
    resolver = LinkResolver(["zzzz/Note.md", "a/b/Note.md"])
    assert resolver.resolve("q/Source.md", "Note") == "a/b/Note.md"


def test_rule_05_equal_lengths_do_not_depend_on_scan_order() -> None:
    for order in (["y/N.md", "x/N.md"], ["x/N.md", "y/N.md"]):
        assert LinkResolver(order).resolve("q/Source.md", "N") == "x/N.md"


def test_rule_05_aliases_are_not_link_targets() -> None:
    note = parse("---\naliases: [AL]\n---\n# Target\n", "Notes/Target.md")
    assert note.aliases == ("AL",)
    resolver = LinkResolver(["Notes/Target.md", "Other.md"])
    assert resolver.resolve("Other.md", "AL") is None
    assert resolver.resolve("Other.md", "Target") == "Notes/Target.md"


def test_rule_05_same_note_heading_link_is_a_self_link() -> None:
    note = parse("# H\nsee [[#H]]\n", "Folder/Self.md")
    assert [(lk.target, lk.subpath) for lk in note.links] == [("", "#H")]
    assert LinkResolver(["Folder/Self.md"]).resolve("Folder/Self.md", "") == "Folder/Self.md"


def test_rule_05_url_in_wikilink_is_an_unresolved_note() -> None:
    assert targets("[[https://example.com/page]]") == ["https://example.com/page"]
    resolver = LinkResolver(["page.md"])
    assert resolver.resolve("x.md", "https://example.com/page") is None


# --- Rule 6: unresolved links ---------------------------------------------------------------------


def test_rule_06_unresolved_links_counted_per_link_text() -> None:
    """The vault layer yields what ``unresolvedLinks`` {source: {linktext: count}} is built from:
    one Link per occurrence (with its subpath split off) that resolves to None."""
    vault = {
        "A.md": "[[Missing]] and [[Missing#Part]] and [[Other|x]] and [[B]]\n",
        "B.md": "![[Gone.png]] and [[A]]\n",
    }
    resolver = LinkResolver(vault)
    unresolved: dict[str, dict[str, int]] = {}
    for path, text in vault.items():
        for lk in parse(text, path).links:
            if resolver.resolve(path, lk.target, lk.syntax) is None:
                counts = unresolved.setdefault(path, {})
                counts[lk.target] = counts.get(lk.target, 0) + 1
    assert unresolved == {"A.md": {"Missing": 2, "Other": 1}, "B.md": {"Gone.png": 1}}


# --- Rule 7: how links are written ----------------------------------------------------------------


def test_rule_07_shortest_form_is_the_bare_name_only_when_unique() -> None:
    """Partial: vaultpilot has no link writer yet. What a writer relies on is pinned here: a bare
    name reaches a unique note from anywhere; for a duplicated name only the full path reaches
    the longer one."""
    resolver = LinkResolver(
        ["Deep/Folder/Unique.md", "Projects/Garden/Overview.md", "Projects/Mobile App/Overview.md"]
    )
    assert resolver.resolve("Daily/Today.md", "Unique") == "Deep/Folder/Unique.md"
    assert resolver.resolve("Daily/Today.md", "Overview") == "Projects/Garden/Overview.md"
    assert (
        resolver.resolve("Daily/Today.md", "Projects/Mobile App/Overview")
        == "Projects/Mobile App/Overview.md"
    )


def test_rule_07_relative_format_wikilinks_resolve() -> None:
    """newLinkFormat "relative" writes [[../Folder/Note]]; such a link must resolve."""
    resolver = LinkResolver(["A/B/Source.md", "A/C/Target.md", "Top.md"])
    assert resolver.resolve("A/B/Source.md", "../C/Target") == "A/C/Target.md"
    assert resolver.resolve("A/B/Source.md", "../../Top") == "Top.md"
    assert resolver.resolve("A/B/Source.md", "./Source") == "A/B/Source.md"
    assert resolver.resolve("A/B/Source.md", "../../../Top") is None


def test_rule_07_markdown_format_destination_is_url_encoded_with_md() -> None:
    """The form Obsidian writes with useMarkdownLinks reads back as the vault path."""
    note = parse("[We!rd (name)](Sub/We!rd%20(name).md)")
    assert [(lk.target, lk.alias) for lk in note.links] == [("Sub/We!rd (name).md", "We!rd (name)")]
    assert LinkResolver(["Sub/We!rd (name).md"]).resolve(
        "Other/x.md", "Sub/We!rd (name).md", "markdown"
    ) == ("Sub/We!rd (name).md")


# --- Rule 8: not indexed as links -----------------------------------------------------------------


def test_rule_08_code_is_not_indexed() -> None:
    text = (
        "`[[Inline]]` and ``[[Double]]``\n"
        "```sql\n-- [[Fenced]]\n```\n"
        "~~~\n[[Tilde]]\n~~~\n"
        "\n    [[Indented]]\n\n"
        "> ```\n> [[InCallout]]\n> ```\n"
        "[[Real]]\n"
    )
    assert targets(text) == ["Real"]


def test_rule_08_nested_and_unclosed_fences() -> None:
    text = "````md\n```\n[[Inner]]\n```\n````\n[[After]]\n```\n[[Unclosed]]\n"
    assert targets(text) == ["After"]


def test_rule_08_indented_lines_in_a_list_are_not_code() -> None:
    text = "- item\n\n    [[Continued]]\n"
    assert targets(text) == ["Continued"]


def test_rule_08_indented_code_first_in_the_note_is_code() -> None:
    """An indented line that opens the note (or its body, after the frontmatter) starts an
    indented code block, as after a blank line; a tab counts as four spaces."""
    assert targets("    [[First]] #tag\n[[Real]]\n") == ["Real"]
    assert targets("\t[[Tabbed]]\n") == []
    assert targets("---\na: 1\n---\n    [[AfterProps]]\n\n[[Real]]\n") == ["Real"]


def test_rule_08_links_in_percent_comments_are_indexed() -> None:
    """Obsidian's metadata cache lists links written inside %%…%% (docs/obsidian-rules.md, seen in
    the cache captured by obsidian-tasks); HTML comments stay out."""
    text = "%%[[Hidden]]%% then %%\n[[Block]]\n%% and [[Shown]] <!-- [[Html]] -->\n"
    assert targets(text) == ["Hidden", "Block", "Shown"]


def test_rule_12_property_links_get_their_own_offsets() -> None:
    """Equal values each get their own place; comments and unquoted [[x]] are not links."""
    from vaultpilot.vault.parse import parse_note

    text = (
        "---\nrelated: ['[[A]]', '[[A]]']\nup: 'it''s [[B|b]]'\n# c: \"[[C]]\"\n"
        'bad: [[D]]\nx: "[[E#h]]"\n---\nbody\n'
    )
    links = parse_note("n.md", text).links
    assert [(k.target, k.prop, k.line) for k in links] == [
        ("A", "related", 2),
        ("A", "related", 2),
        ("B", "up", 3),
        ("E", "x", 6),
    ]
    assert [text[k.start : k.end] for k in links] == ["[[A]]", "[[A]]", "[[B|b]]", "[[E#h]]"]
    assert links[0].start != links[1].start
