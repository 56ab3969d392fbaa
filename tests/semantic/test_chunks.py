"""Chunking: sections by heading, heading paths, size bounds, Markdown clean-up, stable hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultpilot.index.chunks import (
    DEFAULT_MAX_TOKENS,
    chunk_note,
    clean_markdown,
    estimate_tokens,
    text_hash,
)
from vaultpilot.vault.frontmatter import split_frontmatter

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vault"


def body_of(rel: str) -> str:
    text = (EXAMPLE / rel).read_text("utf-8")
    return text[split_frontmatter(text).end :]


def test_one_chunk_per_section_with_title_and_heading_path() -> None:
    chunks = chunk_note("Database Migration", body_of("Projects/Database Migration.md"))
    headings = list(dict.fromkeys(c.heading for c in chunks))
    # The H1 equals the title, so it is not repeated; empty "Cutover plan" gives no chunk of
    # its own but lives on in its children's paths.
    assert headings == [
        "",
        "Context",
        "Decisions",
        "Cutover plan > Timeline",
        "Cutover plan > Rollback",
        "Cutover plan > Rollback > Who can call it",
        "Risks",
        "Log",
        "Open questions",
    ]
    # "Decisions" is longer than one chunk: it is cut at a paragraph, both pieces keep the path.
    assert [c.heading for c in chunks].count("Decisions") == 2
    rollback = next(c for c in chunks if c.heading == "Cutover plan > Rollback")
    assert rollback.text.startswith("Database Migration > Cutover plan > Rollback\n\n")
    assert "error rate stays above 2%" in rollback.content
    assert [c.seq for c in chunks] == list(range(len(chunks)))


def test_h1_different_from_title_stays_in_the_path() -> None:
    chunks = chunk_note(
        "2025-11-12", "# Wednesday 12 November 2025\n\n## Cutover rehearsal\n\nok\n"
    )
    assert chunks[0].heading == "Wednesday 12 November 2025 > Cutover rehearsal"
    assert chunks[0].text.startswith("2025-11-12 > Wednesday 12 November 2025 > Cutover")


def test_hash_in_code_fence_is_not_a_heading() -> None:
    body = "## Shell\n\n```bash\n# dump only the schema\npg_dump --schema-only\n```\n"
    chunks = chunk_note("Cheatsheet", body)
    assert len(chunks) == 1
    assert chunks[0].heading == "Shell"
    assert "# dump only the schema" in chunks[0].content


def test_body_starting_with_a_rule_is_not_frontmatter() -> None:
    chunks = chunk_note("Note", "---\nnot: yaml\n---\n\n# Heading\n\ntext\n")
    assert [c.heading for c in chunks] == ["", "Heading"]
    assert "not: yaml" in chunks[0].content


def test_empty_body_gives_no_chunks() -> None:
    assert chunk_note("Empty", "") == []
    assert chunk_note("Only headings", "# A\n## B\n### C\n") == []


def test_a_note_with_only_properties_is_chunked_by_them() -> None:
    props = [
        ("categories", "[[Games]]"),
        ("system", "[[Nintendo Switch]]"),
        ("genre", "[[Open world]]"),
        ("genre", "[[Adventure|adventure game]]"),
        ("rating", "7"),
        ("empty", "  "),
    ]
    chunks = chunk_note("Breath of the Wild", "", properties=props)
    assert [c.text for c in chunks] == [
        "Breath of the Wild\n\ncategories: Games\nsystem: Nintendo Switch\n"
        "genre: Open world, adventure game\nrating: 7"
    ]
    assert chunks[0].heading == "" and chunks[0].text_hash == text_hash(chunks[0].text)
    # an embed-only body gives no section chunk either, so its properties stand in
    assert chunk_note("Kyoto", "## Trips\n\n![[Trips.base]]\n", properties=props[:1]) != []


def test_properties_do_not_change_a_note_with_text() -> None:
    body = "Some text about the game.\n"
    with_props = chunk_note("Game", body, properties=[("system", "Switch")])
    assert with_props == chunk_note("Game", body)
    assert chunk_note("Nothing", "", properties=[]) == []


def test_properties_chunk_is_embedded_and_found(tmp_path: Path) -> None:
    from vaultpilot.index.db import connect
    from vaultpilot.index.semantic import chunk_pending_notes
    from vaultpilot.index.sync import sync_vault

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Zelda.md").write_text(
        '---\nsystem: "[[Nintendo Switch]]"\ngenre:\n  - "[[Open world]]"\n---\n', "utf-8"
    )
    (vault / "Empty.md").write_text("---\n---\n", "utf-8")
    conn = connect(tmp_path / "index.db")
    sync_vault(conn, vault)
    assert chunk_pending_notes(conn) == 2
    texts = [r[0] for r in conn.execute("SELECT text FROM chunks")]
    assert texts == ["Zelda\n\nsystem: Nintendo Switch\ngenre: Open world"]
    conn.close()


def test_markdown_noise_is_removed() -> None:
    raw = (
        "See [[Database Migration#Cutover plan#Rollback]] and [[Priya Raman\\|Priya]], "
        "![[diagram.png|300]] [rules](Database%20Migration.md#Rollback) done. ^cutover-date\n"
        "%%hidden [[Old Ideas Dump]]%% <!-- html -->\n"
        "| a | b |\n|---|:-:|\n| **bold** | ==mark== |\n"
        "> [!warning] Collation gotcha\n"
    )
    clean = clean_markdown(raw)
    assert "Database Migration > Cutover plan > Rollback" in clean
    assert "Priya," in clean and "\\|" not in clean
    assert "diagram.png" not in clean and "rules done." in clean
    assert "^cutover-date" not in clean and "Old Ideas Dump" not in clean and "html" not in clean
    assert "---" not in clean and "**" not in clean and "==" not in clean
    assert "> Warning: Collation gotcha" in clean


def test_long_sections_are_cut_and_keep_their_header() -> None:
    paragraph = " ".join(f"word{i} is here." for i in range(60))
    body = "## Long\n\n" + "\n\n".join([paragraph] * 8)
    chunks = chunk_note("Big", body, max_tokens=128)
    assert len(chunks) > 4
    for c in chunks:
        assert c.heading == "Long"
        assert c.text.startswith("Big > Long\n\n")
        assert estimate_tokens(c.text) <= 128 + 24
    # Every word survives the cutting, in order.
    joined = " ".join(c.content for c in chunks)
    assert joined.split() == " ".join([paragraph] * 8).split()


def test_a_single_huge_line_is_cut_by_words_and_then_characters() -> None:
    words = "alpha " * 2000
    assert len(chunk_note("W", words, max_tokens=64)) > 10
    blob = "x" * 50_000
    pieces = chunk_note("B", blob, max_tokens=64)
    assert "".join(c.content for c in pieces) == blob


@pytest.mark.parametrize(
    "rel",
    [
        "Projects/Database Migration.md",
        "Travel/Japan Trip.md",
        "Reference/Postgres Cheatsheet.md",
        "Recipes/Crème Brûlée.md",
    ],
)
def test_chunks_fit_the_default_window(rel: str) -> None:
    for c in chunk_note(Path(rel).stem, body_of(rel)):
        assert estimate_tokens(c.text) <= DEFAULT_MAX_TOKENS + 24


def test_estimate_counts_cjk_characters_singly() -> None:
    assert estimate_tokens("お会計お願いします") == 9
    assert estimate_tokens("the bill, please") == 4
    assert estimate_tokens("supercalifragilistic") >= 3


def test_hashes_are_stable_and_follow_the_text() -> None:
    body = body_of("Recipes/Sourdough Starter.md")
    first = chunk_note("Sourdough Starter", body)
    again = chunk_note("Sourdough Starter", body)
    assert [c.text_hash for c in first] == [c.text_hash for c in again]
    assert first[0].text_hash == text_hash(first[0].text)
    edited = body.replace("Clint Yeastwood", "Bread Pitt")
    changed = chunk_note("Sourdough Starter", edited)
    differing = [
        a.heading for a, b in zip(first, changed, strict=True) if a.text_hash != b.text_hash
    ]
    assert differing == [""]  # only the section holding the name


def test_max_tokens_must_leave_room() -> None:
    with pytest.raises(ValueError):
        chunk_note("T", "text", max_tokens=8)
