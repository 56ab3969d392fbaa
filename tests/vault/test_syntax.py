"""Blocks and syntax: rules 14 (block ids), 15 (headings), 16 (callouts) and 17 (comments,
code, footnotes, HTML) of obsidian-semantics.md."""

from __future__ import annotations

from tests.vault.helpers import inline_tags, parse, targets
from vaultpilot.vault.markdown import mask
from vaultpilot.vault.parse import Block, Heading

# --- Rule 14: block ids ---------------------------------------------------------------------------


def test_rule_14_block_id_after_paragraph_and_list_item() -> None:
    text = (
        "A paragraph that ends here. ^para-1\n"
        "\n"
        "- a list item ^item2\n"
        "\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
        "\n"
        "^table-id\n"
        "\n"
        "> a quote\n"
        "\n"
        "^quote-id\n"
    )
    assert parse(text).blocks == (
        Block("para-1", 1),
        Block("item2", 3),
        Block("table-id", 9),
        Block("quote-id", 13),
    )


def test_rule_14_space_before_caret_is_required() -> None:
    assert parse("no space^abc\n").blocks == ()


def test_rule_14_allowed_characters_only() -> None:
    assert parse("text ^a_b\ntext ^ok-1\ntext ^é\n").blocks == (Block("ok-1", 2),)


def test_rule_14_no_block_ids_in_code_or_footnotes() -> None:
    text = "```\nline ^incode\n```\n`x ^inline`\nsee [^1]\n\n[^1]: note ^real\n"
    assert parse(text).blocks == (Block("real", 7),)


def test_rule_14_block_line_counts_frontmatter() -> None:
    assert parse("---\na: 1\n---\nfirst ^b1\n").blocks == (Block("b1", 4),)


# --- Rule 15: headings ----------------------------------------------------------------------------


def test_rule_15_atx_levels_one_to_six() -> None:
    text = "# One\n## Two\n### Three\n#### Four\n##### Five\n###### Six\n####### Seven\n"
    assert parse(text).headings == (
        Heading(1, "One", 1),
        Heading(2, "Two", 2),
        Heading(3, "Three", 3),
        Heading(4, "Four", 4),
        Heading(5, "Five", 5),
        Heading(6, "Six", 6),
    )


def test_rule_15_heading_text_details() -> None:
    text = "## Closed ##\n# C#\n#NoSpace\n   ### Indented three\n    # Four spaces is code\n"
    assert parse(text).headings == (
        Heading(2, "Closed", 1),
        Heading(1, "C#", 2),
        Heading(3, "Indented three", 4),
    )


def test_rule_15_headings_in_code_do_not_count() -> None:
    text = "```bash\n# dump only the schema\n```\n## Real\n"
    assert parse(text).headings == (Heading(2, "Real", 4),)


def test_rule_15_heading_lines_count_frontmatter() -> None:
    note = parse("---\ntitle: x\n---\n\n## Day 1: where we are\n")
    assert note.headings == (Heading(2, "Day 1: where we are", 5),)


# --- Rule 16: callouts ----------------------------------------------------------------------------


def test_rule_16_links_and_tags_inside_callouts_count() -> None:
    """Partial: callouts are not modelled (no type or fold state); their content is parsed."""
    text = (
        "> [!warning] Collation gotcha [[Postgres]]\n"
        "> body #db\n"
        "\n"
        "> [!tip]- Folded\n"
        "> > [!note]+ Nested\n"
        "> > deep [[Inner]] #deep\n"
    )
    assert targets(text) == ["Postgres", "Inner"]
    assert inline_tags(text) == ["db", "deep"]


def test_rule_16_code_inside_callouts_is_masked() -> None:
    text = "> [!example]\n> ```\n> [[InCode]] #incode\n> ```\n> after [[Out]]\n"
    assert targets(text) == ["Out"]
    assert inline_tags(text) == []


def test_rule_16_callout_marker_is_not_a_link() -> None:
    assert parse("> [!NOTE] Title\n> text\n").links == ()


# --- Rule 17: comments, code, footnotes, HTML -----------------------------------------------------


def test_rule_17_comments_inline_and_block() -> None:
    """Inside %% comments links and tags count (Obsidian's cache lists them); headings and block
    ids do not (its cache has no section or list item there)."""
    text = "keep %%inline #t1%% keep\n%%\n# Not a heading ^not-block\n[[Yes]]\n%%\n# Shown\n"
    note = parse(text)
    assert note.headings == (Heading(1, "Shown", 6),)
    assert note.blocks == ()
    assert [(t.name, t.line) for t in note.tags] == [("t1", 1)]
    assert [(lk.target, lk.line) for lk in note.links] == [("Yes", 4)]


def test_rule_17_unclosed_comment_runs_to_the_end() -> None:
    note = parse("[[Before]] %% open\n# Hidden\n[[After]]\n")
    assert [lk.target for lk in note.links] == ["Before", "After"]
    assert note.headings == ()


def test_rule_17_fences_need_three_and_nest_with_longer_outer() -> None:
    assert targets("~~\n[[TwoTildes]]\n~~\n") == ["TwoTildes"]
    assert targets("~~~~\n~~~\n[[Nested]]\n~~~\n~~~~\n[[Out]]\n") == ["Out"]
    assert targets("```\n[[A]]\n~~~\n[[B]]\n```\n[[C]]\n") == ["C"]


def test_rule_17_footnotes() -> None:
    text = "Claim.[^1] And inline.^[see [[Target]]]\n\n[^1]: Chapter 4, [[Book]].\n"
    note = parse(text)
    assert [lk.target for lk in note.links] == ["Target", "Book"]
    assert note.blocks == ()


def test_rule_17_markdown_inside_html_blocks_is_not_parsed() -> None:
    text = (
        "<div align=center>\n[[InDiv]]\n</div>\n\n"
        "<script>\nlet x = '[[InScript]]';\n\nstill script [[Deep]]\n</script>\n"
        "[[AfterScript]]\n\n"
        "text <span>[[InlineHtml]]</span>\n"
    )
    assert targets(text) == ["AfterScript", "InlineHtml"]


def test_rule_17_kind_7_html_does_not_interrupt_a_paragraph() -> None:
    assert targets("para line\n<span>\n[[Kept]]\n") == ["Kept"]


def test_rule_17_mask_keeps_length_and_newlines() -> None:
    text = "a `b` c\n```\nx\n```\n%%y%% <!-- z -->\n<div>\nq\n</div>\n\n$m$ end\n"
    masked = mask(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]
    assert masked == "a     c\n   \n \n   \n                \n     \n \n      \n\n    end\n"
