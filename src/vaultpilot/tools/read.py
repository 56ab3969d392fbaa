"""``obsidian_get_context``: read notes with the context that matters for synthesis.

Every note read comes back as ``NoteContent`` with its ``version`` (a hash of its exact bytes,
to pass back as ``expectedVersion`` when editing it) and ``wordCount``; ``tokenEstimate`` tells
what the whole result costs. ``detailed`` gives the full body (very long notes are cut, and say
so); ``concise`` gives its start and an outline. The frontmatter comes as ``metadata`` (not
inside ``content``), except when it is invalid YAML: then ``content`` holds the full text so it
can be fixed, and a warning says so. With ``includeMetadata=false`` nothing read from the
frontmatter is returned: no ``metadata``, and ``metadataSummary`` keeps only what the body and the
file give (inline tags, body links, backlinks, modification time).

A ``daily_note`` that does not exist yet still has a ``primaryNote``: the note that would be
there (its path, ``exists: false``, the filled template as ``content``, no ``version``), with
``suggestedCall`` ready to create it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, assert_never

from vaultpilot.errors import InvalidArgumentError, NotFoundError, VaultpilotError
from vaultpilot.index.lookup import note_facts
from vaultpilot.index.queries import backlinks
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.daily import daily_path, parse_day, render_template
from vaultpilot.tools.models import GetContextParams
from vaultpilot.tools.notes import created_of, iso_time, resolve_note, title_of
from vaultpilot.tools.related import related_notes
from vaultpilot.tools.results import BacklinkInfo, ContextResult, NoteContent
from vaultpilot.tools.tokens import estimate_tokens
from vaultpilot.vault.files import read_note
from vaultpilot.vault.parse import ParsedNote, parse_note

__all__ = ["daily_template", "obsidian_get_context"]

PRIMARY_CHARS = 48_000  # ~12k tokens: beyond this the note is cut (and says so)
RELATED_CHARS = 4_000
CONCISE_CHARS = 600
MAX_BACKLINKS = 50


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    for sep in ("\n\n", "\n", ". ", " "):
        at = text.rfind(sep, 0, limit)
        if at > limit // 2:
            return text[:at].rstrip()
    return text[:limit]


def _json_safe(props: dict[str, Any]) -> dict[str, Any]:
    safe: dict[str, Any] = json.loads(json.dumps(props, ensure_ascii=False, default=str))
    return safe


def _read(
    ctx: ToolContext,
    path: str,
    p: GetContextParams,
    warnings: list[str],
    *,
    limit: int,
    relation: str | None = None,
) -> tuple[NoteContent, ParsedNote]:
    note = read_note(ctx.root, path)
    parsed = parse_note(path, note.text)
    body = parsed.body
    if parsed.frontmatter_error:
        body = note.text
        warnings.append(
            f"'{path}': {parsed.frontmatter_error}; its content includes the frontmatter so it "
            "can be fixed with obsidian_vault_manager operation='update_note'."
        )
    concise = p.response_format == "concise"
    shown = _cut(body, CONCISE_CHARS if concise else limit)
    truncated = len(shown) < len(body)
    if concise and parsed.headings:
        outline = " · ".join(f"{'#' * h.level} {h.text}" for h in parsed.headings[:20])
        shown += f"\n\n[Outline: {outline}]"
    if truncated:
        shown += (
            f"\n\n[… {len(body) - len(_cut(body, CONCISE_CHARS if concise else limit)):,} more "
            "characters not shown. "
            + (
                "Read it with responseFormat='detailed' for the full note.]"
                if concise
                else "This is not the whole note: don't pass it to update_note.]"
            )
        )
    content: NoteContent = {
        "path": path,
        "title": parsed.title,
        "content": shown,
        "wordCount": parsed.word_count,
        "version": note.version,
    }
    if p.include_metadata:
        content["metadata"] = _json_safe(parsed.properties)
    if truncated:
        content["truncated"] = True
    if relation:
        content["relation"] = relation
    return content, parsed


def _inline_tags(parsed: ParsedNote) -> list[str]:
    """The tags written in the body (not the frontmatter), unique ignoring case."""
    out: dict[str, str] = {}
    for tag in parsed.tags:
        if tag.source == "inline":
            out.setdefault(tag.name.lower(), tag.name)
    return list(out.values())


def _summary(ctx: ToolContext, parsed: ParsedNote, *, metadata: bool) -> dict[str, Any]:
    facts = note_facts(ctx.conn, [parsed.path]).get(parsed.path)
    incoming = [b for b in backlinks(ctx.conn, parsed.path) if b.source != parsed.path]
    if not metadata:  # includeMetadata=false: nothing read from the frontmatter
        summary: dict[str, Any] = {"tags": _inline_tags(parsed)}
    else:
        summary = {"tags": list(facts.tags) if facts else []}
        if parsed.aliases:
            summary["aliases"] = list(parsed.aliases)
        created = created_of(parsed.properties)
        if created:
            summary["created"] = created
    if facts:
        summary["modified"] = iso_time(ctx, facts.mtime_ns)
    summary["outgoingLinks"] = sum(
        1 for link in parsed.links if link.target and (metadata or link.kind != "property")
    )
    summary["backlinks"] = len(incoming)
    return summary


def _multi_summary(ctx: ToolContext, parsed: list[ParsedNote], *, metadata: bool) -> dict[str, Any]:
    paths = [n.path for n in parsed]
    facts = note_facts(ctx.conn, paths)
    tags: Counter[str] = (
        Counter(t for f in facts.values() for t in f.tags)
        if metadata
        else Counter(t for n in parsed for t in _inline_tags(n))
    )
    times = sorted(f.mtime_ns for f in facts.values())
    out: dict[str, Any] = {"notes": len(paths), "tags": dict(tags.most_common(20))}
    if times:
        out["modified"] = {"earliest": iso_time(ctx, times[0]), "latest": iso_time(ctx, times[-1])}
    return out


def _context_line(text: str, line: int, needle: str) -> str:
    lines = text.split("\n")
    row = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    if len(row) <= 280:
        return row
    at = max(row.find(needle), 0)
    start = max(at - 130, 0)
    return ("…" if start else "") + row[start : start + 280].strip() + "…"


def _property_line(text: str, line: int) -> str:
    """A link in frontmatter as 'key: value', with the key of a list item it sits in."""
    lines = text.split("\n")
    row = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    if row.startswith("- "):
        for above in reversed(lines[: line - 1]):
            if above and not above[0].isspace() and not above.startswith(("-", "#")):
                return f"(property) {above.split(':', 1)[0]}: {row[2:].strip()}"
    return f"(property) {row}"


def _backlinks(ctx: ToolContext, path: str, warnings: list[str]) -> list[BacklinkInfo]:
    rows = [b for b in backlinks(ctx.conn, path) if b.source != path]
    texts: dict[str, str] = {}
    out: list[BacklinkInfo] = []
    for row in rows[:MAX_BACKLINKS]:
        if row.source not in texts:
            try:
                texts[row.source] = read_note(ctx.root, row.source).text
            except VaultpilotError:
                texts[row.source] = ""
        if row.kind == "property":
            context = _property_line(texts[row.source], row.line)
        else:
            context = _context_line(texts[row.source], row.line, row.target_text)
        out.append({"notePath": row.source, "noteTitle": title_of(row.source), "context": context})
    if len(rows) > MAX_BACKLINKS:
        warnings.append(f"Showing {MAX_BACKLINKS} of {len(rows)} backlinks.")
    return out


def daily_template(ctx: ToolContext, path: str, day: Any, warnings: list[str]) -> str:
    """The daily-note template filled for ``day`` ("" when the vault has none)."""
    template = ctx.config.daily_notes.template
    if not template:
        return ""
    rel = template if template.lower().endswith(".md") else f"{template}.md"
    try:
        text = read_note(ctx.root, rel).text
    except VaultpilotError:
        warnings.append(f"The daily-note template '{rel}' could not be read; it was not used.")
        return ""
    title = path.rsplit("/", 1)[-1][:-3]
    return render_template(text, title=title, day=day, now=ctx.now())


def _daily(ctx: ToolContext, p: GetContextParams, warnings: list[str]) -> ContextResult:
    day = parse_day(p.date, ctx.now().date())
    path = daily_path(ctx.config.daily_notes, day)
    if not (ctx.root / path).is_file():
        content = daily_template(ctx, path, day, warnings)
        from_template = f" from the template '{ctx.config.daily_notes.template}'" if content else ""
        would_be = parse_note(path, content)
        primary: NoteContent = {
            "path": path,
            "title": would_be.title,
            "content": content,
            "wordCount": would_be.word_count,
            "exists": False,
        }
        if p.include_metadata:
            primary["metadata"] = _json_safe(would_be.properties)
        result: ContextResult = {
            "primaryNote": primary,
            "tokenEstimate": 0,
            "message": (
                f"There is no daily note for {day.isoformat()} (it would be '{path}'). Create it "
                f"with obsidian_vault_manager operation='create_note', target='{path}'"
                f"{from_template}: suggestedCall has the arguments ready."
            ),
            "suggestedCall": {
                "tool": "obsidian_vault_manager",
                "arguments": {"operation": "create_note", "target": path, "content": content},
            },
        }
        return result
    found, parsed = _read(ctx, path, p, warnings, limit=PRIMARY_CHARS)
    out: ContextResult = {
        "primaryNote": found,
        "tokenEstimate": 0,
        "metadataSummary": _summary(ctx, parsed, metadata=p.include_metadata),
    }
    if p.include_backlinks:
        out["backlinks"] = _backlinks(ctx, path, warnings)
    return out


def _targets(p: GetContextParams) -> list[str]:
    names = list(p.targets or [])
    if not names and p.target:
        names = [p.target]
    if not names:
        raise InvalidArgumentError(
            "contextType='read_multiple' needs 'targets', e.g. targets=['note1.md', 'note2.md']."
        )
    return names


def obsidian_get_context(ctx: ToolContext, params: GetContextParams) -> ContextResult:
    """Retrieve note content with optional context for analysis and synthesis.

    Use obsidian_query_vault to find notes first, then this tool to read them. Each note comes
    with its 'version': pass it as expectedVersion to obsidian_vault_manager when you edit the
    note, so a change made meanwhile is never overwritten.

    contextType:
    - read_note: one note ('target', a path or title) with its metadata.
      Example: {contextType: 'read_note', target: 'Projects/ML Project.md'}
    - read_multiple: several notes ('targets'); the first is primaryNote, the others
      relatedNotes. Example: {contextType: 'read_multiple', targets: ['note1.md', 'note2.md']}
    - gather_related: a note plus its 'maxRelated' most related notes (links, shared tags,
      similar text). Example: {contextType: 'gather_related', target: 'Architecture.md',
      maxRelated: 5}
    - daily_note: the daily note for 'date' ('today', 'yesterday' or 'YYYY-MM-DD'); if it
      doesn't exist, says where it would be and how to create it (suggestedCall).
      Example: {contextType: 'daily_note', date: 'today'}
    - note_with_backlinks: a note plus every note linking to it, with the text around each link.
      Example: {contextType: 'note_with_backlinks', target: 'Concepts/Zettelkasten.md'}

    responseFormat='concise' returns the start and outline of each note to save tokens.
    """
    ctx.fresh()
    warnings: list[str] = []
    result: ContextResult
    match params.context_type:
        case "read_note" | "note_with_backlinks" | "gather_related":
            path = resolve_note(ctx, params.target)
            primary, parsed = _read(ctx, path, params, warnings, limit=PRIMARY_CHARS)
            result = {"primaryNote": primary, "tokenEstimate": 0}
            if params.context_type == "gather_related" and params.max_related > 0:
                chosen = related_notes(ctx, path)[: params.max_related]
                reads = [
                    _read(ctx, r.path, params, warnings, limit=RELATED_CHARS, relation=r.relation)
                    for r in chosen
                ]
                result["relatedNotes"] = [content for content, _ in reads]
                result["metadataSummary"] = _multi_summary(
                    ctx, [parsed, *(n for _, n in reads)], metadata=params.include_metadata
                )
            else:
                result["metadataSummary"] = _summary(ctx, parsed, metadata=params.include_metadata)
            if params.context_type == "note_with_backlinks" or params.include_backlinks:
                result["backlinks"] = _backlinks(ctx, path, warnings)
        case "read_multiple":
            found: list[NoteContent] = []
            parsed_all: list[ParsedNote] = []
            for name in _targets(params):
                try:
                    content, one = _read(
                        ctx, resolve_note(ctx, name), params, warnings, limit=RELATED_CHARS * 3
                    )
                except NotFoundError as err:
                    warnings.append(err.message)
                    continue
                found.append(content)
                parsed_all.append(one)
            if not found:
                raise NotFoundError(" ".join(warnings) or "None of the targets exist.")
            result = {"primaryNote": found[0], "tokenEstimate": 0, "relatedNotes": found[1:]}
            result["metadataSummary"] = _multi_summary(
                ctx, parsed_all, metadata=params.include_metadata
            )
            if params.include_backlinks:
                result["backlinks"] = _backlinks(ctx, found[0]["path"], warnings)
        case "daily_note":
            result = _daily(ctx, params, warnings)
        case _:
            assert_never(params.context_type)
    if warnings:
        result["warnings"] = warnings
    result["tokenEstimate"] = estimate_tokens(result)
    return result
