"""Parameters of the three vault tools, as the specification (MVP Tool Design) writes them.

Each tool takes one pydantic model; its JSON Schema (``registry``) is what the model, MCP, the
HTTP API and the docs see, so every field carries a description written for the model. Wire names
are camelCase exactly as the specification writes them (``queryType``, ``responseFormat``,
``confirmDestructive``, ...); snake_case names are accepted too. Unknown parameters are refused
(the error lists the valid ones).

Beyond the specification, and documented in the field descriptions:

* ``filters`` is typed: ``tags``, ``folder``, ``dateRange``, ``properties``, ``depth`` (for
  ``list_structure``), and any other key is read as a property condition.
* ``obsidian_vault_manager`` takes ``expectedVersion`` (refuse a write if the note changed since
  it was read) and ``recursive`` (needed, with ``confirmDestructive``, to delete a folder that is
  not empty).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

__all__ = [
    "ContextType",
    "DateRange",
    "GetContextParams",
    "PropertyOps",
    "PropertyValue",
    "QueryFilters",
    "QueryType",
    "QueryVaultParams",
    "ResponseFormat",
    "VaultManagerParams",
    "VaultOperation",
]

QueryType = Literal[
    "semantic_search", "list_structure", "find_related", "search_by_metadata", "recent_changes"
]
ContextType = Literal[
    "read_note", "read_multiple", "gather_related", "daily_note", "note_with_backlinks"
]
VaultOperation = Literal[
    "create_note",
    "update_note",
    "append_note",
    "delete_note",
    "move_note",
    "create_folder",
    "delete_folder",
    "move_folder",
    "bulk_tag",
    "bulk_move",
    "bulk_update_metadata",
]
ResponseFormat = Literal["detailed", "concise"]
Scalar = str | int | float | bool
# In the schema a value is any scalar, and a property value any JSON; the descriptions say what
# fits. (Spelling out every type union for each operator would triple the schema's size.)
_AnyScalar = Annotated[Scalar | None, WithJsonSchema({})]
_AnyValue = Annotated["PropertyValue", WithJsonSchema({})]

_FORMAT_DOC = (
    "'concise' returns only the essentials (about 50 tokens per note in searches); 'detailed' "
    "adds excerpts, tags and dates (about 200 tokens per note)."
)


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class PropertyOps(_Params):
    """Operators for one property; every operator given must hold."""

    eq: _AnyScalar = Field(
        None, description="Equal (text case-insensitive; '[[X]]' links match 'X')."
    )
    ne: _AnyScalar = Field(None, description="Not equal (notes without the property match).")
    in_: Annotated[list[Scalar] | None, WithJsonSchema({"type": "array"})] = Field(
        None, alias="in", description="Equal to any of these."
    )
    contains: str | None = Field(None, description="Text contains this (any list item counts).")
    gt: _AnyScalar = Field(None, description="Greater than (numbers, or ISO dates as text).")
    gte: _AnyScalar = Field(None, description="Greater than or equal.")
    lt: _AnyScalar = Field(None, description="Less than.")
    lte: _AnyScalar = Field(None, description="Less than or equal.")
    exists: bool | None = Field(None, description="true: the property is set; false: it is not.")


PropertyValue = Scalar | list[Scalar] | PropertyOps


class DateRange(_Params):
    """A time window on the notes' modified (default) or created date."""

    days: int | None = Field(
        None, ge=1, description="The last N days, up to now (e.g. 7 for the last week)."
    )
    from_: str | None = Field(None, alias="from", description="Start date, YYYY-MM-DD, inclusive.")
    to: str | None = Field(None, description="End date, YYYY-MM-DD, inclusive.")
    field: Literal["modified", "created"] = Field(
        "modified",
        description="'modified': the file's modification time. 'created': the note's 'created' "
        "(or 'date') property, else its modification date.",
    )


class QueryFilters(_Params):
    """Metadata filters; every filter given must hold. Other keys are property conditions."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    tags: list[str] | None = Field(
        None,
        description="Notes must have every one of these tags ('#' optional). Nested tags count: "
        "'project' matches 'project/active'.",
    )
    folder: str | None = Field(None, description="Only notes in this folder or below it.")
    date_range: DateRange | None = Field(
        None,
        description="E.g. {days: 7} or {from: '2025-01-01', to: '2025-01-31', field: 'created'}.",
    )
    properties: dict[str, _AnyValue] | None = Field(
        None,
        description="Frontmatter properties: {status: 'active'} (equality), {status: ['a', 'b']} "
        "(any of), {priority: {gte: 2}}, {attendees: {contains: 'Priya'}}, "
        "{due: {lt: '2025-12-01'}}, {owner: {exists: true}}. A property may also be given as a "
        "top-level filter key: {status: 'active'}.",
    )
    depth: int | None = Field(
        None, ge=1, le=10, description="list_structure only: folder levels to show (default 2)."
    )


class QueryVaultParams(_Params):
    query_type: QueryType = Field(
        description="semantic_search: notes matching 'query' (ranked). list_structure: folders "
        "with note counts and the notes in 'path'. find_related: notes linked to, linking from, "
        "sharing tags with or similar to 'referenceNote'. search_by_metadata: notes matching "
        "'filters' (and 'query' words if given). recent_changes: most recently modified notes."
    )
    query: str | None = Field(
        None,
        description="Search words; required for semantic_search, optional for "
        "search_by_metadata (then notes must also match the words).",
    )
    path: str = Field(
        "",
        description="Folder for list_structure ('' is the vault root); for other query "
        "types, limits results to this folder.",
    )
    reference_note: str | None = Field(
        None, description="find_related: the note's path (e.g. 'Projects/Plan.md') or its title."
    )
    filters: QueryFilters | None = Field(
        None,
        description="Metadata filters, e.g. {tags: ['urgent'], dateRange: {days: 7}}. Used by "
        "search_by_metadata, and to narrow semantic_search, find_related and recent_changes.",
    )
    limit: int = Field(10, ge=1, le=100, description="Maximum results to return (1-100).")
    response_format: ResponseFormat = Field("detailed", description=_FORMAT_DOC)


class GetContextParams(_Params):
    context_type: ContextType = Field(
        description="read_note: one note with metadata. read_multiple: several notes ('targets'; "
        "the first is primaryNote, the rest relatedNotes). gather_related: a note plus its most "
        "related notes. daily_note: the daily note for 'date'. note_with_backlinks: a note plus "
        "every note linking to it, with the text around each link."
    )
    target: str | None = Field(
        None, description="The note's path (e.g. 'Projects/ML Project.md') or its title."
    )
    targets: list[str] | None = Field(
        None, max_length=20, description="read_multiple: the notes to read (at most 20)."
    )
    date: str | None = Field(
        None,
        description="daily_note: 'today' (default), 'yesterday', 'tomorrow' or a date "
        "'YYYY-MM-DD'.",
    )
    include_metadata: bool = Field(True, description="Include each note's frontmatter.")
    include_backlinks: bool = Field(
        False, description="Also list the notes linking to the primary note (with context)."
    )
    max_related: int = Field(
        3, ge=0, le=20, description="gather_related: how many related notes to include (0-20)."
    )
    response_format: ResponseFormat = Field(
        "detailed",
        description="'detailed': full note content. 'concise': the start of each note and its "
        "outline, to save tokens (never pass concise content to update_note).",
    )


class VaultManagerParams(_Params):
    operation: VaultOperation = Field(
        description="What to change. Notes: create_note, update_note (replace content), "
        "append_note, delete_note, move_note. Folders: create_folder, delete_folder, "
        "move_folder. Bulk: bulk_tag, bulk_move, bulk_update_metadata. Moves update every "
        "link to the moved notes across the vault."
    )
    target: str | None = Field(
        None,
        description="The note or folder for single operations, e.g. 'Projects/Plan.md' "
        "(an existing note may also be named by its title).",
    )
    targets: list[str] | None = Field(
        None, max_length=500, description="Notes for bulk operations (paths or titles)."
    )
    content: str | None = Field(
        None,
        description="Markdown for create_note, update_note (the whole new content; if it has no "
        "frontmatter the note keeps its current frontmatter) and append_note (added at the end).",
    )
    destination: str | None = Field(
        None,
        description="move_note/bulk_move: the folder to move into ('/' is the vault root), or "
        "for move_note a new path ending in '.md' (a rename). move_folder: an existing folder "
        "to move into, or the folder's new path.",
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="create_note: frontmatter for the new note, e.g. {tags: ['project'], "
        "status: 'planning'}. update_note/append_note: properties to set (null removes one). "
        "bulk_tag: {tags: [...]} adds tags, {removeTags: [...]} removes tags (both may be given).",
    )
    metadata_changes: dict[str, Any] | None = Field(
        None,
        description="bulk_update_metadata: properties to set on every target, e.g. "
        "{status: 'done', reviewed: '2025-01-15'}; a null value removes that property.",
    )
    confirm_destructive: bool = Field(
        False, description="Must be true for delete_note and delete_folder (they go to .trash/)."
    )
    create_folders: bool = Field(
        True, description="Create missing parent folders (create_note, create_folder, moves)."
    )
    expected_version: str | None = Field(
        None,
        description="The 'version' from when you read the note; the change is refused if the "
        "note changed since (update_note, append_note, move_note, delete_note).",
    )
    recursive: bool = Field(
        False,
        description="delete_folder: also needed (with confirmDestructive) when the folder is "
        "not empty; everything in it goes to .trash/.",
    )
