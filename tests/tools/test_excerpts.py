"""Detailed search excerpts never put highlight markers inside a link (spec deviation: the
excerpt showed ``[[**Database** **Migration**|...]]``, which is no longer a link)."""

from __future__ import annotations

import random
import re

from vaultpilot.index.queries import highlight
from vaultpilot.tools import ToolContext, is_error
from vaultpilot.tools.notes import around_match, excerpt_of

from .conftest import query, write

_BROKEN = re.compile(r"\[\[[^\]]*\*\*|\]\([^)]*\*\*")


def test_detailed_excerpt_keeps_links_whole(ctx: ToolContext) -> None:
    write(ctx.root, "Hangar Log.md", "# Hangar Log\n\nNotes on [[Zeppelin Hangar|the hangar]].\n")
    result = query(ctx, queryType="semantic_search", query="zeppelin hangar", limit=5)
    assert not is_error(result), result
    excerpt = next(r["excerpt"] for r in result["results"] if r["path"] == "Hangar Log.md")
    assert not _BROKEN.search(excerpt), excerpt
    assert "**[[Zeppelin Hangar|the hangar]]**" in excerpt


# The excerpts tidy only the lines around what they show; on any note they must read as if the
# whole note had been tidied (the definitions below, kept plain on purpose).
_SPACE = re.compile(r"\s+")
_MARK = re.compile(r"^[ ]{0,3}#{1,6}[ \t]+", re.MULTILINE)


def _whole_excerpt(body: str, title: str, chars: int = 300) -> str:
    text = body.lstrip()
    first, _, rest = text.partition("\n")
    if first.lstrip("# ").strip().lower() == title.lower() and first.startswith("#"):
        text = rest
    text = _SPACE.sub(" ", _MARK.sub("", text)).strip()
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", 0, chars)
    return text[: cut if cut > chars // 2 else chars].rstrip(" ,;:") + "…"


def _whole_around(body: str, words: list[str], chars: int = 300) -> str:
    flat = _SPACE.sub(" ", _MARK.sub("", body))
    low = flat.lower()
    at = min(i for i in (low.find(w.lower()) for w in words) if i >= 0)
    start = max(flat.rfind(" ", 0, max(at - chars // 3, 0)) + 1, 0) if at > chars // 3 else 0
    end = flat.find(" ", start + chars)
    end = len(flat) if end < 0 else end
    text = highlight(flat[start:end].strip(), words)
    return ("…" if start > 0 else "") + text + ("…" if end < len(flat) else "")


def _notes(seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = ["alpha", "Beta", "gamma", "[[Delta note]]", "epsilon,", "zeta.", "eta", "theta;"]
    notes = []
    for _ in range(300):
        lines = []
        for _ in range(rng.randrange(1, 200)):
            mark = rng.choice(["", "", "", "# ", "## ", "   ### ", "- ", "\t", "\xa0", "\u2028"])
            picks = range(rng.randrange(0, 25))
            words = " ".join("Omega" if rng.random() < 0.003 else rng.choice(vocab) for _ in picks)
            lines.append(mark + words + rng.choice(["", " ", "  \t"]))
        notes.append("\n".join(lines) + rng.choice(["", "\n", "\n\n"]))
    return notes


def test_excerpt_of_reads_as_the_whole_note_tidied() -> None:
    for body in _notes(1):
        for title in ("Alpha", "gamma eta", "Nothing"):
            assert excerpt_of(body, title) == _whole_excerpt(body, title)


def test_around_match_reads_as_the_whole_note_tidied() -> None:
    checked = far = 0
    for body in _notes(2):
        for words in (["zeta"], ["theta", "eta"], ["Delta"], ["omega"], ["omega", "Delta"]):
            if words[0].lower() not in body.lower():
                continue
            snippet = " ".join(f"**{w}**" for w in words)
            assert around_match(body, snippet) == _whole_around(body, words)
            checked += 1
            far += body.lower().find(words[0].lower()) > 2000  # past the lines tidied first
    assert checked > 500 and far > 50


def test_a_match_in_bold_text_is_not_marked_again(ctx: ToolContext) -> None:
    # The note's own **bold** and the match markers must stay apart: FTS5 marks words inside
    # bold text too (``****20** **April****``), which read back as ``****20 April****``.
    write(
        ctx.root,
        "Trip Plan.md",
        "# Trip Plan\n\nWe leave around **20 April** for Kyoto, then __Nara by train__.\n",
    )
    for words, expected in [
        ("20 April", "around **20 April** for Kyoto"),
        ("april kyoto", "around **20 April** for **Kyoto**, then"),
        ("nara train", "then __Nara by train__."),
    ]:
        result = query(ctx, queryType="semantic_search", query=words, limit=5)
        assert not is_error(result), result
        excerpt = next(r["excerpt"] for r in result["results"] if r["path"] == "Trip Plan.md")
        assert expected in excerpt, (words, excerpt)
        assert "***" not in excerpt and "**__" not in excerpt, (words, excerpt)


def test_around_match_leaves_bold_text_as_written() -> None:
    body = "Intro line.\n\nSome **bold zeta** and zeta again, *kappa* then **theta**.\n"
    assert around_match(body, "**bold** **zeta**") == (
        "Intro line. Some **bold zeta** and **zeta** again, *kappa* then **theta**."
    )
    assert around_match(body, "***kappa***") == (
        "Intro line. Some **bold zeta** and zeta again, ***kappa*** then **theta**."
    )
    # An excerpt that starts inside bold text still knows it is bold.
    long = "word " * 200 + "**start " + "filler " * 60 + "omega end** tail\n"
    shown = around_match(long, "**omega**")
    assert "omega end** tail" in shown and "**omega**" not in shown


def test_bold_text_changes_only_where_the_markers_go() -> None:
    # Notes full of the note's own emphasis: the excerpt is the same text as without regard to
    # bold (every "*" aside), and never doubles markers the note does not double itself.
    rng = random.Random(7)
    vocab = ["alpha", "**gamma**", "**two words**", "__under line__", "*ital*", "* item", "**"]
    vocab += ["[[Delta note]]", "[**x** y](dest)", "zeta.", "eta", "***both***", "__init__"]
    checked = 0
    for _ in range(400):
        lines = [
            rng.choice(["", "", "# ", "- ", "\t"])
            + " ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 15)))
            for _ in range(rng.randrange(1, 60))
        ]
        body = "\n".join(lines)
        for words in (["zeta"], ["gamma"], ["two"], ["eta", "alpha"], ["line"], ["ital"]):
            if words[0] not in body.lower():
                continue
            shown = around_match(body, " ".join(f"**{w}**" for w in words))
            assert shown.replace("*", "") == _whole_around(body, words).replace("*", "")
            assert "****" not in shown or "****" in body, shown
            checked += 1
    assert checked > 1000
