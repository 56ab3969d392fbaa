"""``vault.rewrite``: pure link rewriting, one form at a time."""

from __future__ import annotations

import pytest

from vaultpilot.vault.rewrite import VaultPaths, rewrite_links

PATHS = ["A/Old Name.md", "B/Source.md", "C/Other.md", "img.png", "A/Sibling.md"]


def rewrite(
    text: str, moves: dict[str, str], *, source: str = "B/Source.md", fmt: str = "shortest"
) -> str:
    after = [moves.get(p, p) for p in PATHS]
    result = rewrite_links(
        text,
        source=source,
        moves=moves,
        before=VaultPaths.of(PATHS),
        after=VaultPaths.of(after),
        link_format=fmt,  # type: ignore[arg-type]
    )
    assert not result.skipped, result.skipped
    return result.text


RENAME = {"A/Old Name.md": "Z/New Name.md"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("[[Old Name]]", "[[New Name]]"),
        ("[[old name]]", "[[New Name]]"),
        ("[[Old Name.md]]", "[[New Name.md]]"),
        ("[[A/Old Name]]", "[[New Name]]"),
        ("[[Old Name|shown]]", "[[New Name|shown]]"),
        ("[[Old Name|Old Name]]", "[[New Name|New Name]]"),
        ("[[Old Name#H1#H2|x]]", "[[New Name#H1#H2|x]]"),
        ("[[Old Name#^blk]]", "[[New Name#^blk]]"),
        ("![[Old Name]]", "![[New Name]]"),
        ("![[Old Name#Sec|300]]", "![[New Name#Sec|300]]"),
        ("| [[Old Name\\|Old Name]] |", "| [[New Name\\|New Name]] |"),
        ("[[ Old Name ]]", "[[ New Name ]]"),
        ("[t](Old%20Name.md)", "[t](New%20Name.md)"),
        ("[t](../A/Old%20Name.md#Sec)", "[t](New%20Name.md#Sec)"),
        ("[t](<A/Old Name.md>)", "[t](<New Name.md>)"),
        ('[Old Name](<Old Name.md> "title")', '[New Name](<New Name.md> "title")'),
        ("![i](Old%20Name.md)", "![i](New%20Name.md)"),
        ("[t](Old%20Name)", "[t](New%20Name)"),
        ("`[[Old Name]]`", "`[[Old Name]]`"),
        ("```\n[[Old Name]]\n```", "```\n[[Old Name]]\n```"),
        ("[[#Local]] [[Nowhere]] [[Other]]", "[[#Local]] [[Nowhere]] [[Other]]"),
        ('---\nx: "[[Old Name]]"\n---\n', '---\nx: "[[New Name]]"\n---\n'),
    ],
)
def test_forms(before: str, after: str) -> None:
    assert rewrite(before, RENAME) == after


def test_links_in_a_moved_note_follow_it() -> None:
    text = "[s](../A/Sibling.md) [[Sibling]] [[Other]]"
    moves = {"B/Source.md": "A/Deeper/Source.md"}
    assert rewrite(text, moves) == "[s](Sibling.md) [[Sibling]] [[Other]]"


def test_escaping_inside_quoted_yaml() -> None:
    moves = {"A/Old Name.md": "A/It's.md"}
    text = "---\na: '[[Old Name]]'\nb: \"[[Old Name]]\"\n---\n"
    assert rewrite(text, moves) == "---\na: '[[It''s]]'\nb: \"[[It's]]\"\n---\n"


def test_attachment_keeps_its_extension() -> None:
    moves = {"img.png": "media/pic.png"}
    assert rewrite("![[img.png|100]] ![a](img.png)", moves) == "![[pic.png|100]] ![a](pic.png)"


def test_absolute_format_and_url_encoding() -> None:
    moves = {"A/Old Name.md": "Z/Crème brûlée (v2).md"}
    out = rewrite("[[Old Name]] [t](Old%20Name.md)", moves, fmt="absolute")
    assert out == "[[Z/Crème brûlée (v2)]] [t](Z/Cr%C3%A8me%20br%C3%BBl%C3%A9e%20%28v2%29.md)"


def test_nothing_to_do_returns_the_same_text() -> None:
    text = "No links here, only [[Other]]."
    result = rewrite_links(
        text,
        source="B/Source.md",
        moves=RENAME,
        before=VaultPaths.of(PATHS),
        after=VaultPaths.of([RENAME.get(p, p) for p in PATHS]),
    )
    assert result.text is text and result.changes == ()
