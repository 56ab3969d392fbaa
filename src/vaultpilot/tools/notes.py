"""Helpers the tools share: naming a note, describing it in a result, dates and excerpts.

``resolve_note`` turns what the model wrote (a path with or without ``.md``, or a title) into a
vault path, with a message that helps when nothing matches. ``note_infos`` builds the
``NoteInfo`` entries of query results in the concise or detailed format.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, tzinfo
from typing import Any

from vaultpilot.errors import (
    ConflictKeptError,
    InvalidArgumentError,
    NotFoundError,
    PathRefusedError,
)
from vaultpilot.index.lookup import (
    note_bodies,
    note_facts,
    note_outlines,
    note_titles,
    notes_titled_near,
)
from vaultpilot.index.queries import find_note, highlight, unmark_links
from vaultpilot.index.search import content_words
from vaultpilot.memory import journal
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.results import NoteInfo
from vaultpilot.tools.suggest import similar_notes
from vaultpilot.vault import files
from vaultpilot.vault.files import (
    NoteText,
    TextFormat,
    check_not_protected,
    encode_note,
    missing_parents,
    normalize_rel_path,
)
from vaultpilot.vault.resolve import note_title as title_of

__all__ = [
    "created_of",
    "excerpt_of",
    "folder_arg",
    "iso_time",
    "log_change",
    "log_folders",
    "new_folders",
    "note_infos",
    "resolve_note",
    "title_of",
]

_SPACE = re.compile(r"\s+")
# A heading's mark at the start of a line ("^" with re.MULTILINE), found as "\n" + mark and
# once at the very start: a literal first character lets ``re`` skip to each line break,
# where "^" is tried at every character (4x slower on a note of 1-2 KB).
_HEADING_AT_LINE = re.compile(r"\n[ ]{0,3}#{1,6}[ \t]+")
_HEADING_AT_START = re.compile(r"[ ]{0,3}#{1,6}[ \t]+")
EXCERPT_CHARS = 300


def folder_arg(text: str | None) -> str:
    """A folder the model named, in canonical form; '/', '.' and '' all mean the vault root."""
    raw = (text or "").strip()
    return "" if raw in ("", "/", ".", "./") else normalize_rel_path(raw.rstrip("/"))


def iso_time(ctx: ToolContext, mtime_ns: int, *, tz: tzinfo | None = None) -> str:
    """A file time as ISO 8601 in the context's time zone (``tz`` when the caller already
    asked ``ctx.now()`` for it, as for a page of results), to the second."""
    tz = ctx.now().tzinfo if tz is None else tz
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=tz).isoformat(timespec="seconds")


def created_of(props: dict[str, Any]) -> str | None:
    """The note's creation date as written in its ``created`` (or ``date``) property."""
    lowered = {k.lower(): v for k, v in props.items()}
    for key in ("created", "date"):
        value = lowered.get(key)
        if isinstance(value, str | int) and str(value).strip():
            return str(value)
    return None


def excerpt_of(body: str, title: str, chars: int = EXCERPT_CHARS) -> str:
    """The start of a note's body as one line, without its title heading, cut at a word."""
    whole = body.lstrip()
    # Only the start is shown: tidy the whole lines that hold it, not the whole note (the same
    # text, as a heading mark only starts a line; more lines, then the whole note, when that is
    # too little).
    cuts = [c for c in (whole.find("\n", 2 * chars), whole.find("\n", 4 * chars)) if c > 0]
    for part in [whole[:c] for c in dict.fromkeys(cuts)] + [whole]:
        first, _, rest = part.partition("\n")
        titled = first.lstrip("# ").strip().lower() == title.lower() and first.startswith("#")
        text = _flat(rest if titled else part).strip()
        if len(text) > chars:
            break
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", 0, chars)
    return text[: cut if cut > chars // 2 else chars].rstrip(" ,;:") + "…"


# A word FTS5 marked in a snippet: ``**`` right before a token and right after it (a token holds
# neither ``*`` nor white space; each is marked alone), so the note's own ``**bold**`` around a
# marked word (``**20 **April****``, ``****20** **April****``) is not read as part of it.
_MARKED = re.compile(r"\*\*([^*\s]+)\*\*")
# The note's own bold text: the match markers are never put inside it (``****20 April****``).
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")


def around_match(body: str, snippet: str, chars: int = EXCERPT_CHARS) -> str:
    """About ``chars`` characters of ``body`` around the first word ``snippet`` highlights.

    Falls back to the snippet itself when the word can't be found (e.g. matched without its
    accents).
    """
    words = [w.lower() for w in _MARKED.findall(snippet)]
    # Tidy only the whole lines around the first match, not the whole note (notes run to
    # megabytes; a result shows ~300 characters of one).
    raw_low = body.lower()
    first = min((i for i in (raw_low.find(w) for w in words) if i >= 0), default=-1)
    if first < 0:
        return _SPACE.sub(" ", unmark_links(snippet)).strip()
    a, b = 0, len(body)
    if len(raw_low) == len(body):  # lower() kept every offset
        reach = 4 * chars
        a = body.rfind("\n", 0, first - reach) + 1 if first > reach else 0
        b = body.find("\n", first + reach)
        b = len(body) if b < 0 else b
        # Most often the lines up to ``chars`` past the match are enough: tidied alone, they
        # read as the start of the whole region tidied (see ``_window``).
        cut = body.find("\n", first + chars)
        if 0 <= cut < b:
            shown = _window(_flat(body[a:cut]), words, chars, whole=False)
            if shown is not None:
                return _shown(*shown, before=a > 0, after=True)
    flat = _flat(body[a:b])
    shown = _window(flat, words, chars, whole=True)
    if shown is None:
        return _SPACE.sub(" ", unmark_links(snippet)).strip()
    text, start, end = shown
    return _shown(text, start, end, before=a > 0, after=end < len(flat) or b < len(body))


def _window(flat: str, words: list[str], chars: int, *, whole: bool) -> tuple[str, int, int] | None:
    """(the excerpt's text, with the words marked; where it starts and ends in ``flat``).

    ``whole=False``: ``flat`` is only the start of the tidied region (cut after a word): None
    unless the excerpt, the first match (of any word) and the bold text around it lie within
    it, so that the answer is the one the whole region gives."""
    low = flat.lower()
    at = min((i for i in (low.find(w) for w in words) if i >= 0), default=-1)
    if at < 0:
        return None
    start = max(flat.rfind(" ", 0, max(at - chars // 3, 0)) + 1, 0) if at > chars // 3 else 0
    end = flat.find(" ", start + chars)
    if not whole:
        words_end = len(flat.rstrip(" "))  # a trailing space may not be there in the whole
        if (
            len(low) != len(flat)
            or end < 0
            or end >= words_end
            or at + max(map(len, words)) > words_end  # a match may run on past the cut
            or "**" in flat
            or "__" in flat  # bold text may run on past the cut
        ):
            return None
    end = len(flat) if end < 0 else end
    raw = flat[start:end]
    text = raw.strip()
    lead = start + len(raw) - len(raw.lstrip())
    return _highlight_outside_bold(flat, text, lead, words), start, end


def _shown(text: str, start: int, end: int, *, before: bool, after: bool) -> str:
    return ("…" if start > 0 or before else "") + text + ("…" if after else "")


def _highlight_outside_bold(flat: str, text: str, at: int, words: list[str]) -> str:
    """``highlight`` (never inside a link) of ``text``, which starts at ``at`` in ``flat``, never
    inside the note's own bold text either: its characters (and every ``*``) are hidden from
    ``highlight``, whose markers are then put back into the real text."""
    if "*" not in text and "__" not in flat:
        return highlight(text, words)
    hidden = list(text.replace("*", "\x01"))
    for m in _BOLD.finditer(flat):
        for i in range(max(m.start() - at, 0), min(m.end() - at, len(text))):
            hidden[i] = "\x00"
    parts = highlight("".join(hidden), words).split("**")  # every "**" is a marker now
    out: list[str] = []
    pos = 0
    for part in parts:
        out.append(text[pos : pos + len(part)])
        pos += len(part)
    return "**".join(out)


def _flat(text: str) -> str:
    """Markdown as one line: heading marks dropped, every run of white space one space."""
    if "#" in text:
        text = _HEADING_AT_LINE.sub("\n", text)
        mark = _HEADING_AT_START.match(text)
        if mark is not None:
            text = text[mark.end() :]
    words = text.split()  # what ``\s+`` matches, several times faster than re.sub
    if not words:
        return " " if text else ""
    lead = " " if text[0].isspace() else ""
    return lead + " ".join(words) + (" " if text[-1].isspace() else "")


def _suggest(ctx: ToolContext, name: str) -> str:
    # Candidates from the index (titles or aliases holding a word of the name or one beginning
    # alike), so a miss costs the same on any vault; ``similar_notes`` then keeps real matches.
    candidates = notes_titled_near(ctx.conn, content_words(title_of(name)))
    found = similar_notes(name, candidates)
    return f" Similar notes: {', '.join(found)}." if found else ""


def resolve_note(ctx: ToolContext, name: str | None, *, param: str = "target") -> str:
    """The vault path of an existing note named by path (``.md`` optional) or title."""
    if name is None or not name.strip():
        raise InvalidArgumentError(
            f"Give the note in '{param}', e.g. {param}='Projects/Plan.md' (a path or a title)."
        )
    # Refuses '..', absolute paths and the like first, then .obsidian/, .git/ and .trash/.
    check_not_protected(name.strip())
    try:
        return find_note(ctx.conn, name)
    except NotFoundError:
        link = name.strip() if name.strip().lower().endswith(".md") else f"{name.strip()}.md"
        if os.path.islink(ctx.root / link):  # symbolic links are never indexed nor followed
            raise PathRefusedError(
                f"'{link}' is a symbolic link, and note tools do not follow links (one could "
                "lead out of the vault), so it cannot be read or changed through them. Work "
                "with another note; only the person can replace the link with a note."
            ) from None
        raise NotFoundError(
            f"Note '{name}' doesn't exist.{_suggest(ctx, name)} Find the right path with "
            f"obsidian_query_vault (queryType='semantic_search', query='{title_of(name)}')."
        ) from None


def note_infos(
    ctx: ToolContext,
    items: list[tuple[str, float]],
    *,
    detailed: bool,
    excerpts: dict[str, str] | None = None,
    relations: dict[str, str] | None = None,
) -> list[NoteInfo]:
    """NoteInfo entries for (path, relevance) pairs; detailed adds excerpt, tags and dates."""
    paths = [p for p, _ in items]
    if not detailed:  # the title is all a concise entry shows of the note's facts
        titles = note_titles(ctx.conn, paths)
        return [
            _entry(path, titles[path] if path in titles else title_of(path), relevance, relations)
            for path, relevance in items
        ]
    facts = note_facts(ctx.conn, paths)
    chars = 200_000 if excerpts else EXCERPT_CHARS * 3  # search hits: find the match in the body
    bodies = note_bodies(ctx.conn, paths, chars=chars)
    outlines = note_outlines(ctx.conn, paths)
    tz = ctx.now().tzinfo  # once a page, not once a note
    out: list[NoteInfo] = []
    for path, relevance in items:
        fact = facts.get(path)
        info = _entry(path, fact.title if fact else title_of(path), relevance, relations)
        if fact is not None:
            given = (excerpts or {}).get(path)
            body = bodies.get(path, "")
            info["excerpt"] = around_match(body, given) if given else excerpt_of(body, fact.title)
            info["tags"] = list(fact.tags[:8])
            outline = [h for h in outlines.get(path, []) if h.lower() != fact.title.lower()]
            if outline:
                info["outline"] = outline
            info["wordCount"] = fact.word_count
            created = created_of(fact.properties)
            if created:
                info["created"] = created
            info["modified"] = iso_time(ctx, fact.mtime_ns, tz=tz)
        out.append(info)
    return out


def _entry(path: str, title: str, relevance: float, relations: dict[str, str] | None) -> NoteInfo:
    info: NoteInfo = {"path": path, "title": title, "relevance": round(relevance, 2)}
    if relations and path in relations:
        info["relation"] = relations[path]
    return info


def log_change(
    ctx: ToolContext,
    kind: journal.ChangeKind,
    path_before: str | None,
    path_after: str | None,
    *,
    before: NoteText | bytes | None = None,
    after: tuple[str, TextFormat] | None = None,
) -> None:
    """Report one file change to the journal's open recording (no bytes are made without one).

    ``before`` is the note as the write was based on (or its bytes), ``after`` the text and
    format written; both are stored as the exact bytes on disk.
    """
    if not journal.active(ctx.journal):
        return
    old = encode_note(before.text, before.fmt) if isinstance(before, NoteText) else before
    new = encode_note(*after) if after is not None else None
    journal.note(ctx.journal, journal.FileChange(kind, path_before, path_after, old, new))


def replace_logged(
    ctx: ToolContext, path: str, text: str, note: NoteText, *, expected_version: str | None = None
) -> NoteText:
    """Replace the text of ``note`` (read from ``path``) and journal the change. A write that
    lands although another save was kept beside it (``ConflictKeptError``) is journaled too
    before the error goes on: the change is in the note, so undo must know it."""
    try:
        new = files.replace_note(
            ctx.root, path, text, note.fmt, expected_version=expected_version, base=note
        )
    except ConflictKeptError:
        log_change(ctx, "update", path, path, before=note, after=(text, note.fmt))
        raise
    log_change(ctx, "update", path, path, before=note, after=(text, note.fmt))
    return new


def new_folders(ctx: ToolContext, path: str) -> list[str]:
    """The folders a write to ``path`` will create, outermost first (looked up only while the
    journal records: they are what undo removes again)."""
    return missing_parents(ctx.root, path) if journal.active(ctx.journal) else []


def log_folders(ctx: ToolContext, folders: list[str]) -> None:
    """Report the folders ``new_folders`` named as created, once the write made them."""
    for folder in folders:
        if (ctx.root / folder).is_dir():
            log_change(ctx, "mkdir", None, folder)
