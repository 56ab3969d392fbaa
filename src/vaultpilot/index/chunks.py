"""Split a note into embedding chunks: one per heading section, size-bounded. Pure.

``chunk_note(title, body)`` takes a note's title and its body (the text after the frontmatter, as
the index stores it in ``notes_fts``) and returns ``Chunk`` values in reading order:

* A section is the text under a heading down to the next heading of any level; the text before
  the first heading is a section with an empty heading path. Headings are found by the vault
  parser, so a ``# comment`` inside a code fence never starts a section.
* Each chunk's ``text`` (what is embedded) starts with a header line, the note title and the
  heading path joined by `` > `` (an H1 equal to the title is not repeated), then a blank line,
  then the section's text with Markdown noise removed: wikilinks and Markdown links become their
  display text, embeds, block ids, ``%%comments%%``, HTML comments, table delimiter rows and
  emphasis markers go. Sections with no text of their own (a heading directly followed by a
  sub-heading) produce no chunk; their heading lives on in the children's paths.
* A section longer than ``max_tokens`` (estimated by ``estimate_tokens``, calibrated against the
  default model's WordPiece tokenizer so that chunks fit its 256-token window) is cut at
  paragraph breaks, then line breaks, then between words; every piece keeps the header.
* A note whose body gives no chunk (only frontmatter, or only embeds) but has properties gets
  one chunk of its properties instead, ``key: value, value`` a line (links as their display
  text), so a note described only by its properties (a book, a place, a game) can still be found
  by meaning. A note with neither gives no chunk.
* ``text_hash`` is a digest of ``text``: the embedding pass re-embeds a chunk only when it changes.

``CHUNKER_VERSION`` changes whenever the output for the same input changes, so stored chunks are
rebuilt.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from vaultpilot.vault.parse import parse_note

__all__ = [
    "CHUNKER_VERSION",
    "DEFAULT_MAX_TOKENS",
    "Chunk",
    "chunk_note",
    "clean_markdown",
    "estimate_tokens",
    "text_hash",
]

CHUNKER_VERSION = 2  # 2: a properties chunk for notes whose body gives none
# The default model reads 256 tokens; the estimate can be ~10% low on unusual text, and shorter
# chunks retrieve more precisely (measured on the evaluation), so aim below the window.
DEFAULT_MAX_TOKENS = 200
_MIN_PIECE_TOKENS = 24  # a cut never leaves a tail shorter than this; it joins its neighbour

_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_WIKI = re.compile(r"\[\[([^\]\|\n]*?)(?:\\?\|([^\]\n]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\]\n]*)\]\((?:<[^>\n]*>|[^)\s]*)(?:\s+\"[^\"\n]*\")?\)")
_BLOCK_ID = re.compile(r"(?:^|[ \t])\^[A-Za-z0-9-]+[ \t]*$", re.MULTILINE)
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)
_DELIM_CELL = re.compile(r"^[ \t]*:?-+:?[ \t]*$")
_CALLOUT = re.compile(r"^((?:[ \t]*>)+[ \t]*)\[!([\w-]+)\][+-]?[ \t]*", re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__|~~|==")
_BLANKS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# Token estimate: a word costs one token per ~6 letters (WordPiece splits rare words), every
# digit group and punctuation mark one, every CJK character one (BERT splits them singly).
_TOKENS = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
    r"|[^\W\d_]+|\d+|[^\w\s]"
)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a note to embed."""

    seq: int  # position in the note, from 0
    heading: str  # the heading path joined by " > " ("" before the first heading)
    text: str  # what is embedded: header line, blank line, cleaned section text
    text_hash: str

    @property
    def content(self) -> str:
        """The section text without the header line (for snippets)."""
        return self.text.split("\n\n", 1)[1] if "\n\n" in self.text else ""


def text_hash(text: str) -> str:
    """A short, stable digest of a chunk's text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def estimate_tokens(text: str) -> int:
    """About how many WordPiece tokens the default model sees in ``text`` (no tokenizer)."""
    total = 0
    for m in _TOKENS.finditer(text):
        piece = m.group()
        total += 1 + (len(piece) - 1) // 6 if piece[0].isalpha() and len(piece) > 1 else 1
    return total


def clean_markdown(text: str) -> str:
    """Section text as a reader sees it: link syntax, comments and layout markers removed."""
    text = _COMMENT.sub(" ", text)
    text = _EMBED.sub("", text)
    text = _WIKI.sub(_wiki_display, text)
    text = _MDLINK.sub(lambda m: m.group(1), text)
    text = _BLOCK_ID.sub("", text)
    text = _CALLOUT.sub(lambda m: f"{m.group(1)}{m.group(2).capitalize()}: ", text)
    text = _EMPHASIS.sub("", text)
    lines = [ln.rstrip() for ln in text.split("\n") if not _is_delimiter_row(ln)]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def _is_delimiter_row(line: str) -> bool:
    """A table's ``|---|:-:|`` row (at least one ``|``, every cell dashes and colons)."""
    if "|" not in line or "-" not in line:
        return False
    return all(_DELIM_CELL.match(cell) for cell in line.strip().strip("|").split("|"))


def _wiki_display(m: re.Match[str]) -> str:
    if m.group(2):
        return m.group(2).strip()
    target = m.group(1).strip()
    note, _, sub = target.partition("#")
    note = note.rsplit("/", 1)[-1]
    if note.lower().endswith(".md"):
        note = note[:-3]
    sub = sub.replace("#", " > ").lstrip("^")
    return f"{note} > {sub}" if note and sub else note or sub


def _sections(body: str) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, raw text) for each section, in order."""
    # A leading newline keeps a body that starts with '---' from being read as frontmatter;
    # heading line n of the parsed text is body line n - 2 (0-based).
    headings = parse_note("body.md", "\n" + body).headings
    lines = body.split("\n")
    out: list[tuple[tuple[str, ...], str]] = []
    stack: list[tuple[int, str]] = []
    start = 0
    path: tuple[str, ...] = ()
    for h in headings:
        at = h.line - 2
        out.append((path, "\n".join(lines[start:at])))
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.text))
        path = tuple(t for _, t in stack)
        start = at + 1
    out.append((path, "\n".join(lines[start:])))
    return out


def _split(text: str, budget: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``budget`` estimated tokens, at the largest
    boundary that works: paragraphs, then lines, then words."""
    if estimate_tokens(text) <= budget:
        return [text]
    for sep, pattern in (("\n\n", _PARAGRAPH), ("\n", None)):
        parts = pattern.split(text) if pattern else text.split(sep)
        if len(parts) > 1:
            return _pack([p for p in parts if p.strip()], sep, budget)
    words = text.split(" ")
    if len(words) > 1:
        return _pack(words, " ", budget)
    # One enormous "word" (a URL, a base64 blob): cut by characters.
    step = max(budget * 4, 1)
    return [text[i : i + step] for i in range(0, len(text), step)]


def _pack(parts: list[str], sep: str, budget: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for part in parts:
        cost = estimate_tokens(part)
        if cost > budget:
            if current:
                pieces.append(sep.join(current))
                current, size = [], 0
            pieces.extend(_split(part, budget))
            continue
        if current and size + cost > budget:
            pieces.append(sep.join(current))
            current, size = [], 0
        current.append(part)
        size += cost
    if current:
        tail = sep.join(current)
        if pieces and size < _MIN_PIECE_TOKENS:
            joined = pieces[-1] + sep + tail
            if estimate_tokens(joined) <= budget + _MIN_PIECE_TOKENS:
                pieces[-1] = joined
                return pieces
        pieces.append(tail)
    return pieces


def _properties_text(properties: Sequence[tuple[str, str]]) -> str:
    """``key: value, value`` a line, in first-seen key order; empty values left out."""
    values: dict[str, list[str]] = {}
    for key, value in properties:
        shown = " ".join(clean_markdown(value).split())
        if shown and key.strip():
            values.setdefault(key.strip(), []).append(shown)
    return "\n".join(f"{key}: {', '.join(vals)}" for key, vals in values.items())


def chunk_note(
    title: str,
    body: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    properties: Sequence[tuple[str, str]] = (),
) -> list[Chunk]:
    """The note's chunks in reading order (see the module doc); ``[]`` for an empty body and
    no ``properties`` ((key, value) pairs, one per list item)."""
    if max_tokens < 32:
        raise ValueError("max_tokens must be at least 32")
    chunks: list[Chunk] = []
    for path, raw in _sections(body):
        content = clean_markdown(raw)
        if not content:
            continue
        shown = path[1:] if path and path[0].strip().lower() == title.strip().lower() else path
        heading = " > ".join(shown)
        header = f"{title} > {heading}" if heading else title
        budget = max(max_tokens - estimate_tokens(header) - 1, 16)
        for piece in _split(content, budget):
            text = f"{header}\n\n{piece.strip()}"
            chunks.append(Chunk(len(chunks), heading, text, text_hash(text)))
    if not chunks and properties:
        listed = _properties_text(properties)
        budget = max(max_tokens - estimate_tokens(title) - 1, 16)
        for piece in _split(listed, budget) if listed else []:
            text = f"{title}\n\n{piece.strip()}"
            chunks.append(Chunk(len(chunks), "", text, text_hash(text)))
    return chunks
