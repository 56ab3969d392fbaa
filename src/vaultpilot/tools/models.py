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
* ``edit_note`` (an operation the specification does not have) takes ``edits``
  (``[{oldText, newText, replaceAll}]``), or ``heading``/``blockId`` with ``content`` and
  ``position``: exact changes without resending the whole note.
* ``dryRun`` (every operation): return the unified diff of each file it would change, write
  nothing.
* ``approvedFiles`` is not in the schema the model sees: the agent loop passes it after a person
  approved only some files of a multi-file change (the diffs' ``path`` values); see
  ``tools.manage``.

Every free-text parameter and every list is bounded, so no call can hold the vault's lock for
long on a giant argument: queries ``QUERY_MAX`` characters, paths, titles and folders
``NAME_MAX``, tags ``TAG_MAX``, other short values ``SHORT_MAX``, lists and objects
``ITEMS_MAX`` entries (or less where the tool says), the conditions of one ``filters`` together
``FILTERS_MAX`` (they make one SQL expression, whose depth SQLite caps), note content the
index's per-note maximum (``MAX_NOTE_BYTES`` characters, and as many bytes in UTF-8: a larger
note would never be indexed). The limits show in the schema as ``maxLength``/``maxItems``; the
registry says which limit a refused call broke and what to do.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from vaultpilot.index.scan import MAX_NOTE_BYTES

__all__ = [
    "FILTERS_MAX",
    "ITEMS_MAX",
    "NAME_MAX",
    "QUERY_MAX",
    "SHORT_MAX",
    "TAG_MAX",
    "ContextType",
    "DateRange",
    "EditSpec",
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
    "edit_note",
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

QUERY_MAX = 1_000  # characters of a search query (a question is far shorter)
NAME_MAX = 500  # a note path, title or folder (file systems stop near 255 per name)
TAG_MAX = 200
SHORT_MAX = 100  # dates, versions
ITEMS_MAX = 1_000  # entries of a list or object that has no smaller limit of its own
FILTERS_MAX = 100  # filter conditions and values in one query, all counted together


def _fits_a_note(text: str | None) -> str | None:
    # maxLength counts characters; the index's limit is in bytes, and a note written larger
    # would be on disk but never indexed (unreadable by the tools). Checked after maxLength, so
    # a giant string is refused before it is encoded.
    if text is not None and len(text) * 4 > MAX_NOTE_BYTES:  # only then can it be too large
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_NOTE_BYTES:
            raise PydanticCustomError(
                "note_too_large",
                "Note content is {size} bytes; at most {max_bytes} fit in a note",
                {"size": size, "max_bytes": MAX_NOTE_BYTES},
            )
    return text


_Name = Annotated[str, Field(max_length=NAME_MAX)]
_Tag = Annotated[str, Field(max_length=TAG_MAX)]
_Content = Annotated[str | None, Field(max_length=MAX_NOTE_BYTES), AfterValidator(_fits_a_note)]
Scalar = str | int | float | bool
# In the schema a value is any scalar, and a property value any JSON; the descriptions say what
# fits. (Spelling out every type union for each operator would triple the schema's size.)
_AnyScalar = Annotated[Scalar | None, WithJsonSchema({})]
_AnyValue = Annotated["PropertyValue", WithJsonSchema({})]

_FORMAT_DOC = "'concise' (~50 tokens per note) or 'detailed' (adds excerpt, tags, dates)."


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")


class PropertyOps(_Params):
    """Operators for one property; every operator given must hold.

    eq (text case-insensitive; '[[X]]' matches 'X'), ne, in (any of), contains (text or list
    item), gt/gte/lt/lte (numbers, or ISO dates as text), exists (true/false). The schema the
    model sees carries only the filter examples in ``QueryFilters.properties``: the operator
    names speak for themselves, and a description per operator cost ~150 tokens per request.
    """

    eq: _AnyScalar = None
    ne: _AnyScalar = None
    # QueryFilters bounds this list (FILTERS_MAX) and every text here (QUERY_MAX): a limit on a
    # field would drown its one clear message in an error per member of the PropertyValue union.
    in_: Annotated[list[Scalar] | None, WithJsonSchema({"type": "array"})] = Field(None, alias="in")
    contains: str | None = None  # a LIKE scan: QueryFilters bounds it (QUERY_MAX)
    gt: _AnyScalar = None
    gte: _AnyScalar = None
    lt: _AnyScalar = None
    lte: _AnyScalar = None
    exists: bool | None = None


PropertyValue = Scalar | list[Scalar] | PropertyOps


class DateRange(_Params):
    """A time window on the notes' modified (default) or created date."""

    days: int | None = Field(None, ge=1, le=100_000, description="The last N days.")
    from_: str | None = Field(
        None, alias="from", max_length=SHORT_MAX, description="YYYY-MM-DD, inclusive."
    )
    to: str | None = Field(None, max_length=SHORT_MAX, description="YYYY-MM-DD, inclusive.")
    field: Literal["modified", "created"] = Field(
        "modified", description="'created' reads the 'created' (or 'date') property."
    )


class QueryFilters(_Params):
    """Metadata filters; every filter given must hold. Other keys are property conditions."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    tags: list[_Tag] | None = Field(
        None,
        max_length=FILTERS_MAX,
        description="All required; nested tags count ('project' matches 'project/active').",
    )
    folder: str | None = Field(None, max_length=NAME_MAX, description="This folder or below.")
    date_range: DateRange | None = Field(None, description="E.g. {days: 7}.")
    properties: dict[str, _AnyValue] | None = Field(
        None,
        max_length=FILTERS_MAX,
        description="{status: 'active'}, {status: ['a', 'b']} (any of), {priority: {gte: 2}}, "
        "{attendees: {contains: 'Priya'}}, {owner: {exists: true}}; operators: eq ne in "
        "contains gt gte lt lte exists.",
    )
    depth: int | None = Field(None, ge=1, le=10, description="list_structure levels (default 2).")

    @model_validator(mode="after")
    def _bounded(self) -> QueryFilters:
        # Every condition and every listed value becomes a term of one SQL expression, whose
        # depth SQLite caps at 1,000: count them all, including property keys given at the top
        # level (``model_extra``, validated later by tools.filters).
        given = [*(self.properties or {}).items(), *(self.model_extra or {}).items()]
        for name, _ in given:
            _weight(name)  # a property name is compared too: the same length limit
        count = len(self.tags or []) + sum(_weight(value) for _, value in given)
        if count > FILTERS_MAX:
            raise PydanticCustomError(
                "too_many_filters",
                "{count} filter conditions; at most {max_items} are combined",
                {"count": count, "max_items": FILTERS_MAX},
            )
        return self


def _weight(value: object, depth: int = 0) -> int:
    """How many conditions a property filter adds; refuses a value too long to compare."""
    if isinstance(value, PropertyOps):
        value = value.model_dump(exclude_none=True)
    if depth > 2:  # deeper is no valid filter (tools.filters says so); never recurse on it
        return 1
    if isinstance(value, dict):
        return sum(_weight(v, depth + 1) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_weight(v, depth + 1) for v in value) or 1
    if isinstance(value, str) and len(value) > QUERY_MAX:
        raise PydanticCustomError(
            "filter_value_too_long",
            "A property name or value has {length} characters; at most {max_length} are compared",
            {"length": len(value), "max_length": QUERY_MAX},
        )
    return 1


class QueryVaultParams(_Params):
    query_type: QueryType = Field(description="See the tool description.")
    query: str | None = Field(
        None,
        max_length=QUERY_MAX,
        description="Required for semantic_search; optional for search_by_metadata.",
    )
    path: str = Field(
        "", max_length=NAME_MAX, description="Folder for list_structure ('' = root), else a filter."
    )
    reference_note: str | None = Field(
        None, max_length=NAME_MAX, description="find_related: a note path or title."
    )
    filters: QueryFilters | None = Field(
        None, description="For search_by_metadata; also narrows the other query types."
    )
    limit: int = Field(10, ge=1, le=100, description="Max results (1-100).")
    response_format: ResponseFormat = Field("detailed", description=_FORMAT_DOC)


class GetContextParams(_Params):
    context_type: ContextType = Field(description="See the tool description.")
    target: str | None = Field(None, max_length=NAME_MAX, description="A note path or title.")
    targets: list[_Name] | None = Field(None, max_length=20, description="read_multiple (max 20).")
    date: str | None = Field(
        None,
        max_length=SHORT_MAX,
        description="daily_note: 'today', 'yesterday', 'tomorrow' or 'YYYY-MM-DD'.",
    )
    include_metadata: StrictBool = Field(True, description="Include frontmatter.")
    include_backlinks: StrictBool = Field(False, description="Also list linking notes.")
    max_related: int = Field(3, ge=0, le=20, description="gather_related: how many (0-20).")
    response_format: ResponseFormat = Field(
        "detailed", description="'concise': start and outline only (never pass to update_note)."
    )


# One exact replacement of edit_note. No docstring or field descriptions: the tool description
# says what they mean, and each description would cost tokens in every request.
class EditSpec(_Params):
    old_text: str = Field(max_length=MAX_NOTE_BYTES)
    new_text: str = Field(max_length=MAX_NOTE_BYTES)
    replace_all: StrictBool = False


EDITS_MAX = 100  # edits in one edit_note call


class VaultManagerParams(_Params):
    operation: VaultOperation = Field(description="See the tool description.")
    target: str | None = Field(
        None, max_length=NAME_MAX, description="Note or folder path (a note may be a title)."
    )
    targets: list[_Name] | None = Field(None, max_length=500, description="Bulk: paths or titles.")
    content: _Content = Field(
        None,
        description="Markdown. update_note: the whole new note (without frontmatter it keeps "
        "its own).",
    )
    destination: str | None = Field(
        None,
        max_length=NAME_MAX,
        description="A folder ('/' = root), or for move_note a new '.md' path.",
    )
    metadata: dict[str, Any] | None = Field(
        None,
        max_length=ITEMS_MAX,
        description="Frontmatter to set (null removes a key); bulk_tag: see above.",
    )
    metadata_changes: dict[str, Any] | None = Field(
        None, max_length=ITEMS_MAX, description="bulk_update_metadata: keys to set (null removes)."
    )
    confirm_destructive: StrictBool = Field(False, description="Required for deletes.")
    create_folders: StrictBool = Field(True, description="Create missing parent folders.")
    expected_version: str | None = Field(
        None,
        max_length=SHORT_MAX,
        description="The 'version' you read; refused if the note changed since.",
    )
    recursive: StrictBool = Field(False, description="delete_folder on a non-empty folder.")
    edits: list[EditSpec] | None = Field(
        None, max_length=EDITS_MAX, description="edit_note: exact replacements."
    )
    heading: str | None = Field(
        None, max_length=NAME_MAX, description="edit_note: a heading's section, with content."
    )
    block_id: str | None = Field(
        None, max_length=SHORT_MAX, description="edit_note: a ^block id, with content."
    )
    dry_run: StrictBool = Field(False, description="Return the diff of the change; write nothing.")
    position: Literal["end", "replace"] = Field(
        "end", description="heading/blockId: add at the end or replace."
    )
    # Set by the agent loop from a person's per-file approval, never by the model (the loop drops
    # it from the model's arguments): only these files of the change are written.
    approved_files: SkipJsonSchema[list[_Name] | None] = Field(None, max_length=ITEMS_MAX * 10)
