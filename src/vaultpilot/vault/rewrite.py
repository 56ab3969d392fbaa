"""Rewrite a note's links after files moved, as Obsidian does on rename (pure; rules 4, 7, 19).

``rewrite_links(text, source=..., moves=..., before=..., after=...)`` takes one note's text
(``\\n`` line endings), the note's path, a mapping of moved files (old vault path -> new vault
path; the note itself may be among them) and the vault's file set before and after the move. It
returns the new text and what changed. Nothing is read or written here.

Which links change: every link that resolved to a file before the move and would no longer
resolve to the same file (at its new path) afterwards. That covers links to a moved file, links
written in a moved note whose meaning depended on its folder (relative paths, same-folder
preference), and links that a moved file would capture because it now has a shorter path or
sits in the linking note's folder (Obsidian writes those as full paths, rule 7). A link that still
leads to the right file is left exactly as written; unresolved links and ``[[#heading]]``
self-links are never touched. Links inside code are not links (``parse``) and stay as they are.

How a changed link is written:

* its form is kept: wikilink or markdown link, embed ``!``, ``#heading``, ``#h1#h2``,
  ``#^block`` and ``|alias`` as written, an escaped table pipe ``\\|``, a markdown destination in
  ``<...>`` (kept unencoded) or percent-encoded, and a ``.md`` suffix if the link had one;
* the new target text follows ``newLinkFormat``: ``shortest`` (the bare name when no other file
  has it, else the full path), ``absolute`` or ``relative``; whichever text is chosen is checked
  to resolve to the moved file, falling back to the full path;
* display text (a wikilink alias or markdown link text) equal to the old name becomes the new
  name (rule 19);
* a link inside a quoted frontmatter value is escaped for its quotes.

The result is checked by parsing it again: the same number of links, each leading where it must.
If that check fails the note is returned unchanged, with the reason in ``skipped``.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from vaultpilot.vault.frontmatter import split_frontmatter
from vaultpilot.vault.parse import Link, parse_note, scan_links
from vaultpilot.vault.resolve import LinkResolver, file_key, note_title

__all__ = ["LinkChange", "Rewrite", "VaultPaths", "rewrite_links"]

LinkFormat = Literal["shortest", "relative", "absolute"]
_URL_SAFE = "/'!*,;:@&=+$~"


@dataclass(frozen=True, slots=True)
class VaultPaths:
    """A vault's file set as link resolution needs it: a resolver and how often each name occurs."""

    resolver: LinkResolver
    name_counts: Mapping[str, int]

    @classmethod
    def of(cls, paths: Iterable[str]) -> VaultPaths:
        listed = list(paths)
        return cls(LinkResolver(listed), Counter(file_key(p) for p in listed))


@dataclass(frozen=True, slots=True)
class LinkChange:
    line: int
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    text: str
    changes: tuple[LinkChange, ...]
    skipped: tuple[str, ...]  # why a link that needed a change was left as it was


@dataclass(frozen=True, slots=True)
class _Quote:
    """The quoted YAML scalar a frontmatter link sits in ("" outside frontmatter)."""

    char: str = ""

    def escape(self, text: str) -> str:
        if self.char == "'":
            return text.replace("'", "''")
        if self.char == '"':
            return text.replace("\\", "\\\\").replace('"', '\\"')
        return text

    def unescape(self, text: str) -> str:
        if self.char == "'":
            return text.replace("''", "'")
        if self.char == '"':
            return text.replace('\\"', '"').replace("\\\\", "\\")
        return text


_PLAIN = _Quote()


def _quote_at(text: str, at: int) -> _Quote:
    line_start = text.rfind("\n", 0, at) + 1
    for i in range(at - 1, line_start - 1, -1):
        if text[i] in "\"'":
            return _Quote(text[i])
    return _PLAIN


def _links(text: str, source: str) -> list[tuple[Link, _Quote]]:
    """The note's links with the quoting each sits in, found where they are written.

    Body links come from ``parse``. Links in frontmatter values are found by scanning the YAML
    text itself, so each occurrence has its own offsets even when two values are equal, and a
    link inside a quoted scalar is read without its YAML escapes.
    """
    found = [(link, _PLAIN) for link in parse_note(source, text).links if link.kind != "property"]
    fm = split_frontmatter(text)
    if fm.end > 0 and fm.yaml_text:
        starts = [m.end() for m in re.finditer("\n", text)]
        for link in scan_links(fm.yaml_text, fm.start, starts):
            line_start = text.rfind("\n", 0, link.start) + 1
            if text[line_start : link.start].lstrip().startswith("#"):
                continue  # a YAML comment
            quote_ = _quote_at(text, link.start)
            alias = quote_.unescape(link.alias) if link.alias is not None else None
            target = quote_.unescape(link.target)
            found.append((link._replace(target=target, alias=alias, kind="property"), quote_))
    return sorted(found, key=lambda pair: pair[0].start)


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _target_text(
    target: str,
    *,
    source: str,
    syntax: str,
    link_format: LinkFormat,
    after: VaultPaths,
    keep_md: bool,
) -> str:
    """The text that links from ``source`` to ``target`` in the vault's link format."""
    is_note = target.lower().endswith(".md")
    bare = target[:-3] if is_note and not keep_md else target
    rel = posixpath.relpath(bare, _folder(source) or ".")
    name = bare.rsplit("/", 1)[-1]
    preferred: list[str]
    if link_format == "absolute":
        preferred = [bare]
    elif link_format == "relative":
        preferred = [rel, f"./{rel}"]
    else:
        preferred = [name] if after.name_counts.get(file_key(target), 0) == 1 else [bare]
    for text in [*preferred, bare, target, f"./{rel}"]:
        if after.resolver.resolve(source, text, syntax) == target:
            return text
    return target


def _swap(segment: str, new: str) -> str:
    """Replace the text of ``segment`` but keep the spaces around it."""
    core = segment.strip()
    if not core:
        return new
    lead = segment[: len(segment) - len(segment.lstrip())]
    trail = segment[len(segment.rstrip()) :]
    return f"{lead}{new}{trail}"


def _rewrite_wiki(
    raw: str, new_target: str, rename: tuple[str, str] | None, quote_: _Quote
) -> str | None:
    open_len = 3 if raw.startswith("![[") else 2
    if raw[open_len - 2 : open_len] != "[[" or not raw.endswith("]]"):
        return None
    if any(bad in new_target for bad in ("|", "#", "[[", "]]", "\n")):
        return None
    inner = raw[open_len:-2]
    pipe = inner.find("|")
    head = inner if pipe < 0 else inner[:pipe]
    if head.endswith("\\"):
        head = head[:-1]
    hash_at = head.find("#")
    cut = hash_at if hash_at >= 0 else len(head)
    new_inner = _swap(inner[:cut], quote_.escape(new_target)) + inner[cut:]
    alias = inner[pipe + 1 :]
    if pipe >= 0 and rename is not None and quote_.unescape(alias).strip() == rename[0]:
        shift = len(new_inner) - len(inner)
        new_inner = new_inner[: pipe + 1 + shift] + _swap(alias, quote_.escape(rename[1]))
    return raw[:open_len] + new_inner + "]]"


def _rewrite_markdown(
    raw: str, new_target: str, rename: tuple[str, str] | None, quote_: _Quote
) -> str | None:
    start = 1 if raw.startswith("!") else 0
    label = _label(raw, start)
    if label is None:
        return None
    close = start + 1 + len(label)
    if raw[start : start + 1] != "[" or raw[close : close + 2] != "](" or not raw.endswith(")"):
        return None
    d0 = close + 2
    while d0 < len(raw) and raw[d0] in " \t":
        d0 += 1
    rest = raw[d0:-1]
    if rest.startswith("<"):
        end = rest.find(">")
        if end < 0 or any(c in new_target for c in "<>\n"):
            return None
        dest, angle = rest[1:end], True
        d1 = d0 + end + 1
    else:
        parts = rest.split(maxsplit=1)
        if not parts:
            return None
        dest, angle = parts[0], False
        d1 = d0 + len(dest)
    hash_at = dest.find("#")
    fragment = dest[hash_at:] if hash_at >= 0 else ""
    encoded = quote_.escape(new_target if angle else quote(new_target, safe=_URL_SAFE))
    new_dest = f"<{encoded}{fragment}>" if angle else f"{encoded}{fragment}"
    label_part = raw[start + 1 : close]
    if rename is not None and quote_.unescape(label).strip() == rename[0]:
        label_part = _swap(label_part, quote_.escape(rename[1]))
    return f"{raw[:start]}[{label_part}]({raw[close + 2 : d0]}{new_dest}{raw[d1:]}"


def _label(raw: str, start: int) -> str | None:
    """The text of a markdown link: between its '[' and the matching '](' (nested [] allowed)."""
    depth = 0
    for i in range(start, len(raw) - 1):
        if raw[i] == "[":
            depth += 1
        elif raw[i] == "]":
            depth -= 1
            if depth == 0:
                return raw[start + 1 : i] if raw[i + 1] == "(" else None
    return None


def _expected(link: Link, source: str, moves: Mapping[str, str], before: VaultPaths) -> str | None:
    if not link.target:
        return None
    old = before.resolver.resolve(source, link.target, link.syntax)
    return None if old is None else moves.get(old, old)


def rewrite_links(
    text: str,
    *,
    source: str,
    moves: Mapping[str, str],
    before: VaultPaths,
    after: VaultPaths,
    link_format: LinkFormat = "shortest",
) -> Rewrite:
    """Rewrite the links of the note at ``source`` for ``moves`` (see the module contract)."""
    new_source = moves.get(source, source)
    links = parse_note(source, text).links
    edits: dict[int, tuple[int, str, LinkChange]] = {}  # start -> (end, new text, change)
    skipped: list[str] = []
    left: set[int] = set()  # lines of links that needed a change but could not get one
    for link, quote_ in _links(text, source):
        want = _expected(link, source, moves, before)
        if want is None or after.resolver.resolve(new_source, link.target, link.syntax) == want:
            continue
        raw = text[link.start : link.end] if link.start >= 0 else ""
        old_target = before.resolver.resolve(source, link.target, link.syntax) or want
        keep_md = link.target.lower().endswith(".md")
        new_text = _target_text(
            want,
            source=new_source,
            syntax=link.syntax,
            link_format=link_format,
            after=after,
            keep_md=keep_md,
        )
        old_stem, new_stem = note_title(old_target), note_title(want)
        rename = (old_stem, new_stem) if old_stem != new_stem else None
        new_raw = None
        if raw:
            if link.syntax == "wiki":
                new_raw = _rewrite_wiki(raw, new_text, rename, quote_)
            else:
                new_raw = _rewrite_markdown(raw, new_text, rename, quote_)
        if new_raw is None:
            skipped.append(f"line {link.line}: {raw or link.target!r} could not be rewritten")
            left.add(link.line)
            continue
        edits[link.start] = (link.end, new_raw, LinkChange(link.line, raw, new_raw))
    if not edits:
        return Rewrite(text, (), tuple(skipped))
    out = text
    for start in sorted(edits, reverse=True):
        end, new_raw, _change = edits[start]
        out = out[:start] + new_raw + out[end:]
    problem = _verify(out, links, source, moves, before, after, left)
    if problem:
        return Rewrite(text, (), (*skipped, problem))
    return Rewrite(out, tuple(edits[s][2] for s in sorted(edits)), tuple(skipped))


def _verify(
    out: str,
    links: tuple[Link, ...],
    source: str,
    moves: Mapping[str, str],
    before: VaultPaths,
    after: VaultPaths,
    left: set[int],
) -> str | None:
    new_source = moves.get(source, source)
    new_links = parse_note(new_source, out).links
    if len(new_links) != len(links):
        return "the rewritten note would not have the same links; left unchanged"
    for old, new in zip(links, new_links, strict=True):
        if old.line in left:
            continue
        want = _expected(old, source, moves, before)
        if want is not None and after.resolver.resolve(new_source, new.target, new.syntax) != want:
            return f"line {new.line}: a rewritten link would not lead to {want}; left unchanged"
    return None
