"""Parse one note's text into what Obsidian's metadata cache knows about it.

``parse_note(path, text)`` is pure: text in, a ``ParsedNote`` out. It finds the frontmatter
(properties, tags, aliases, links in properties; invalid YAML recorded, not fatal), inline tags,
wikilinks, markdown links and embeds, headings and block ids, each with its 1-based line number and
character offsets, following ``reference/obsidian-semantics.md`` (the rule numbers in comments
refer to it) as corrected by ``docs/obsidian-rules.md``. Links and tags inside code, math and
HTML are not counted; inside ``%%`` comments they are (headings and block ids there are not), as
in Obsidian's own metadata cache (see ``markdown``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple
from urllib.parse import unquote

from vaultpilot.vault.frontmatter import (
    Frontmatter,
    frontmatter_aliases,
    frontmatter_tags,
    split_frontmatter,
)
from vaultpilot.vault.markdown import mask, mask_comments
from vaultpilot.vault.resolve import note_title

# The version of the rules this module reads a note by. Raise it whenever a change makes a note
# parse differently (a link, tag, property, heading or block counted or not): an index built by
# older rules is then rebuilt at its next full sync instead of keeping what they found.
# 1: %% comments masked; 2: links and tags in %% comments count, template placeholders read as
# text, indented code first in a note is code.
PARSE_RULES = 2

__all__ = [
    "PARSE_RULES",
    "Block",
    "Heading",
    "Link",
    "ParsedNote",
    "Tag",
    "is_valid_tag",
    "parse_link_text",
    "parse_note",
    "scan_links",
]

LinkKind = Literal["link", "embed", "property"]
LinkSyntax = Literal["wiki", "markdown"]


class Link(NamedTuple):
    # Link, Tag, Heading and Block are NamedTuples rather than frozen dataclasses: a large vault
    # yields hundreds of thousands of them, and a tuple is several times cheaper to build.
    """One link as written: target text (trimmed, decoded), subpath, alias, where it is."""

    target: str  # "" for a link to a heading or block of the same note ([[#H]])
    subpath: str  # "" or "#Heading", "#H1#H2", "#^blockid"
    alias: str | None
    kind: LinkKind
    syntax: LinkSyntax
    line: int  # 1-based line in the file
    start: int  # offset of the first character of the link in the file text
    end: int  # offset just past it
    prop: str | None = None  # the property key when kind == "property"


class Tag(NamedTuple):
    name: str  # without '#', as written
    line: int  # 1-based; 0 for frontmatter tags
    source: Literal["frontmatter", "inline"]


class Heading(NamedTuple):
    level: int
    text: str
    line: int


class Block(NamedTuple):
    block_id: str
    line: int


@dataclass(frozen=True, slots=True)
class ParsedNote:
    path: str
    title: str
    properties: dict[str, Any]
    frontmatter_error: str | None
    aliases: tuple[str, ...]
    tags: tuple[Tag, ...]
    links: tuple[Link, ...]
    headings: tuple[Heading, ...]
    blocks: tuple[Block, ...]
    body: str
    body_offset: int
    word_count: int


# Rule 1-2: [[target#subpath|alias]]; a single ']' does not end the target, '[[' cannot occur.
# (Patterns start with a literal, not '!?' or a look-behind, so the regex engine can skip ahead
# to candidates; the character before a match is checked in Python.)
_WIKI = re.compile(r"\[\[((?:[^\[\]\n]|\](?!\])|\[(?!\[))+?)\]\]")
# Rule 4: [text](dest) or [text](<dest with spaces>), optional title; balanced parentheses.
_MDLINK = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(<[^<>\n]+>|(?:[^\s()]|\([^\s()]*\))+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Rules 9-10: '#' after the line start, whitespace (incl. NBSP, U+3000) or '_'; tag characters
# are anything but whitespace and punctuation other than _ - /.
_TAG_CHARS = r"[^\s!-,.:-@\[-^`{-~\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u2018-\u201f]"
_TAG = re.compile(rf"#({_TAG_CHARS}+(?:#{_TAG_CHARS}+)*)")
# A heading line, matched in "\n" + text: a pattern that starts with a literal '\n' (rather than
# '^') is tried only at line starts, which the regex engine finds in a tight loop.
_HEADING = re.compile(r"\n[ ]{0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
# Rule 14: ' ^id' at the end of a line (or '^id' alone on its line); Latin letters, digits, '-'.
_BLOCK = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)
_VALID_TAG = re.compile(rf"^{_TAG_CHARS}+$")
# Rule 10: a GFM table is a row containing '|' followed by a delimiter row such as |---|:-:|.
_QUOTE_PREFIX = re.compile(r"^(?:[ ]{0,3}>[ ]?)*")
_DELIM_CHARS = frozenset("|-: \t")


def is_valid_tag(tag: str) -> bool:
    """Rule 9: allowed characters, at least one non-digit, no trailing '/'."""
    return (
        bool(tag)
        and bool(_VALID_TAG.match(tag))
        and not tag.replace("/", "").isdigit()
        and not tag.endswith("/")
        and not tag.startswith("/")
    )


def parse_link_text(inner: str) -> tuple[str, str, str | None]:
    """Split the inside of ``[[…]]`` into (target, subpath, alias), rules 1, 2 and 4."""
    alias: str | None = None
    pipe = inner.find("|")
    if pipe >= 0:
        alias = inner[pipe + 1 :]
        inner = inner[:pipe]
        if inner.endswith("\\"):  # an escaped pipe inside a table: [[X\|y]]
            inner = inner[:-1]
    hash_at = inner.find("#")
    if hash_at >= 0:
        target, subpath = inner[:hash_at], inner[hash_at:]
    else:
        target, subpath = inner, ""
    return target.strip(), subpath.strip(), alias


def _line_of(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)


def _line_starts(text: str) -> list[int]:
    return [m.end() for m in re.finditer("\n", text)]


def scan_links(
    masked: str, base: int, starts: list[int], original: str | None = None
) -> list[Link]:
    """Wikilinks, markdown links and embeds in already-masked text; offsets shifted by base.

    The links are found in ``masked``; their text is read from ``original`` (the same text
    unmasked) when given, so inline code inside a link (``[[#`code`]]``) is kept.
    """
    src = masked if original is None else original
    links: list[Link] = []
    if "[[" in masked:
        for m in _WIKI.finditer(masked):
            inner = src[m.start(1) : m.end(1)]
            target, subpath, alias = parse_link_text(inner)
            if not target and not subpath and alias is None:
                continue  # '[[ ]]' is text; '[[|alias]]' is an (unresolved) link in Obsidian
            at = m.start()
            embed = at > 0 and masked[at - 1] == "!"
            pos = base + at - embed
            links.append(
                Link(
                    target,
                    subpath,
                    alias,
                    "embed" if embed else "link",
                    "wiki",
                    _line_of(starts, pos) + 1,
                    pos,
                    base + m.end(),
                )
            )
    if "](" in masked:
        for m in _MDLINK.finditer(masked):
            dest = src[m.start(2) : m.end(2)]
            if dest.startswith("<"):
                dest = dest[1:-1]
            if _SCHEME.match(dest) or dest.startswith("//"):
                continue  # an external URL, not a link into the vault
            # Split off the fragment before decoding: '%23' is a '#' that belongs to the name.
            hash_at = dest.find("#")
            target, subpath = (dest[:hash_at], dest[hash_at:]) if hash_at >= 0 else (dest, "")
            target, subpath = unquote(target), unquote(subpath)
            if not target and not subpath:
                continue
            at = m.start()
            embed = at > 0 and masked[at - 1] == "!"
            pos = base + at - embed
            links.append(
                Link(
                    target.strip(),
                    subpath,
                    src[m.start(1) : m.end(1)],
                    "embed" if embed else "link",
                    "markdown",
                    _line_of(starts, pos) + 1,
                    pos,
                    base + m.end(),
                )
            )
    links.sort(key=lambda link: link.start)
    return links


_YAML_KEY = re.compile(
    r"^(?![#\s-])(\"[^\"\n]*\"|'[^'\n]*'|[^:\n]+?)[ \t]*:(?:[ \t]|$)", re.MULTILINE
)


def _property_links(props: dict[str, Any], fm: Frontmatter, text: str) -> list[Link]:
    """Rule 12: internal links written (quoted) as property values are links too.

    What counts is decided by the parsed values (a link must be inside a string value; YAML
    comments and unquoted ``[[x]]`` flow lists do not count). Where each one is written is
    found by scanning the raw YAML under its key, so two equal values get their own offsets.
    """
    expected: dict[tuple[str, str], int] = {}

    def visit(key: str, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                visit(key, item)
        elif isinstance(value, str) and ("[[" in value or "](" in value):
            for link in scan_links(value, 0, []):
                raw = value[link.start : link.end]
                expected[(key, raw)] = expected.get((key, raw), 0) + 1

    for key, value in props.items():
        visit(key, value)
    if not expected:
        return []
    yaml_text = fm.yaml_text
    keys = [(m.start(), m.group(1).strip("\"'")) for m in _YAML_KEY.finditer(yaml_text)]
    out: list[Link] = []
    for link in scan_links(yaml_text, 0, []):
        owner = next((k for at, k in reversed(keys) if at <= link.start), None)
        raw = yaml_text[link.start : link.end]
        if owner is None or expected.get((owner, raw), 0) <= 0:
            continue
        expected[(owner, raw)] -= 1
        pos = fm.start + link.start
        out.append(
            link._replace(
                kind="property",
                line=text.count("\n", 0, pos) + 1,
                start=pos,
                end=fm.start + link.end,
                prop=owner,
            )
        )
    # Values written with YAML escapes ('' or \") do not appear verbatim: keep them, unplaced.
    key_lines = {k: text.count("\n", 0, fm.start + at) + 1 for at, k in keys}
    for (key, raw), left in expected.items():
        for link in scan_links(raw, 0, [])[:1] * left:
            unplaced = link._replace(kind="property", line=key_lines.get(key, 1), prop=key)
            out.append(unplaced._replace(start=-1, end=-1))
    out.sort(key=lambda item: (item.start < 0, item.start))
    return out


def _is_delimiter_row(line: str) -> bool:
    row = _QUOTE_PREFIX.sub("", line)
    return "|" in row and "-" in row and set(row) <= _DELIM_CHARS


def _open_table_cells(masked: str) -> str:
    """Turn the pipes of table rows into spaces: a tag counts at the start of a cell (rule 10)."""
    if "|" not in masked:
        return masked
    lines = masked.split("\n")
    in_table = False
    for i, line in enumerate(lines):
        if not line.strip():
            in_table = False
        elif not in_table and "|" in line and i + 1 < len(lines):
            in_table = _is_delimiter_row(lines[i + 1])
        if in_table:
            lines[i] = line.replace("|", " ")
    return "\n".join(lines)


def _underscores_before(text: str, pos: int) -> int:
    n = 0
    while pos - n > 0 and text[pos - n - 1] == "_":
        n += 1
    return n


def _inline_tags(text: str, base: int, starts: list[int]) -> list[Tag]:
    """Rules 9-10: inline tags in masked text; ``#a#b`` gives two tags."""
    tags: list[Tag] = []
    for m in _TAG.finditer(text):
        at = m.start()
        if at > 0 and not (text[at - 1].isspace() or text[at - 1] == "_"):
            continue  # rule 10: '#' must follow the line start, whitespace or '_'
        line = _line_of(starts, base + m.start()) + 1
        parts = m.group(1).split("#")
        lead = _underscores_before(text, m.start())
        if lead:
            # '_#a_' is a tag in emphasis: the closing '_' belongs to the emphasis (OBS-T).
            last = parts[-1]
            parts[-1] = last[: max(len(last.rstrip("_")), len(last) - lead)]
        for raw in parts:
            name = raw.rstrip("/")
            if is_valid_tag(name):
                tags.append(Tag(name, line, "inline"))
    return tags


def _heading_text(body: str, m: re.Match[str]) -> str:
    """The heading's text as written: inline code in it (masked when found) is kept.

    ``m`` is a ``_HEADING`` match in ``"\n" + masked body``: its offsets are one too high.
    """
    if m.group(2) is None:
        return ""
    return body[m.start(2) - 1 : m.end(2) - 1].strip()


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse a note (``\\n`` line endings) at vault path ``path``."""
    fm = split_frontmatter(text)
    body = text[fm.end :]
    masked = mask(body, comments=False)  # links and tags in %% comments count (see markdown)
    starts = _line_starts(text)
    base = fm.end

    links = _property_links(fm.properties, fm, text) if fm.properties else []
    links.extend(scan_links(masked, base, starts, body))

    tags: list[Tag] = [Tag(t, 0, "frontmatter") for t in frontmatter_tags(fm.properties)]
    if "#" in masked:
        tags.extend(_inline_tags(_open_table_cells(masked), base, starts))

    headings: list[Heading] = []
    blocks: list[Block] = []
    structure = mask_comments(masked)  # no headings or block ids inside comments
    if "#" in structure:
        for m in _HEADING.finditer("\n" + structure):
            line = _line_of(starts, base + m.start()) + 1  # m.start(): the line start's offset
            headings.append(Heading(len(m.group(1)), _heading_text(body, m), line))
    if "^" in structure:
        embed_ends = {lk.end - base for lk in links if lk.kind == "embed" and lk.syntax == "wiki"}
        for m in _BLOCK.finditer(structure):
            at = m.start()
            # Rule 14: a space before '^' is required, except right after an embed
            # ('![[img.png]]^id', used as a block id in Obsidian's help vault).
            if at > 0 and structure[at - 1] not in " \t\n" and at not in embed_ends:
                continue
            blocks.append(Block(m.group(1), _line_of(starts, base + m.start()) + 1))

    return ParsedNote(
        path=path,
        title=note_title(path),
        properties=fm.properties,
        frontmatter_error=fm.error,
        aliases=tuple(frontmatter_aliases(fm.properties)),
        tags=tuple(tags),
        links=tuple(links),
        headings=tuple(headings),
        blocks=tuple(blocks),
        body=body,
        body_offset=base,
        word_count=len(body.split()),
    )
