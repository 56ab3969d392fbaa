"""What each operation of the three vault tools does: the facts every layer reads, written once.

An ``Operation`` is one value of a tool's selector argument (``queryType``, ``contextType``,
``operation``). Its facts:

* ``writes``: it changes the vault (else it only reads).
* ``destructive``: it removes or relocates notes, or changes many at once; the default approval
  policy asks before it runs, and MCP marks the tool ``destructiveHint``.
* ``idempotent``: calling it twice with the same arguments has no further effect.
* ``guarded``: it takes ``expectedVersion``; the agent passes the version of the note it read, so
  a note changed meanwhile is refused, not overwritten.
* ``forgets``: afterwards the target's old version means nothing (it moved or is gone).
* ``files``: the arguments that name notes or folders it reads or changes (``target``,
  ``targets``, ``destination``, ``referenceNote``, ``path``), in that order.
* ``dry_run``: ``dryRun: true`` previews it as per-file diffs without writing.
* ``per_file``: a person may approve only some of the files it changes (``approvedFiles``): the
  notes of a bulk operation, the notes whose links a move rewrites. Other writes are approved
  whole.
* ``drops_text``: it can remove text from a note (replace the note's text, or part of it); the
  default approval policy asks before a call that would remove many words (``agent.approvals``).
* ``effect``: a short phrase for a person deciding whether to approve it.
* ``kind`` and ``verb``: what a person sees it as: the kind (``read``, ``search``, ``edit``,
  ``create``, ``move``, ``delete``) gives its step line's icon, the verb (``Read``, ``Move``)
  starts the line, in the terminal and the agent view alike (``agent.steps``).

Approvals (``agent.approvals``), version tracking (``agent.versions``), run records and RPC
handlers (``server``), MCP annotations (``mcp.tools``) and the schema derive from these facts;
none keeps a list of operation names of its own. ``is_dry_run(arguments)`` is the one reading of
whether a call only previews, for every check made before the tool validates the call. To add
an operation, add it here and to the tool's parameter model (``tools.models``) and implement it
in the tool's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "CONTEXT_OPERATIONS",
    "MANAGER_OPERATIONS",
    "QUERY_OPERATIONS",
    "Kind",
    "Operation",
    "is_dry_run",
]


Kind = Literal["read", "search", "edit", "create", "move", "delete"]


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    effect: str
    kind: Kind
    verb: str
    writes: bool = False
    destructive: bool = False
    idempotent: bool = True
    guarded: bool = False
    forgets: bool = False
    files: tuple[str, ...] = ()
    dry_run: bool = False
    per_file: bool = False
    drops_text: bool = False


def _table(*ops: Operation) -> Mapping[str, Operation]:
    return MappingProxyType({op.name: op for op in ops})


def _search(name: str, effect: str, verb: str, *files: str) -> Operation:
    return Operation(name, effect, "search", verb, files=files)


def _read(name: str, effect: str, verb: str, *files: str) -> Operation:
    return Operation(name, effect, "read", verb, files=files)


QUERY_OPERATIONS = _table(
    _search("semantic_search", "searches the vault", "Search"),
    _search("list_structure", "lists folders and notes", "List", "path"),
    _search("find_related", "finds notes related to a note", "Related", "referenceNote"),
    _search("search_by_metadata", "filters notes by their properties", "Filter"),
    _search("recent_changes", "lists recently changed notes", "Recent"),
)

CONTEXT_OPERATIONS = _table(
    _read("read_note", "reads a note", "Read", "target"),
    _read("read_multiple", "reads several notes", "Read", "targets"),
    _read("gather_related", "reads a note and its related notes", "Gather", "target"),
    _read("daily_note", "reads a daily note", "Daily"),
    _read("note_with_backlinks", "reads a note and the notes linking to it", "Read", "target"),
)

_ONE = ("target",)
_TWO = ("target", "destination")
MANAGER_OPERATIONS = _table(
    Operation("create_note", "creates a note", "create", "Create",
              writes=True, idempotent=False, files=_ONE, dry_run=True),
    Operation("update_note", "replaces a note's text", "edit", "Write",
              writes=True, guarded=True, files=_ONE, dry_run=True, drops_text=True),
    Operation("edit_note", "changes part of a note", "edit", "Edit",
              writes=True, idempotent=False, files=_ONE, dry_run=True, drops_text=True),
    Operation("append_note", "adds text to a note", "edit", "Append",
              writes=True, idempotent=False, guarded=True, files=_ONE, dry_run=True),
    Operation("delete_note", "deletes a note (to the trash)", "delete", "Delete",
              writes=True, destructive=True, idempotent=False, guarded=True, forgets=True,
              files=_ONE, dry_run=True),
    Operation("move_note", "moves or renames a note and updates the links to it", "move", "Move",
              writes=True, destructive=True, idempotent=False, guarded=True, forgets=True,
              files=_TWO, dry_run=True, per_file=True),
    Operation("create_folder", "creates a folder", "create", "New folder",
              writes=True, files=_ONE, dry_run=True),
    Operation("delete_folder", "deletes a folder (to the trash)", "delete", "Delete folder",
              writes=True, destructive=True, idempotent=False, files=_ONE, dry_run=True),
    Operation("move_folder", "moves a folder and updates the links into it", "move", "Move folder",
              writes=True, destructive=True, idempotent=False, files=_TWO, dry_run=True,
              per_file=True),
    Operation("bulk_tag", "changes the tags of several notes", "edit", "Tag",
              writes=True, destructive=True, files=("targets",), dry_run=True, per_file=True),
    Operation("bulk_move", "moves several notes and updates the links to them", "move", "Move",
              writes=True, destructive=True, idempotent=False, files=("targets", "destination"),
              dry_run=True, per_file=True),
    Operation("bulk_update_metadata", "changes the properties of several notes", "edit",
              "Properties", writes=True, destructive=True, files=("targets",), dry_run=True,
              per_file=True),
)  # fmt: skip


def is_dry_run(arguments: Mapping[str, Any] | None) -> bool:
    """Whether a call only previews (``dryRun`` is JSON true). The parameter is a strict
    boolean, so any other value ("false", 1) is refused when the call is validated: no check
    before validation can read it one way and the tool the other."""
    return (arguments or {}).get("dryRun") is True
