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

_FORMAT_DOC = "'concise' (~50 tokens per note) or 'detailed' (adds excerpt, tags, dates)."


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class PropertyOps(_Params):
    """Operators for one property; every operator given must hold.

    eq (text case-insensitive; '[[X]]' matches 'X'), ne, in (any of), contains (text or list
    item), gt/gte/lt/lte (numbers, or ISO dates as text), exists (true/false). The schema the
    model sees carries only the filter examples in ``QueryFilters.properties``: the operator
    names speak for themselves, and a description per operator cost ~150 tokens per request.
    """

    eq: _AnyScalar = None
    ne: _AnyScalar = None
    in_: Annotated[list[Scalar] | None, WithJsonSchema({"type": "array"})] = Field(None, alias="in")
    contains: str | None = None
    gt: _AnyScalar = None
    gte: _AnyScalar = None
    lt: _AnyScalar = None
    lte: _AnyScalar = None
    exists: bool | None = None


PropertyValue = Scalar | list[Scalar] | PropertyOps


class DateRange(_Params):
    """A time window on the notes' modified (default) or created date."""

    days: int | None = Field(None, ge=1, description="The last N days.")
    from_: str | None = Field(None, alias="from", description="YYYY-MM-DD, inclusive.")
    to: str | None = Field(None, description="YYYY-MM-DD, inclusive.")
    field: Literal["modified", "created"] = Field(
        "modified", description="'created' reads the 'created' (or 'date') property."
    )


class QueryFilters(_Params):
    """Metadata filters; every filter given must hold. Other keys are property conditions."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    tags: list[str] | None = Field(
        None, description="All required; nested tags count ('project' matches 'project/active')."
    )
    folder: str | None = Field(None, description="This folder or below.")
    date_range: DateRange | None = Field(None, description="E.g. {days: 7}.")
    properties: dict[str, _AnyValue] | None = Field(
        None,
        description="{status: 'active'}, {status: ['a', 'b']} (any of), {priority: {gte: 2}}, "
        "{attendees: {contains: 'Priya'}}, {owner: {exists: true}}; operators: eq ne in "
        "contains gt gte lt lte exists.",
    )
    depth: int | None = Field(None, ge=1, le=10, description="list_structure levels (default 2).")


class QueryVaultParams(_Params):
    query_type: QueryType = Field(description="See the tool description.")
    query: str | None = Field(
        None, description="Required for semantic_search; optional for search_by_metadata."
    )
    path: str = Field("", description="Folder for list_structure ('' = root), else a filter.")
    reference_note: str | None = Field(None, description="find_related: a note path or title.")
    filters: QueryFilters | None = Field(
        None, description="For search_by_metadata; also narrows the other query types."
    )
    limit: int = Field(10, ge=1, le=100, description="Max results (1-100).")
    response_format: ResponseFormat = Field("detailed", description=_FORMAT_DOC)


class GetContextParams(_Params):
    context_type: ContextType = Field(description="See the tool description.")
    target: str | None = Field(None, description="A note path or title.")
    targets: list[str] | None = Field(None, max_length=20, description="read_multiple (max 20).")
    date: str | None = Field(
        None, description="daily_note: 'today', 'yesterday', 'tomorrow' or 'YYYY-MM-DD'."
    )
    include_metadata: bool = Field(True, description="Include frontmatter.")
    include_backlinks: bool = Field(False, description="Also list linking notes.")
    max_related: int = Field(3, ge=0, le=20, description="gather_related: how many (0-20).")
    response_format: ResponseFormat = Field(
        "detailed", description="'concise': start and outline only (never pass to update_note)."
    )


class VaultManagerParams(_Params):
    operation: VaultOperation = Field(description="See the tool description.")
    target: str | None = Field(None, description="Note or folder path (a note may be a title).")
    targets: list[str] | None = Field(None, max_length=500, description="Bulk: paths or titles.")
    content: str | None = Field(
        None,
        description="Markdown. update_note: the whole new note (without frontmatter it keeps "
        "its own).",
    )
    destination: str | None = Field(
        None, description="A folder ('/' = root), or for move_note a new '.md' path."
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Frontmatter to set (null removes a key); bulk_tag: see above."
    )
    metadata_changes: dict[str, Any] | None = Field(
        None, description="bulk_update_metadata: keys to set (null removes)."
    )
    confirm_destructive: bool = Field(False, description="Required for deletes.")
    create_folders: bool = Field(True, description="Create missing parent folders.")
    expected_version: str | None = Field(
        None, description="The 'version' you read; refused if the note changed since."
    )
    recursive: bool = Field(False, description="delete_folder on a non-empty folder.")
