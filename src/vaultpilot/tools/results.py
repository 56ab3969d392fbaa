"""Result shapes of the three tools: plain JSON, as the specification writes them.

``QueryResult``/``NoteInfo`` (obsidian_query_vault), ``ContextResult``/``NoteContent``/
``BacklinkInfo`` (obsidian_get_context) and ``OperationResult`` (obsidian_vault_manager) keep the
specification's field names. Fields the specification does not have, each optional:

* ``QueryResult.ranking`` (which ranking ordered a search: "keyword", later "hybrid"),
  ``NoteInfo.type``/``noteCount`` (folders in list_structure), ``NoteInfo.relation`` (why a note
  is related in find_related), ``NoteInfo.outline``/``wordCount`` (detailed: the first headings
  and the size, to decide what to read), ``NoteInfo.date``/``dateSource`` (the note's date
  and where it was read, when a ``dateRange`` filters on it), ``QueryResult.error`` (the call
  failed; see the message).
* ``NoteContent.version`` (the content hash to pass back as ``expectedVersion``; absent for a
  daily note that does not exist yet, which has ``exists: false`` instead),
  ``NoteContent.truncated``, ``NoteContent.relation``; ``ContextResult.warnings``,
  ``ContextResult.message``/``suggestedCall`` (a missing daily note and how to create it),
  ``ContextResult.error``.
* ``OperationResult.version`` (the note's version after a single-note write),
  ``OperationResult.dryRun``/``diffs`` (with ``dryRun: true``: the unified diff per file).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = [
    "BacklinkInfo",
    "ContextResult",
    "Failure",
    "NoteContent",
    "NoteInfo",
    "OperationResult",
    "QueryResult",
]


class NoteInfo(TypedDict):
    path: str
    title: str
    relevance: float
    type: NotRequired[str]  # "folder" in list_structure
    noteCount: NotRequired[int]
    relation: NotRequired[str]
    excerpt: NotRequired[str]
    tags: NotRequired[list[str]]
    outline: NotRequired[list[str]]  # the note's first headings (detailed)
    wordCount: NotRequired[int]
    created: NotRequired[str]
    modified: NotRequired[str]
    date: NotRequired[str]  # the note's date, with a dateRange filter on it
    dateSource: NotRequired[str]  # where that date was read: date, created, filename, modified


class QueryResult(TypedDict):
    results: list[NoteInfo]
    totalFound: int
    truncated: bool
    suggestion: NotRequired[str]
    ranking: NotRequired[str]
    error: NotRequired[str]


class NoteContent(TypedDict):
    path: str
    title: str
    content: str
    wordCount: int
    version: NotRequired[str]
    exists: NotRequired[bool]  # False only for a daily note that would be created
    metadata: NotRequired[dict[str, Any]]
    truncated: NotRequired[bool]
    relation: NotRequired[str]


class BacklinkInfo(TypedDict):
    notePath: str
    noteTitle: str
    context: str


class ContextResult(TypedDict):
    primaryNote: NoteContent
    tokenEstimate: int
    relatedNotes: NotRequired[list[NoteContent]]
    backlinks: NotRequired[list[BacklinkInfo]]
    metadataSummary: NotRequired[dict[str, Any]]
    warnings: NotRequired[list[str]]
    message: NotRequired[str]
    suggestedCall: NotRequired[dict[str, Any]]
    error: NotRequired[str]


class Failure(TypedDict):
    path: str
    reason: str


class OperationResult(TypedDict):
    success: bool
    operation: str
    affectedCount: int
    affectedPaths: list[str]
    message: str
    warnings: NotRequired[list[str]]
    partialSuccess: NotRequired[bool]
    failures: NotRequired[list[Failure]]
    version: NotRequired[str]
    dryRun: NotRequired[bool]  # nothing was written; ``diffs`` says what would be
    diffs: NotRequired[list[dict[str, str | None]]]  # tools.diffs.FileDiff.as_json()
