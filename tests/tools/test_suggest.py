"""The notes suggested when a named note does not exist: through ``read_note`` on the example
vault and a real index, and ``similar_notes`` on titles built to share only a common word."""

from __future__ import annotations

import pytest

from vaultpilot.tools import ToolContext
from vaultpilot.tools.suggest import similar_notes

from .conftest import read, write


def _suggested(ctx: ToolContext, name: str) -> str:
    result = read(ctx, contextType="read_note", target=name)
    error = str(result["error"])
    assert f"Note '{name}' doesn't exist." in error, error
    return error.split("Similar notes: ", 1)[1].split(". Find", 1)[0] if "Similar" in error else ""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("No Such Note", ""),  # shares only "Note" with Templates/Daily Note.md
        ("Weekly Note Ideas", ""),
        ("Databse Migration", "Projects/Database Migration.md"),  # a typo
        ("Migration", "Projects/Database Migration.md"),  # the distinctive word
        ("Sourdough Starters Guide", "Recipes/Sourdough Starter.md"),
        ("creme brulee", "Recipes/Crème Brûlée.md"),  # accents aside
        ("Norway Fjord", "Travel/Norway Fjords.md"),
    ],
)
def test_read_note_suggests_only_real_matches(ctx: ToolContext, name: str, expected: str) -> None:
    assert _suggested(ctx, name) == expected


def test_a_word_many_titles_share_does_not_carry_a_suggestion(ctx: ToolContext) -> None:
    for title in ("Meeting Notes", "Reading Notes", "Garden Notes", "Travel Notes"):
        write(ctx.root, f"Notes/{title}.md", f"# {title}\n")
    assert _suggested(ctx, "Cooking Notes") == ""
    assert _suggested(ctx, "Garden Note").startswith("Notes/Garden Notes.md")


def test_similar_notes_ranks_by_how_much_of_the_name_matches() -> None:
    paths = ["A/Plan.md", "Project Plan.md", "Project Plan 2025.md", "image.png", "Plan B.md"]
    assert similar_notes("Project Plan", paths) == ["Project Plan.md", "Project Plan 2025.md"]
    assert similar_notes("Projet Plan", paths)[0] == "Project Plan.md"  # a close spelling
    assert similar_notes("", paths) == [] and similar_notes("Plan", []) == []
    assert "image.png" not in similar_notes("image", paths)  # notes only
