"""``obsidian_query_vault``: find notes (read-only). Results are summaries, never full notes.

Every query type returns ``QueryResult``: at most ``limit`` results, ``totalFound`` (all
matches; search_by_metadata and recent_changes count up to 500, and when more match,
totalFound is 500 and the suggestion says "more than 500"), ``truncated`` (more exist than
shown) and a ``suggestion`` whenever nothing was found or the list was cut, saying how to narrow
or widen the query. ``concise`` results carry path, title and relevance (about 50 tokens each);
``detailed`` ones add an excerpt, tags and dates (about 200).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import assert_never

from vaultpilot.errors import InvalidArgumentError, NotFoundError
from vaultpilot.index.lookup import folder_note_counts, notes_in_folder, tag_in_use, tags_like
from vaultpilot.index.metadata import NoteFilter, find_notes, page_notes
from vaultpilot.index.search import content_words
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.filters import add_note_dates, describe_filters, note_filter
from vaultpilot.tools.models import QueryVaultParams
from vaultpilot.tools.notes import folder_arg, note_infos, resolve_note
from vaultpilot.tools.ranking import RankRequest
from vaultpilot.tools.related import related_notes
from vaultpilot.tools.results import NoteInfo, QueryResult
from vaultpilot.vault.files import confine

__all__ = ["obsidian_query_vault"]

_ALL = 1_000_000
# search_by_metadata and recent_changes count their matches up to this many: past it,
# totalFound is this number and the suggestion says "more than" (so a page costs the same on a
# vault of 50,000 notes as on one of 1,000; the count would otherwise grow with the matches:
# counting to 1,000 instead costs ~0.3 ms more at 50,000 notes, bench/bench_live_server.py).
_COUNT_UP_TO = 500


def _result(results: list[NoteInfo], total: int, *, suggestion: str | None = None) -> QueryResult:
    out: QueryResult = {"results": results, "totalFound": total, "truncated": total > len(results)}
    if suggestion:
        out["suggestion"] = suggestion
    return out


def _unhidden(ctx: ToolContext, filt: NoteFilter | None) -> NoteFilter | None:
    """``filt`` leaving out what the vault's rules hide, so it is neither shown nor counted (a
    count that included it would tell, one guess at a time, what a hidden note holds)."""
    hidden, shown = ctx.rules.hidden_entries()
    if not hidden:
        return filt
    return replace(filt or NoteFilter(), hidden=hidden, shown=shown)


def _allowed(ctx: ToolContext, filt: NoteFilter | None) -> frozenset[str] | None:
    if filt is None:
        return None
    return frozenset(find_notes(ctx.conn, filt, order="path", limit=_ALL)[0])


def _broader(query: str) -> str:
    words = content_words(query)  # "blood" or "type", not "what" or "is"
    if len(words) > 1:
        picks = " or ".join(f"'{w}'" for w in sorted(words, key=len, reverse=True)[:2])
        return f"Try broader terms like {picks}, or check spelling."
    return "Try a synonym or a broader term, or check spelling."


def _semantic(ctx: ToolContext, p: QueryVaultParams) -> QueryResult:
    if not p.query or not p.query.strip():
        raise InvalidArgumentError(
            "queryType='semantic_search' needs 'query', e.g. query='machine learning'. To list "
            "notes by tags or dates without words, use queryType='search_by_metadata'."
        )
    filt = note_filter(ctx, p.filters, folder=p.path)
    tags = filt.tags if filt else ()
    simple = filt is not None and filt == NoteFilter(tags=tags[:1], folder=filt.folder)
    ranking = ctx.ranker(
        ctx.conn,
        RankRequest(
            p.query,
            p.limit,
            tag=tags[0] if simple and tags else None,
            folder=filt.folder if simple and filt else None,
            allowed=_allowed(ctx, _unhidden(ctx, None if simple else filt)),
        ),
    )
    hits = ranking.hits
    results = note_infos(
        ctx,
        [(h.path, h.relevance) for h in hits],
        detailed=p.response_format == "detailed",
        excerpts={h.path: h.snippet for h in hits},
    )
    add_note_dates(ctx, results, p.filters)
    suggestion = None
    narrowed = describe_filters(p.filters, p.path)
    if not hits:
        suggestion = f"No notes found matching '{p.query}'. {_broader(p.query)}"
        if narrowed:
            suggestion += f" Filters also applied ({narrowed}); try without them."
    elif ranking.total > len(hits):
        suggestion = (
            f"Showing {len(hits)} of {ranking.total} results. Try narrowing your search with "
            "filters={ tags: ['specific-tag'] } or a more specific query."
        )
    if ranking.any_word:
        note = f"No note contains every word of '{p.query}'; these contain some of them."
        suggestion = f"{note} {suggestion}" if suggestion else note
    if ranking.notice:
        note = ranking.notice[0].upper() + ranking.notice[1:].rstrip(".") + "."
        suggestion = f"{suggestion} {note}" if suggestion else note
    out = _result(results, ranking.total, suggestion=suggestion)
    out["ranking"] = ranking.ranking
    return out


def _subfolders(folder_path: str, rel: str, depth: int) -> list[str]:
    out: list[str] = []
    try:
        entries = sorted(os.scandir(folder_path), key=lambda e: e.name.lower())
    except OSError:
        return out
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        child = f"{rel}/{entry.name}" if rel else entry.name
        out.append(child)
        if depth > 1:
            out.extend(_subfolders(entry.path, child, depth - 1))
    return out


def _structure(ctx: ToolContext, p: QueryVaultParams) -> QueryResult:
    folder = folder_arg(p.path)
    where = confine(ctx.root, folder)
    if not where.is_dir():
        what = "is a note, not a folder" if where.is_file() else "doesn't exist"
        raise NotFoundError(
            f"Folder '{folder}' {what}. Use queryType='list_structure' with path='' to see the "
            "top-level folders."
        )
    depth = p.filters.depth if p.filters and p.filters.depth else 2
    folders = _subfolders(str(where), folder, depth)
    counts = {k: n for k, (n, _) in folder_note_counts(ctx.conn).items()}
    notes = notes_in_folder(ctx.conn, folder)
    rules = ctx.rules
    if rules.active:
        # What the rules hide is neither listed nor counted, in totalFound or a folder's
        # noteCount: either would give its existence away.
        folders = [f for f in folders if not rules.hidden(f)]
        for path, parent in notes:
            if rules.hidden(path):
                counts[parent] -= 1
        notes = [(path, parent) for path, parent in notes if not rules.hidden(path)]

    def notes_below(f: str) -> int:
        low = f.lower() + "/"
        return sum(
            n for k, n in counts.items() if k.lower() == f.lower() or k.lower().startswith(low)
        )

    entries: list[NoteInfo] = [
        {
            "path": f,
            "title": f.rsplit("/", 1)[-1],
            "relevance": 1.0,
            "type": "folder",
            "noteCount": notes_below(f),
        }
        for f in folders
    ]
    base = folder.count("/") + 1 if folder else 0
    expanded = {folder} | {f for f in folders if f.count("/") + 1 - base < depth}
    note_paths = [path for path, parent in notes if parent in expanded]
    total = len(entries) + len(note_paths)
    room = max(p.limit - len(entries), 0)
    entries = entries[: p.limit]
    entries.extend(
        note_infos(
            ctx, [(n, 1.0) for n in note_paths[:room]], detailed=p.response_format == "detailed"
        )
    )
    suggestion = None
    if total == 0:
        suggestion = f"Folder '{folder or '/'}' is empty."
    elif total > len(entries):
        sub = next((f for f in folders if f.count("/") + 1 - base == 1), "")
        hint = f" or list a subfolder, e.g. path='{sub}'" if sub else ""
        suggestion = (
            f"Showing {len(entries)} of {total} entries (folders first). Raise limit (up to 100)"
            f"{hint}."
        )
    return _result(entries, total, suggestion=suggestion)


def _related(ctx: ToolContext, p: QueryVaultParams) -> QueryResult:
    if not p.reference_note:
        raise InvalidArgumentError(
            "queryType='find_related' needs 'referenceNote', e.g. "
            "referenceNote='Projects/Plan.md' (a path or a title)."
        )
    ref = resolve_note(ctx, p.reference_note, param="referenceNote")
    filt = note_filter(ctx, p.filters, folder=p.path)
    related = related_notes(ctx, ref, allowed=_allowed(ctx, filt))
    related = [r for r in related if not ctx.rules.hidden(r.path)]  # neither shown nor counted
    shown = related[: p.limit]
    results = note_infos(
        ctx,
        [(r.path, r.relevance) for r in shown],
        detailed=p.response_format == "detailed",
        relations={r.path: r.relation for r in shown},
    )
    add_note_dates(ctx, results, p.filters)
    suggestion = None
    if not related:
        suggestion = (
            f"Nothing links to or from '{ref}', shares its tags or has similar text. Try "
            "queryType='semantic_search' with words from the note."
        )
    elif len(related) > len(shown):
        suggestion = (
            f"Showing the {len(shown)} most related of {len(related)} notes. Narrow with "
            "filters={ tags: [...] } or path='Folder', or raise limit."
        )
    return _result(results, len(related), suggestion=suggestion)


def _unknown_tags(ctx: ToolContext, tags: tuple[str, ...]) -> str:
    missing = []
    for tag in tags:
        if not tag_in_use(ctx.conn, tag):
            like = tags_like(ctx.conn, tag.lower()[:4])
            near = f" (similar: {', '.join('#' + t for t in like)})" if like else ""
            missing.append(f"no note has the tag #{tag}{near}")
    return "; ".join(missing)


def _metadata(ctx: ToolContext, p: QueryVaultParams, *, recent: bool = False) -> QueryResult:
    filt = note_filter(ctx, p.filters, folder=p.path)
    if not recent and filt is None and not p.query:
        raise InvalidArgumentError(
            "queryType='search_by_metadata' needs 'filters' (or 'query'), e.g. "
            "filters={tags: ['urgent'], dateRange: {days: 7}} or filters={status: 'active'}."
        )
    detailed = p.response_format == "detailed"
    if p.query and not recent:
        return _semantic(ctx, p)
    rng = p.filters.date_range if p.filters else None
    # A dateRange on the note's own date (no 'field') lists notes by that date, newest first.
    by_date = rng is not None and "field" not in rng.model_fields_set
    page = page_notes(
        ctx.conn,
        _unhidden(ctx, filt) or NoteFilter(),
        order="date" if by_date else "modified",
        limit=p.limit,
        count_up_to=_COUNT_UP_TO,
    )
    total = page.total
    of = f"{total}" if page.exact else f"more than {total:,}"
    results = note_infos(ctx, [(path, 1.0) for path in page.paths], detailed=detailed)
    add_note_dates(ctx, results, p.filters)
    what = describe_filters(p.filters, p.path)
    suggestion = None
    if total == 0:
        problem = _unknown_tags(ctx, filt.tags) if filt else ""
        suggestion = (
            f"No notes match {what or 'these filters'}"
            + (f": {problem}" if problem else "")
            + ". Try fewer filters, a parent tag (tags include nested tags), or a wider dateRange."
        )
    elif total > len(results):
        if recent:
            suggestion = (
                f"Showing the {len(results)} most recently modified of {of} notes. Narrow "
                "with filters={ dateRange: { days: 7 } } or path='Folder', or raise limit."
            )
        else:
            suggestion = (
                f"Showing {len(results)} of {of} results, newest first. Try narrowing with "
                "more filters (tags, folder, properties, dateRange) or raise limit."
            )
    return _result(results, total, suggestion=suggestion)


def obsidian_query_vault(ctx: ToolContext, params: QueryVaultParams) -> QueryResult:
    """Query the Obsidian vault for discovery and search operations.

    This is a read-only tool for finding and discovering vault content: it returns summaries
    (path, title, relevance; in detailed format also an excerpt, tags and dates), never whole
    notes. Use obsidian_get_context to read the notes it finds.

    queryType:
    - semantic_search: notes matching 'query', best first ('ranking' tells how they were
      ranked). Example: {queryType: 'semantic_search', query: 'machine learning'}
    - list_structure: the folders under 'path' with their note counts, then the notes in them
      (filters.depth levels, default 2). Example: {queryType: 'list_structure', path: 'Projects'}
    - find_related: notes linking to or from 'referenceNote', sharing its tags, or with similar
      text; 'relation' says why. Example: {queryType: 'find_related',
      referenceNote: 'Architecture Decisions.md'}
    - search_by_metadata: notes matching 'filters' (tags incl. nested tags, folder, properties,
      dateRange), newest first. Example: {queryType: 'search_by_metadata',
      filters: {tags: ['urgent'], dateRange: {days: 7}}}
    - recent_changes: the most recently modified notes. Example: {queryType: 'recent_changes',
      limit: 20}

    Results are cut at 'limit' (default 10): 'totalFound' says how many matched and
    'suggestion' says how to narrow or widen the query. responseFormat='concise' saves tokens.
    """
    ctx.fresh()
    match params.query_type:
        case "semantic_search":
            return _semantic(ctx, params)
        case "list_structure":
            return _structure(ctx, params)
        case "find_related":
            return _related(ctx, params)
        case "search_by_metadata":
            return _metadata(ctx, params)
        case "recent_changes":
            return _metadata(ctx, params, recent=True)
        case _:
            assert_never(params.query_type)
