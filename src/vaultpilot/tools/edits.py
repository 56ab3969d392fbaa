"""Exact edits of a note's text: the pure core of ``edit_note``.

``apply_edits(text, edits)`` replaces each ``old`` with its ``new``. Every ``old`` is matched
against the note as it was read (not against the result of earlier edits), must occur exactly
once (or, with ``replace_all``, at least once), and no two edits may touch the same characters;
then all of them apply together. Any miss raises ``InvalidArgumentError`` naming the edit, how
many matches there were, and the nearest lines of the note, and nothing is applied.

``edit_section(text, heading=..., block_id=..., content=..., position=...)`` inserts at the end
of, or replaces, a heading's section (its body up to the next heading of the same or a higher
level) or a block marked ``^id``.

No I/O here: the caller reads the note, applies, and writes with the version it read.
"""

from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import dataclass
from typing import Literal

from vaultpilot.errors import InvalidArgumentError

__all__ = ["Edit", "SectionPosition", "apply_edits", "edit_section"]

SectionPosition = Literal["end", "replace"]

_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.*?)[ \t]*(?:[ \t]#+[ \t]*)?$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_SHOWN = 3  # nearest lines shown for a miss


@dataclass(frozen=True, slots=True)
class Edit:
    old: str
    new: str
    replace_all: bool = False


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _nearest(text: str, old: str) -> str:
    """The note's lines most like ``old``'s first non-blank line, numbered, for a miss."""
    probe = next((ln.strip() for ln in old.splitlines() if ln.strip()), old.strip())
    lines = text.split("\n")
    scored = sorted(
        (
            (difflib.SequenceMatcher(None, probe, ln.strip(), autojunk=False).ratio(), i)
            for i, ln in enumerate(lines)
            if ln.strip()
        ),
        reverse=True,
    )[:_SHOWN]
    shown = [f"line {i + 1}: {lines[i][:160]!r}" for score, i in scored if score >= 0.3]
    return "Nearest lines: " + "; ".join(shown) + "." if shown else "No line looks like it."


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with every edit applied, or InvalidArgumentError and nothing applied."""
    if not edits:
        raise InvalidArgumentError(
            "edit_note needs 'edits': a list of {oldText, newText}, e.g. edits=[{oldText: "
            "'status: draft', newText: 'status: done'}]."
        )
    spans: list[tuple[int, int, int, str]] = []  # start, end, edit number, new text
    for number, edit in enumerate(edits, 1):
        if not edit.old:
            raise InvalidArgumentError(
                f"Edit {number} has an empty oldText. Give the exact text to replace; to add "
                "text, include a nearby line in oldText and repeat it in newText, or use "
                "append_note or 'heading'."
            )
        found: list[int] = []
        at = text.find(edit.old)
        while at >= 0:
            found.append(at)
            at = text.find(edit.old, at + len(edit.old))
        if not found:
            raise InvalidArgumentError(
                f"Edit {number}: oldText {_short(edit.old)} matches 0 times in the note; it must "
                "match the note's text exactly (spaces and line breaks too). "
                f"{_nearest(text, edit.old)} Copy the text from the note as read with "
                "obsidian_get_context. Nothing was changed."
            )
        if len(found) > 1 and not edit.replace_all:
            lines = ", ".join(str(_line_of(text, a)) for a in found[:10])
            raise InvalidArgumentError(
                f"Edit {number}: oldText {_short(edit.old)} matches {len(found)} times (lines "
                f"{lines}); it must match exactly once. Include more of the surrounding text to "
                "pick one, or set replaceAll=true to change every one. Nothing was changed."
            )
        spans.extend((a, a + len(edit.old), number, edit.new) for a in found)
    spans.sort()
    for (_s1, e1, n1, _), (s2, _e2, n2, _) in itertools.pairwise(spans):
        if s2 < e1:
            first, second = sorted((n1, n2))
            raise InvalidArgumentError(
                f"Edits {first} and {second} overlap (both change line {_line_of(text, s2)}). "
                "Merge them into one edit. Nothing was changed."
            )
    parts: list[str] = []
    pos = 0
    for start, end, _, new in spans:
        parts.append(text[pos:start])
        parts.append(new)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every ATX heading outside fenced code."""
    out: list[tuple[int, int, str]] = []
    fence = ""
    for i, line in enumerate(lines):
        mark = _FENCE.match(line)
        if fence:
            if mark and mark.group(1)[0] == fence[0] and len(mark.group(1)) >= len(fence):
                fence = ""
            continue
        if mark:
            fence = mark.group(1)
            continue
        m = _HEADING.match(line)
        if m:
            out.append((i, len(m.group(1)), m.group(2).strip()))
    return out


def _join(before: list[str], middle: list[str], after: list[str]) -> str:
    return "\n".join([*before, *middle, *after])


def _content_lines(content: str) -> list[str]:
    return content[:-1].split("\n") if content.endswith("\n") else content.split("\n")


def _section(text: str, heading: str, content: str, position: SectionPosition) -> str:
    lines = text.split("\n")
    wanted = heading.strip().lstrip("#").strip()
    heads = _headings(lines)
    hits = [h for h in heads if h[2].casefold() == wanted.casefold()]
    if not hits:
        have = ", ".join(repr(h[2]) for h in heads[:15]) or "none"
        raise InvalidArgumentError(
            f"The note has no heading {wanted!r}. Its headings: {have}. Give one of them in "
            "'heading' (without the #), or use 'edits'. Nothing was changed."
        )
    if len(hits) > 1:
        where = ", ".join(str(h[0] + 1) for h in hits)
        raise InvalidArgumentError(
            f"Heading {wanted!r} is ambiguous: {len(hits)} headings have it (lines {where}). Use "
            "'edits' with oldText from the section you mean. Nothing was changed."
        )
    start, level, _ = hits[0]
    end = next((i for i, lv, _ in heads if i > start and lv <= level), len(lines))
    body_end = end
    while body_end > start + 1 and not lines[body_end - 1].strip():
        body_end -= 1  # blank lines before the next heading stay where they are
    new = _content_lines(content)
    if position == "replace":
        return _join(lines[: start + 1], new, lines[body_end:])
    return _join(lines[:body_end], new, lines[body_end:])


def _block(text: str, block_id: str, content: str, position: SectionPosition) -> str:
    ident = block_id.strip().lstrip("^")
    if not re.fullmatch(r"[A-Za-z0-9-]+", ident):
        raise InvalidArgumentError(
            f"blockId {block_id!r} is not a block id: use letters, digits and '-', e.g. "
            "blockId='abc123' for a block ending in ^abc123."
        )
    lines = text.split("\n")
    mark = re.compile(rf"(?:^|\s)\^{re.escape(ident)}\s*$")
    hits = [i for i, ln in enumerate(lines) if mark.search(ln)]
    if len(hits) != 1:
        problem = "no block has" if not hits else f"{len(hits)} blocks have"
        raise InvalidArgumentError(
            f"In this note {problem} the id ^{ident}; it must be exactly one. Check the id in "
            "the note, or use 'edits'. Nothing was changed."
        )
    last = hits[0]
    first = last
    if not _LIST_ITEM.match(lines[last]):  # a paragraph: back to the blank line before it
        while first > 0 and lines[first - 1].strip() and not _HEADING.match(lines[first - 1]):
            first -= 1
    new = _content_lines(content)
    if position == "replace":
        if new and not mark.search(new[-1]):
            new[-1] = f"{new[-1]} ^{ident}"  # keep the id, so links to the block still work
        return _join(lines[:first], new, lines[last + 1 :])
    return _join(lines[: last + 1], new, lines[last + 1 :])


def edit_section(
    text: str,
    *,
    heading: str | None,
    block_id: str | None,
    content: str,
    position: SectionPosition,
) -> str:
    """Insert ``content`` at the end of (or replace) a heading's section or a ``^id`` block."""
    if heading and block_id:
        raise InvalidArgumentError("Give either 'heading' or 'blockId', not both.")
    if heading:
        return _section(text, heading, content, position)
    if block_id:
        return _block(text, block_id, content, position)
    raise InvalidArgumentError("Give 'heading' or 'blockId' with 'content'.")  # caller checks
