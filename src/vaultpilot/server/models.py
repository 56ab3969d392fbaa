"""The server's wire shapes, as pydantic models: the OpenAPI document is generated from them.

* ``ToolCommand`` is the specification's ``IToolCommand`` (``{id, commandName, arguments,
  timestamp}``), the one request shape of ``POST /rpc`` and of WebSocket frames.
* One arguments model per command. Names follow the specification's tables (``VaultID``,
  ``FilePath``, ``Content``, ``Changes``, ``Command``, ``Status``, ``Message``; the UI commands
  ``goal``, ``vaultId``, ``force``, ``toolName``, ``arguments``); camelCase and PascalCase
  spellings of the same name are both accepted. Unknown arguments are refused.
* One result model per command; ``VaultContext`` is ``IAgentVaultContext`` exactly.

``UpdateNote``'s ``Changes`` takes two forms:

* a string: the note's whole new content (if it has no frontmatter, the note keeps its own);
* an object naming what changes: ``content`` (the whole new body, as above), ``append`` (text
  added at the end), ``frontmatter`` (properties to set; null removes one), and optionally
  ``expectedVersion`` (refuse the change if the note changed since that version was read).
  ``content`` and ``append`` exclude each other; ``frontmatter`` goes with either or alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from vaultpilot.index.background import EmbedState
from vaultpilot.tools import TOOLS
from vaultpilot.tools.session import IndexState

__all__ = [
    "ACS_TOOLS",
    "AGENT_TOOLS",
    "ARGUMENT_MODELS",
    "JOURNAL_COMMANDS",
    "UI_COMMANDS",
    "WS_ONLY",
    "ApproveToolCallArgs",
    "ApproveToolCallResult",
    "AuthenticateArgs",
    "ChangeFile",
    "ChangeHistoryArgs",
    "ChangeHistoryResult",
    "ChangeSetInfo",
    "CommandName",
    "ConversationInfo",
    "ConversationTranscript",
    "CreateNoteArgs",
    "CreateNoteResult",
    "EmbeddingInfo",
    "ExecuteShellArgs",
    "GetVaultContextArgs",
    "InterruptAgentArgs",
    "InterruptAgentResult",
    "LoginLink",
    "ModelSetup",
    "NoteChanges",
    "ReportStatusArgs",
    "ResumeAgentArgs",
    "ResumeAgentResult",
    "ShellResult",
    "ShowChangeSetArgs",
    "ShowChangeSetResult",
    "StartAgentArgs",
    "StartAgentResult",
    "SubscribeArgs",
    "SuccessResult",
    "ToolCommand",
    "ToolOverrideArgs",
    "ToolOverrideResult",
    "UndoChangeSetArgs",
    "UndoChangeSetResult",
    "UndoRunArgs",
    "UpdateNoteArgs",
    "UpdateNoteResult",
    "VaultContext",
    "VaultInfo",
]

ACS_TOOLS = ("GetVaultContext", "ExecuteShell", "CreateNote", "UpdateNote", "ReportStatus")
AGENT_TOOLS = tuple(tool.name for tool in TOOLS)
UI_COMMANDS = ("StartAgent", "InterruptAgent", "ResumeAgent", "ToolOverride", "ApproveToolCall")
JOURNAL_COMMANDS = ("ChangeHistory", "ShowChangeSet", "UndoChangeSet", "UndoRun")
WS_ONLY = ("Authenticate", "Subscribe")

# The wire's list of command names (a Literal, for the OpenAPI schema); tests/server checks that
# it names every vault tool of ``TOOLS``.
CommandName = Literal[
    "GetVaultContext",
    "ExecuteShell",
    "CreateNote",
    "UpdateNote",
    "ReportStatus",
    "obsidian_query_vault",
    "obsidian_get_context",
    "obsidian_vault_manager",
    "StartAgent",
    "InterruptAgent",
    "ResumeAgent",
    "ToolOverride",
    "ApproveToolCall",
    "ChangeHistory",
    "ShowChangeSet",
    "UndoChangeSet",
    "UndoRun",
    "Authenticate",
    "Subscribe",
]


def _names(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=False)


VaultIdArg = Annotated[
    str | None,
    Field(
        validation_alias=_names("VaultID", "vaultId"),
        max_length=64,
        description="A configured vault's ID; may be left out when the server has one vault.",
    ),
]
FilePathArg = Annotated[
    str,
    Field(
        validation_alias=_names("FilePath", "filePath"),
        min_length=1,
        max_length=1024,
        description="The note's path in the vault, e.g. 'Projects/Plan.md'.",
    ),
]


class ToolCommand(BaseModel):
    """``IToolCommand``: one request, answered by one envelope with the same ``id``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200, description="Echoed in the reply.")
    commandName: CommandName = Field(description="The command or tool to run.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The command's arguments (see its schema)."
    )
    timestamp: float = Field(
        allow_inf_nan=False,  # NaN, Infinity and 1e999 (read as infinity) are no JSON numbers
        description="When the command was sent: a number, milliseconds since the Unix epoch "
        "(e.g. 1764115200000), not a date string.",
    )


class GetVaultContextArgs(_Args):
    vault_id: VaultIdArg = None


class ExecuteShellArgs(_Args):
    command: str | list[str] = Field(
        validation_alias=_names("Command", "command"),
        description="The command line, split like a POSIX shell into an argument list (no "
        "shell runs unless the server allows it), or the argument list itself.",
    )
    vault_id: VaultIdArg = None


class CreateNoteArgs(_Args):
    file_path: FilePathArg
    content: str = Field("", validation_alias=_names("Content", "content"))
    vault_id: VaultIdArg = None


class NoteChanges(_Args):
    """The object form of ``Changes`` (see the module docstring)."""

    content: str | None = Field(None, description="The whole new content of the note.")
    append: str | None = Field(None, description="Text added at the end of the note.")
    frontmatter: dict[str, Any] | None = Field(
        None, description="Properties to set; a null value removes the property."
    )
    expected_version: str | None = Field(
        None,
        validation_alias=_names("expectedVersion", "expected_version"),
        max_length=64,
        description="Refuse the change if the note is no longer at this version.",
    )

    @model_validator(mode="after")
    def _one_change(self) -> NoteChanges:
        if self.content is not None and self.append is not None:
            raise ValueError("give 'content' (replace) or 'append', not both")
        if self.content is None and self.append is None and not self.frontmatter:
            raise ValueError("name a change: 'content', 'append' or 'frontmatter'")
        return self


class UpdateNoteArgs(_Args):
    file_path: FilePathArg
    changes: str | NoteChanges = Field(
        validation_alias=_names("Changes", "changes"),
        description="The whole new content (a string), or an object with 'content', 'append', "
        "'frontmatter' and optionally 'expectedVersion'.",
    )
    vault_id: VaultIdArg = None


class ReportStatusArgs(_Args):
    status: str = Field(
        validation_alias=_names("Status", "status"),
        min_length=1,
        max_length=100,
        description="The agent's state, e.g. 'planning', 'executing', 'waiting', 'done'.",
    )
    message: str = Field("", validation_alias=_names("Message", "message"), max_length=10_000)
    vault_id: VaultIdArg = None


class StartAgentArgs(_Args):
    goal: str = Field(validation_alias=_names("goal", "Goal"), min_length=1, max_length=50_000)
    vault_id: str | None = Field(None, validation_alias=_names("vaultId", "VaultID"), max_length=64)
    conversation_id: str | None = Field(
        None,
        validation_alias=_names("conversationId", "ConversationID"),
        min_length=1,
        max_length=64,
        description="Continue this stored conversation of the vault (GET /conversations lists "
        "them); default: start a new one.",
    )


class InterruptAgentArgs(_Args):
    """Stop a run now (``force: true``), or pause it at its next step boundary (``force:
    false``, the default: ResumeAgent continues it). An external agent receives the command
    and decides itself."""

    force: bool = Field(False, validation_alias=_names("force", "Force"))
    run_id: str | None = Field(None, validation_alias=_names("runId", "RunID"), max_length=64)
    vault_id: str | None = Field(None, validation_alias=_names("vaultId", "VaultID"), max_length=64)


class ResumeAgentArgs(_Args):
    """Continue a run paused by ``InterruptAgent {force: false}``."""

    run_id: str | None = Field(None, validation_alias=_names("runId", "RunID"), max_length=64)
    vault_id: str | None = Field(None, validation_alias=_names("vaultId", "VaultID"), max_length=64)


class ToolOverrideArgs(_Args):
    tool_name: str = Field(
        validation_alias=_names("toolName", "ToolName"), min_length=1, max_length=100
    )
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        validation_alias=_names("arguments", "Arguments"),
        description="The arguments to run the tool with instead of the agent's.",
    )
    result: dict[str, Any] | None = Field(
        None, description="A result to hand the agent as is, instead of running the tool."
    )
    call_id: str | None = Field(
        None,
        validation_alias=_names("callId", "CallID"),
        max_length=200,
        description="Which pending call (default: the one pending call of toolName).",
    )


class ApproveToolCallArgs(_Args):
    call_id: str = Field(validation_alias=_names("callId", "CallID"), min_length=1, max_length=200)
    approved: bool
    reason: str | None = Field(None, max_length=2000)
    files: list[Annotated[str, Field(min_length=1, max_length=1024)]] | None = Field(
        None,
        max_length=1000,
        description="Approve only these files of a multi-file change (the 'path' of its "
        "diffs): a bulk operation changes only these notes, a move rewrites links only in "
        "these notes (the moved notes themselves must be listed). An empty list refuses the "
        "call; a file outside the change, or part of a change applied whole (a single-note "
        "write, a delete), is refused with the list of its files.",
    )


class ChangeHistoryArgs(_Args):
    """A vault's change sets (every change made through vaultpilot), the latest first."""

    vault_id: VaultIdArg = None
    limit: int = Field(20, ge=1, le=200, description="How many change sets (1-200).")


class ShowChangeSetArgs(_Args):
    """One change set with the unified diff of each of its file changes."""

    vault_id: VaultIdArg = None
    id: str = Field(
        validation_alias=_names("id", "changeSetId"),
        min_length=1,
        max_length=64,
        description="The change set's id (a unique prefix works); an agent run's is its runId.",
    )


class UndoChangeSetArgs(_Args):
    """Restore every file of a change set to its state before it, as a new change set (which
    can be undone too). Files changed since make it refuse and write nothing, unless
    ``skipChanged``."""

    vault_id: VaultIdArg = None
    id: str | None = Field(
        None,
        validation_alias=_names("id", "changeSetId"),
        min_length=1,
        max_length=64,
        description="The change set to undo (an agent run's is its runId); or give last=true.",
    )
    last: bool = Field(False, description="Undo the vault's latest change set.")
    skip_changed: bool = Field(
        False,
        validation_alias=_names("skipChanged", "skip_changed"),
        description="Leave files changed since the set as they are and undo the rest.",
    )


class UndoRunArgs(_Args):
    """Undo everything an agent run changed: its change set (named by the run id), as
    ``UndoChangeSet``. The vault is the run's own when the server still knows the run."""

    run_id: str = Field(validation_alias=_names("runId", "RunID"), min_length=1, max_length=64)
    vault_id: VaultIdArg = None
    skip_changed: bool = Field(
        False,
        validation_alias=_names("skipChanged", "skip_changed"),
        description="Leave files changed since the run as they are and undo the rest.",
    )


class SubscribeArgs(_Args):
    role: Literal["ui", "agent"] = Field(
        "ui",
        description="'agent': also receive StartAgent, InterruptAgent, ResumeAgent and "
        "ToolOverride.",
    )
    format: Literal["frames", "spec"] = Field(
        "frames",
        description="'spec': agent events as the specification's {type, data} frames (see "
        "the server's documentation); 'frames' (default): {type: 'event', event: {kind}}.",
    )
    since: int | None = Field(
        None,
        ge=0,
        description="Send again the stored frames of the active runs after this seq.",
    )


class AuthenticateArgs(_Args):
    key: str = Field(min_length=1, max_length=512)


ARGUMENT_MODELS: dict[str, type[BaseModel]] = {
    "GetVaultContext": GetVaultContextArgs,
    "ExecuteShell": ExecuteShellArgs,
    "CreateNote": CreateNoteArgs,
    "UpdateNote": UpdateNoteArgs,
    "ReportStatus": ReportStatusArgs,
    "StartAgent": StartAgentArgs,
    "InterruptAgent": InterruptAgentArgs,
    "ResumeAgent": ResumeAgentArgs,
    "ToolOverride": ToolOverrideArgs,
    "ApproveToolCall": ApproveToolCallArgs,
    "ChangeHistory": ChangeHistoryArgs,
    "ShowChangeSet": ShowChangeSetArgs,
    "UndoChangeSet": UndoChangeSetArgs,
    "UndoRun": UndoRunArgs,
    "Subscribe": SubscribeArgs,
    "Authenticate": AuthenticateArgs,
}


class VaultContext(BaseModel):
    """``IAgentVaultContext``, field for field."""

    model_config = ConfigDict(extra="forbid")

    vaultId: str
    currentGoal: str
    systemPrompt: str
    stateSummary: str
    activeFiles: list[str]
    availableTools: list[str]


class ShellResult(BaseModel):
    Stdout: str
    Stderr: str
    ExitCode: int = Field(description="The exit status; 124 when stopped by the timeout.")
    TimedOut: bool
    Truncated: bool = Field(description="Output beyond the server's cap was dropped.")


class SuccessResult(BaseModel):
    Success: bool


class CreateNoteResult(BaseModel):
    Success: bool
    NoteURI: str = Field(description="obsidian://open?vault=...&file=... for the new note.")
    Version: str = Field(description="The note's version, for a later expectedVersion.")


class UpdateNoteResult(BaseModel):
    Success: bool
    Version: str


class StartAgentResult(BaseModel):
    runId: str
    vaultId: str
    goal: str
    agent: Literal["builtin", "external"]
    conversationId: str | None = Field(
        None, description="The stored conversation the run belongs to (built-in agent)."
    )


class InterruptAgentResult(BaseModel):
    interrupted: list[str] = Field(
        description="The runs told to stop (force) or to pause at their next step."
    )
    force: bool


class ResumeAgentResult(BaseModel):
    resumed: list[str] = Field(description="The runs told to continue.")


class ConversationInfo(BaseModel):
    """A stored conversation of a vault, for the agent view's list."""

    id: str
    title: str
    updated: float = Field(description="Last change, in ms since the epoch.")
    running: bool = Field(description="A run of this conversation is going now.")


class ToolOverrideResult(BaseModel):
    runId: str
    callId: str
    toolName: str
    result: dict[str, Any] = Field(description="The result the agent receives.")


class ApproveToolCallResult(BaseModel):
    callId: str
    approved: bool


class EmbeddingInfo(BaseModel):
    """How far semantic search covers a vault, and what the background embedder is doing."""

    state: Literal["off", EmbedState] = Field(
        description="'off' when background embedding is disabled in the settings."
    )
    chunksEmbedded: int = Field(description="Chunks of the index that have a vector.")
    chunks: int = Field(description="Chunks in the index.")
    notesPending: int = Field(description="Notes not chunked yet, or changed since.")
    model: str | None = Field(description="The model the stored vectors belong to.")
    rate: float = Field(description="Chunks per second of the current or last pass.")
    problem: str | None = Field(
        description="Why the state is unavailable, failed or busy, and what to do."
    )


class IndexInfo(BaseModel):
    """How the vault's index is kept fresh: the file watcher's state."""

    state: IndexState = Field(
        description="live: a file watcher keeps the index fresh (tool calls do not scan the "
        "vault); off: every read call syncs first; rescanning/failed: see reason."
    )
    reason: str | None = Field(None, description="Why it is rescanning or failed.")
    lastSync: float | None = Field(None, description="When the index last took in a change.")
    lastFullSync: float | None = Field(None, description="When the vault was last fully scanned.")


class VaultInfo(BaseModel):
    vaultId: str
    name: str
    embedding: EmbeddingInfo
    index: IndexInfo


class LoginLink(BaseModel):
    """A one-time login link for the agent view."""

    url: str = Field(description="The link to open in a browser (works once).")
    path: str = Field(description="The same link without the scheme and host.")
    expiresIn: float = Field(description="Seconds the link stays valid.")


# The journal commands' results (server.history builds them as plain JSON; these describe them).


class ChangeFile(BaseModel):
    kind: Literal["create", "update", "delete", "move", "mkdir"]
    operation: str
    from_: str | None = Field(alias="from")
    to: str | None = Field(description="A delete's place in the trash.")


class ChangeSetInfo(BaseModel):
    id: str
    when: str = Field(description="ISO 8601, the server's local time.")
    source: str = Field(description="cli, server, mcp or agent.")
    runId: str | None
    summary: str
    undoOf: str | None
    files: list[ChangeFile]
    undoneBy: str | None = Field(
        default=None,
        description="The undo that undid every change of this set and still stands; null: not "
        "undone, or only partly (a run that went on writing after its undo: undoing it again "
        "undoes the later changes).",
    )


class ChangeHistoryResult(BaseModel):
    changeSets: list[ChangeSetInfo]


class FileDiffInfo(BaseModel):
    path: str
    from_: str | None = Field(alias="from")
    to: str | None
    diff: str


class ShowChangeSetResult(ChangeSetInfo):
    diffs: list[FileDiffInfo]


class UndoChangeSetResult(BaseModel):
    undone: str
    changeSetId: str | None = Field(description="The undo's own change set; null: none restored.")
    restored: list[str]
    skipped: list[str] = Field(description="Files changed since, left as they are.")


# The agent view's reads (server.history and server.routes build them).


class TranscriptFile(ChangeFile):
    exists: bool = Field(description="The file is in the vault now (its 'to', a delete's 'from').")


class TranscriptChangeSet(BaseModel):
    id: str = Field(description="The run's change set (its id is the runId).")
    summary: str
    files: list[TranscriptFile]
    undoneBy: str | None = Field(description="The change set that undid it; null: not undone.")


class TranscriptEvent(BaseModel):
    event: dict[str, Any] = Field(description="The agent event, as the event frames carry it.")
    time: float = Field(description="When it was recorded, in seconds since the epoch.")


class TranscriptRun(BaseModel):
    runId: str
    goal: str = Field(description="The person's message that started the run.")
    events: list[TranscriptEvent] = Field(description="Streamed text merged into one per step.")
    changeSet: TranscriptChangeSet | None = Field(description="null: the run changed nothing.")


class ConversationTranscript(BaseModel):
    """A stored conversation, run by run, for the agent view to show again."""

    id: str
    title: str
    updated: float = Field(description="Last change, in ms since the epoch.")
    runs: list[TranscriptRun]


class ModelSetup(BaseModel):
    model: str | None = Field(description="The built-in agent's model; null: none configured.")
    configPath: str = Field(description="The config file the server reads (it may not exist).")
