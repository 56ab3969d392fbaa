"""The wire shapes of the agent contract as pydantic models, and the JSON Schemas derived from them.

These models are the definition: field names, order and JSON shapes follow the Rust structs of the
contract documents (``spec/000_…``, ``spec/002_…``) exactly, with the gaps closed as
``spec/README.md`` says:

* ``api_version`` accepts ``"V1"``, ``"v1"`` or null and serialises as ``"V1"``.
* ``request_id``, ``plan_id``, ``task_id`` and ``correlation_id`` are UUIDs.
* ``payload`` is a plain JSON object; its fields depend on ``action``. The canonical command
  enums (``ObsidianAgentCommandV1``, ``GitAgentCommandV1``) are tagged by ``type`` (the action
  name), as serde's ``#[serde(tag = "type", rename_all = "snake_case")]`` writes them; the payload
  of an ``ActionRequest`` is such a command without its ``type``.
* Fields the models do not know are ignored, as serde does.

``json_schema(name)`` returns the schema of one of ``SCHEMA_NAMES`` (``vaultpilot contract schema
NAME``); snapshot tests pin each one. The agents do not import this module on their hot path
(see ``wire``); the orchestrator validates every reply with ``ActionResponse``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    RootModel,
    StrictInt,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from vaultpilot.errors import InvalidArgumentError

__all__ = [
    "GIT_COMMANDS",
    "SCHEMA_NAMES",
    "ActionRequest",
    "ActionResponse",
    "ActionResult",
    "ApiVersion",
    "CreateNote",
    "GitAdd",
    "GitAgentCommandV1",
    "GitAgentRequestV1",
    "GitCommit",
    "GitDiff",
    "GitLog",
    "GitStatus",
    "ObsidianAgentCommandV1",
    "ObsidianAgentRequestV1",
    "ReadNote",
    "UpdateNote",
    "describe_errors",
    "json_schema",
]

U32_MAX = 4_294_967_295


def _canonical_version(_: str) -> Literal["V1"]:
    return "V1"


ApiVersion = Annotated[
    Literal["V1", "v1"],
    AfterValidator(_canonical_version),
    Field(description='Protocol version: "V1" (written as "V1"; "v1" accepted).'),
]
Id = Annotated[UUID, Field(description="A UUID managed by the orchestrator and echoed.")]


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class ActionRequest(_Wire):
    """One invocation of an agent program, sent as JSON on its stdin."""

    request_id: UUID = Field(description="Unique per invocation; echoed in the response.")
    api_version: ApiVersion | None = None
    tool: str = Field(description="The agent addressed, e.g. 'obsidian_agent' or 'git_agent'.")
    action: str = Field(description="The operation, e.g. 'read_note' or 'git_status'.")
    context: str = Field(default="", description="Natural-language context; not used in v1.")
    plan_id: Id | None = None
    task_id: Id | None = None
    correlation_id: Id | None = Field(default=None, description="Used for distributed tracing.")
    payload: dict[str, Any] = Field(description="The action's parameters: a JSON object.")


class ActionResult(_Wire):
    """What an action produced; on a git_agent failure output_type is "error"."""

    output_type: str = Field(description='"text" on success, "error" when it failed.')
    data: str = Field(description="The output: a message, a note's text, git's output.")
    metadata: JsonValue = Field(default=None, description='e.g. {"exit_code": 128}, or null.')


class ActionResponse(_Wire):
    """An agent program's one reply, written as JSON on its stdout."""

    request_id: UUID = Field(description="The request's id; a fresh one if it was unparseable.")
    api_version: ApiVersion | None = None
    status: Literal["success", "error"]
    code: Annotated[StrictInt, Field(ge=0, le=65535)] = Field(
        description="0 success; obsidian_agent: 1 unparseable, 2 invalid, 3 vault error; "
        "git_agent: 1 error."
    )
    result: ActionResult | None = None
    error: str | None = None
    plan_id: Id | None = None
    task_id: Id | None = None
    correlation_id: Id | None = None


# --- obsidian_agent commands ---------------------------------------------------------------

VaultPath = Annotated[str, Field(min_length=1, description="The vault folder.")]
NoteName = Annotated[
    str,
    Field(
        min_length=1,
        description="The note inside the vault, e.g. 'ProjectPlan' or 'Projects/Plan.md'; "
        "'.md' is added when missing. Never leaves the vault.",
    ),
]


class CreateNote(_Wire):
    """Create ${vault_path}/${note_name}.md with content; refused if the note exists."""

    type: Literal["create_note"]
    vault_path: VaultPath
    note_name: NoteName
    content: str


class ReadNote(_Wire):
    """Read ${vault_path}/${note_name}.md and return its text."""

    type: Literal["read_note"]
    vault_path: VaultPath
    note_name: NoteName


class UpdateNote(_Wire):
    """Replace the text of the existing ${vault_path}/${note_name}.md with content."""

    type: Literal["update_note"]
    vault_path: VaultPath
    note_name: NoteName
    content: str


class ObsidianAgentCommandV1(
    RootModel[Annotated[CreateNote | ReadNote | UpdateNote, Field(discriminator="type")]]
):
    """A note command for obsidian_agent; type is the ActionRequest's action."""

    model_config = ConfigDict(frozen=True)


class ObsidianAgentRequestV1(_Wire):
    """The canonical obsidian_agent request: one command."""

    command: ObsidianAgentCommandV1


# --- git_agent commands --------------------------------------------------------------------


def _file_name(name: str) -> str:
    if not name:
        raise PydanticCustomError("file_name", "file names must not be empty")
    if name.startswith("-"):
        raise PydanticCustomError(
            "file_name",
            "'{name}' looks like an option; git_agent takes file names only "
            "(write './{name}' for a file whose name starts with '-')",
            {"name": name},
        )
    if "\x00" in name:
        raise PydanticCustomError("file_name", "file names must not contain NUL")
    return name


def _limit(value: object) -> object:
    # u32 in the canonical enum; the reference implementation sends a string such as "20".
    if isinstance(value, str):
        if value.isascii() and value.isdigit():
            return int(value)
        raise PydanticCustomError(
            "limit",
            'must be a whole number such as 10 or "10", got {value}',
            {"value": json.dumps(value)},
        )
    return value


def _not_blank(message: str) -> str:
    if not message.strip():
        raise PydanticCustomError("blank", "the commit message must not be blank")
    return message


FileName = Annotated[
    str, AfterValidator(_file_name), Field(description="A path inside the repository.")
]
RepoPath = Annotated[
    str | None,
    Field(description="The repository; default: the agent's working directory."),
]
Limit = Annotated[
    StrictInt,
    Field(ge=0, le=U32_MAX),
    BeforeValidator(
        _limit,
        json_schema_input_type=Annotated[int, Field(ge=0, le=U32_MAX)]
        | Annotated[str, Field(pattern="^[0-9]+$")],
    ),
]


class GitStatus(_Wire):
    """git status."""

    type: Literal["git_status"]
    repo_path: RepoPath = None


class GitDiff(_Wire):
    """git diff of the named files (all changes when files is empty or missing)."""

    type: Literal["git_diff"]
    files: list[FileName] = Field(default_factory=list)
    repo_path: RepoPath = None


class GitLog(_Wire):
    """git log of the last limit commits (default 10; a number or a numeric string)."""

    type: Literal["git_log"]
    limit: Limit = 10
    repo_path: RepoPath = None


class GitAdd(_Wire):
    """git add of the named files (at least one)."""

    type: Literal["git_add"]
    files: Annotated[list[FileName], Field(min_length=1)]
    repo_path: RepoPath = None


class GitCommit(_Wire):
    """git commit of what is staged, with message."""

    type: Literal["git_commit"]
    message: Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
    repo_path: RepoPath = None


class GitAgentCommandV1(
    RootModel[
        Annotated[
            GitStatus | GitDiff | GitLog | GitAdd | GitCommit,
            Field(discriminator="type"),
        ]
    ]
):
    """A git command for git_agent; type is the ActionRequest's action."""

    model_config = ConfigDict(frozen=True)


class GitAgentRequestV1(_Wire):
    """The canonical git_agent request: one command."""

    command: GitAgentCommandV1


GIT_COMMANDS: dict[str, type[_Wire]] = {
    "git_status": GitStatus,
    "git_diff": GitDiff,
    "git_log": GitLog,
    "git_add": GitAdd,
    "git_commit": GitCommit,
}

# --- schemas and messages ------------------------------------------------------------------

_SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "ActionRequest": ActionRequest,
    "ActionResponse": ActionResponse,
    "ActionResult": ActionResult,
    "ObsidianAgentCommandV1": ObsidianAgentCommandV1,
    "ObsidianAgentRequestV1": ObsidianAgentRequestV1,
    "GitAgentCommandV1": GitAgentCommandV1,
    "GitAgentRequestV1": GitAgentRequestV1,
}
SCHEMA_NAMES = tuple(_SCHEMA_MODELS)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, validation mode) of the model called ``name``."""
    model = _SCHEMA_MODELS.get(name)
    if model is None:
        raise InvalidArgumentError(
            f"No contract schema named '{name}'. Choose one of: {', '.join(SCHEMA_NAMES)}."
        )
    return model.model_json_schema()


def describe_errors(exc: ValidationError, *, where: str = "parameters") -> str:
    """One line naming every wrong field: "Missing 'message' in parameters; Invalid …"."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        if err["type"] == "missing":
            parts.append(f"Missing '{loc}' in {where}")
        else:
            parts.append(f"Invalid '{loc}' in {where}: {err['msg']}")
    return "; ".join(parts)
