"""Where links and tags do not count: code, math and HTML (semantics rules 8, 10, 17).

``mask(text)`` returns a string of the same length in which every character inside a fenced or
indented code block, an HTML block, an inline code span, ``$…$``/``$$…$$`` math, a ``%%…%%``
comment or an HTML comment is replaced by a space (newlines are kept). Offsets and line numbers in
the masked text are therefore the offsets and line numbers of the original, and the link and tag
scanners can run plain regular expressions over it.

``mask(text, comments=False)`` leaves ``%%…%%`` comments as they are: Obsidian's metadata cache
indexes the links and tags written inside them (``docs/obsidian-rules.md``), but not headings,
list items or block ids, for which ``mask_comments`` then blanks them.
"""

from __future__ import annotations

import re

__all__ = ["blank", "mask", "mask_comments"]

# A fence line: up to three spaces, optional blockquote/callout markers, then ``` or ~~~.
_FENCE = re.compile(r"^(?:[ ]{0,3}>[ ]?)*[ ]{0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)
# Inline constructs, matched left to right so whichever opens first wins. Every alternative
# starts with a literal character (the look-behinds come after it: '`(?<!``)' is a backtick not
# preceded by one), so the regex engine skips ahead to the next '`', '%', '<' or '$' in a tight
# loop instead of trying the pattern at every position (3-4x faster on typical notes).
_INLINE = re.compile(
    r"`(?<!``)(?P<ticks>`*)(?!`)(?:[^\n]|\n(?![ \t]*\n))*?(?<!`)`(?P=ticks)(?!`)"
    r"|%%.*?(?:%%|\Z)"
    r"|<!--.*?(?:-->|\Z)"
    r"|\$\$.+?\$\$"
    r"|\$(?<![\\$]\$)(?=[^\s$])[^\n$]*?(?<=[^\s\\])\$(?!\d)",
    re.DOTALL,
)
# Where indented code can start, searched in "\n\n" + text: an indented line with text after a
# blank line or first in the note (what ``_indented_ranges`` requires; nested list items, the
# common indented lines, are not). It starts with a literal, so the engine skips ahead.
_INDENTED_START = re.compile(r"\n[^\S\n]*\n(?: {4}|\t)[^\n]*\S")
# HTML blocks (CommonMark 4.6): markdown inside is not rendered (rule 17) and tags there do not
# count (rule 10). Kind 1 (<pre>, <script>, <style>, <textarea>) runs to its closing tag; kind 6
# (block-level tag names) and kind 7 (any complete tag alone on its line, not interrupting a
# paragraph) run to the next blank line. Comments (kind 2) are handled with the inline constructs.
_HTML_START = re.compile(r"^[ ]{0,3}<[A-Za-z/]", re.MULTILINE)
_HTML_OPEN_1 = re.compile(r"[ ]{0,3}<(?:pre|script|style|textarea)(?:[ \t>]|$)", re.IGNORECASE)
_HTML_CLOSE_1 = re.compile(r"</(?:pre|script|style|textarea)>", re.IGNORECASE)
_HTML_OPEN_6 = re.compile(
    r"[ ]{0,3}</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col"
    r"|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame"
    r"|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav"
    r"|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th"
    r"|thead|title|tr|track|ul)(?:[ \t>]|/>|$)",
    re.IGNORECASE,
)
_HTML_OPEN_7 = re.compile(
    r"[ ]{0,3}(?:<[A-Za-z][A-Za-z0-9-]*"
    r"(?:[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*"
    r"(?:[ \t]*=[ \t]*(?:[^\s\"'=<>`]+|'[^'\n]*'|\"[^\"\n]*\"))?)*"
    r"[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>)[ \t]*$"
)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]")


def blank(segment: str) -> str:
    """Spaces of the same length as ``segment``, keeping its newlines."""
    if "\n" not in segment:
        return " " * len(segment)
    return "\n".join(" " * len(part) for part in segment.split("\n"))


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    open_at = -1
    open_char = ""
    open_len = 0
    for m in _FENCE.finditer(text):
        fence = m.group(1)
        if open_at < 0:
            if fence[0] == "`" and "`" in m.group(2):
                continue  # an info string may not contain a backtick: not a fence
            open_at, open_char, open_len = m.start(), fence[0], len(fence)
        elif fence[0] == open_char and len(fence) >= open_len and not m.group(2).strip():
            ranges.append((open_at, m.end()))
            open_at = -1
    if open_at >= 0:  # an unclosed fence runs to the end of the note
        ranges.append((open_at, len(text)))
    return ranges


def _indented_ranges(text: str) -> list[tuple[int, int]]:
    """Indented code: indented lines after a blank line, outside list context."""
    ranges: list[tuple[int, int]] = []
    lines = text.split("\n")
    offset = 0
    prev_blank = True
    list_context = False
    start = -1
    for line in lines:
        stripped = line.strip()
        indented = line.startswith(("    ", "\t"))
        if start >= 0:
            if indented or not stripped:
                offset += len(line) + 1
                continue
            ranges.append((start, offset - 1))
            start = -1
        if indented and stripped and prev_blank and not list_context:
            start = offset
        elif stripped:
            list_context = bool(_LIST_ITEM.match(line)) or (indented and list_context)
        prev_blank = not stripped
        offset += len(line) + 1
    if start >= 0:
        ranges.append((start, len(text)))
    return ranges


def _html_block_ranges(text: str) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    offset = 0
    prev_blank = True
    start = -1
    to_closing_tag = False
    for line in text.split("\n"):
        is_blank = not line.strip()
        if start < 0:
            if _HTML_OPEN_1.match(line):
                start, to_closing_tag = offset, True
            elif _HTML_OPEN_6.match(line) or (prev_blank and _HTML_OPEN_7.match(line)):
                start, to_closing_tag = offset, False
        if start >= 0:
            if to_closing_tag and _HTML_CLOSE_1.search(line):
                ranges.append((start, offset + len(line)))
                start = -1
            elif not to_closing_tag and is_blank:
                ranges.append((start, offset))
                start = -1
        prev_blank = is_blank
        offset += len(line) + 1
    if start >= 0:
        ranges.append((start, len(text)))
    return ranges


def _apply(text: str, ranges: list[tuple[int, int]]) -> str:
    if not ranges:
        return text
    parts: list[str] = []
    pos = 0
    for start, stop in ranges:
        a = max(start, pos)
        if stop <= a:
            continue
        parts.append(text[pos:a])
        parts.append(blank(text[a:stop]))
        pos = stop
    parts.append(text[pos:])
    return "".join(parts)


_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)


def _blank_match(m: re.Match[str]) -> str:
    return blank(m.group())


def _blank_unless_comment(m: re.Match[str]) -> str:
    # The comment still takes part in the left-to-right match, so a '`' or '$' inside it does
    # not open a code span or math that would swallow text after it.
    group = m.group()
    return group if group.startswith("%%") else blank(group)


def mask(text: str, *, comments: bool = True) -> str:
    """Blank out code, HTML, math and (unless ``comments=False``) ``%%`` comments."""
    if "```" in text or "~~~" in text:
        text = _apply(text, _fenced_ranges(text))
    if (
        "\n    " in text or "\n\t" in text or text.startswith(("    ", "\t"))
    ) and _INDENTED_START.search("\n\n" + text):
        text = _apply(text, _indented_ranges(text))
    if "<" in text and _HTML_START.search(text):
        text = _apply(text, _html_block_ranges(text))
    if "`" in text or "%%" in text or "$" in text or "<!--" in text:
        text = _INLINE.sub(_blank_match if comments else _blank_unless_comment, text)
    return text


def mask_comments(masked: str) -> str:
    """Blank the ``%%`` comments left in text from ``mask(text, comments=False)``."""
    return _COMMENT.sub(_blank_match, masked) if "%%" in masked else masked
