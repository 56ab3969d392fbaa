"""What a tool call says to a person, described once: its kind, its label and its outcome.

The terminal (``cli.steps`` renders ``Edit(Inbox.md) +1 −1``) and the agent view (from the
``label``, ``outcome`` and ``files`` the events carry) show a step from these, so the two cannot
word it differently:

* ``describe(name, arguments)`` → ``StepLabel``: the ``kind`` (read, search, edit, create, move,
  delete, other), the ``verb`` and its ``object`` (``Read`` ``Inbox.md``, ``Search``
  ``"weekly review"``, ``Move`` ``A.md → Archive``) and whether the object names notes or
  folders. An unknown tool reads as its name and its first arguments.
* ``kind_of(operation)``: the kind, the operation's own ``kind`` fact (``tools.operations``).
* ``outcome(result, files)``: a few words on what came back (``7 found``, ``312 words``, the
  message of a failure). A write's line counts are not words: they travel beside them in
  ``files`` and each view shows them its own way.
* ``JournalCounts``: the files each write of a run changed, ``{path, added, removed}`` (and
  ``from`` for a move), read from the change journal where the write recorded its bytes.
* ``approval_mode(policy, rules)``: when a run asks (``events.ApprovalMode``).
* ``line_counts(before, after)`` and ``diff_counts(diff)``: lines added and removed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vaultpilot.agent.approvals import ApprovalPolicy, operation_of
from vaultpilot.agent.events import ApprovalMode, FileCount, StepKind, StepLabel
from vaultpilot.contract.catalog import GIT_ACTIONS
from vaultpilot.errors import NotFoundError, VaultpilotError
from vaultpilot.memory.journal import Journal, StoredChange, without_parent_folders
from vaultpilot.tools.operations import Operation
from vaultpilot.tools.registry import call_operation
from vaultpilot.tools.rules import VaultRules
from vaultpilot.wording import plural

__all__ = [
    "JournalCounts",
    "approval_mode",
    "describe",
    "diff_counts",
    "file_counts",
    "kind_of",
    "line_counts",
    "outcome",
    "plural",
]

_CUT = 60


def _cut(text: str, limit: int = _CUT) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def kind_of(op: Operation | None) -> StepKind:
    """The kind of a vault-tool operation (its ``kind`` fact); another tool's is ``other``."""
    return "other" if op is None else op.kind


def _targets(arguments: Mapping[str, Any]) -> str:
    many = arguments.get("targets")
    if isinstance(many, list) and many:
        shown = ", ".join(_cut(str(t), 40) for t in many[:2])
        return shown + (f", +{len(many) - 2}" if len(many) > 2 else "")
    target = arguments.get("target")
    return _cut(str(target)) if target else ""


def _object(op: Operation, arguments: Mapping[str, Any]) -> tuple[str, bool]:
    """What the call acts on, and whether that names notes or folders (the op's ``files``)."""
    target = _targets(arguments)
    match op.name:
        case "semantic_search":
            return json.dumps(_cut(str(arguments.get("query", ""))), ensure_ascii=False), False
        case "list_structure":
            return _cut(str(arguments.get("path") or "/")), True
        case "find_related":
            return _cut(str(arguments.get("referenceNote") or target)), True
        case "search_by_metadata":
            filters = arguments.get("filters")
            return (_cut(json.dumps(filters, ensure_ascii=False)) if filters else ""), False
        case "recent_changes":
            return "", False
        case "daily_note":
            return _cut(str(arguments.get("date") or "today")), False
    if "destination" in op.files:
        return f"{target} → {_cut(str(arguments.get('destination', '?')))}", True
    return target, bool(op.files)


def describe(name: str, arguments: Mapping[str, Any] | None) -> StepLabel:
    """How a call reads: ``Edit`` ``Inbox.md`` for a vault tool's operation, ``Stage``
    ``a.md, b.md`` or ``Commit`` and the message's first line for git_agent, the tool's name
    and its first arguments for anything else."""
    args = arguments or {}
    op = call_operation(name, args)
    if op is not None:
        text, is_path = _object(op, args)
        return StepLabel(kind=kind_of(op), verb=op.verb, object=text, object_is_path=is_path)
    if name == "git_agent":
        action = operation_of(args) or "?"
        known = GIT_ACTIONS.get(action)
        verb, what = (known.verb, known.what) if known else ("Git", action.removeprefix("git_"))
        files = args.get("files")
        if action in ("git_add", "git_diff") and isinstance(files, list) and files:
            named = _cut(", ".join(str(f) for f in files))
            what = named if action == "git_add" else f"diff {named}"
        elif action == "git_commit" and isinstance(args.get("message"), str):
            what = _cut(args["message"].splitlines()[0] if args["message"] else "") or what
        return StepLabel(kind="other", verb=verb, object=what, object_is_path=False)
    shown = ", ".join(f"{k}={_cut(json.dumps(v, ensure_ascii=False), 30)}" for k, v in args.items())
    return StepLabel(kind="other", verb=name, object=_cut(shown), object_is_path=False)


def _failed(result: Mapping[str, Any]) -> bool:
    return result.get("success") is False or bool(
        isinstance(result.get("error"), str) and result["error"]
    )


# Sentences of an error that speak to the model, not to the person watching the step.
_TO_THE_MODEL = re.compile(
    r"(?:^|(?<=[.;:!?])\s+)(?:Don't retry|Do not retry|Don't redo|Do not redo"
    r"|[Tt]ell the (?:user|person)|Ask the user|Say what you)[^.!?]*[.!?]?",
)


# A sentence ends at . ! or ? followed by a space and a capital, a quote or a digit ("e.g. x"
# and "(line 3). then" do not end one).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z'\"0-9])")
# A sentence that tells the caller what to do next (written for the model: "Call X again …",
# "Find the right path with …"), not what happened.
_NEXT_STEP = re.compile(
    r"(?:Call|Find|Give|Use|Read|Try|Set|Search|Check|Choose|Work|Pass|Send|Retry|Run|Fix|"
    r"Copy|Look|Create|Add|Remove|Move|List|Ask|Tell|Say|Don't|Do not|Undo|Approve|Split|"
    r"Restore)\b"
)


def for_person(message: str) -> str:
    """An error as the person reads it: what went wrong, without the sentences addressed to the
    model ("Don't retry it; tell the user …", "Find the right path with …"), which stay in the
    result the model gets. The first sentence always stays; the ones after it only while they
    still say what happened."""
    shown = _TO_THE_MODEL.sub("", message).strip() or message
    sentences = _SENTENCE_END.split(shown)
    kept = sentences[:1]
    for sentence in sentences[1:]:
        if _NEXT_STEP.match(sentence):
            break
        kept.append(sentence)
    return " ".join(kept)


def _read_outcome(result: Mapping[str, Any]) -> str:
    if _failed(result):
        return _cut(for_person(str(result.get("error") or result.get("message") or "failed")), 160)
    if isinstance(result.get("results"), list):
        return f"{result.get('totalFound', len(result['results']))} found"
    primary = result.get("primaryNote")
    if isinstance(primary, Mapping):
        words = primary.get("wordCount")
        related = result.get("relatedNotes") or []
        if primary.get("exists") is False:
            text = "no such note"
        else:
            text = plural(int(words), "word") if isinstance(words, int) else "read"
        return text + (f", +{plural(len(related), 'note')}" if related else "")
    notes = result.get("notes")
    if isinstance(notes, list):
        return plural(len(notes), "note")
    if isinstance(result.get("message"), str):
        return _cut(for_person(result["message"]), 100)
    return ""


def outcome(result: Mapping[str, Any], files: Sequence[FileCount] | None = None) -> str:
    """A few words on what a call returned; for a write that changed ``files``, what their line
    counts do not say: the notes whose links a move rewrote, how many notes, and, when some
    were left out or failed, the tool's own summary of it."""
    if _failed(result) or not files:
        return _read_outcome(result)
    warnings = result.get("warnings")
    warning = warnings[0] if isinstance(warnings, list) and warnings else None
    moved = sum(1 for f in files if "from" in f)
    if moved:
        others = len(files) - moved
        words = [f"{plural(moved, 'note')} moved"] if moved > 1 else []
        words += [f"links updated in {plural(others, 'note')}"] if others else []
        words += [_cut(str(warning), 100)] if warning is not None else []
        return "; ".join(words)
    message = result.get("message")
    if (warning is not None or result.get("failures")) and isinstance(message, str):
        return _cut(message, 100)  # e.g. "1 of 2 notes updated; 1 left as it was"
    return plural(len(files), "note") if len(files) > 1 else ""


def line_counts(before: str, after: str) -> tuple[int, int]:
    """(lines added, lines removed) from ``before`` to ``after``."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
    return diff_counts("\n".join(diff))


def diff_counts(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) in a unified diff."""
    added = removed = 0
    in_hunk = False  # the '---'/'+++' file headers come before the first '@@'
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed


def file_counts(
    changes: Sequence[StoredChange], text: Callable[[str, str], str]
) -> list[FileCount]:
    """The files ``changes`` (one call's, in order) left changed, each once under its last path
    with its summed counts; ``text(hash, path)`` reads stored content. A deleted note counts
    its lines as removed; folders are left out."""
    out: dict[str, FileCount] = {}
    for c in changes:
        if c.kind == "mkdir":
            continue
        before = c.path_before
        path = (before if c.kind == "delete" else c.path_after) or before or ""
        gone = c.kind == "delete"  # its "after" is the same bytes in the trash
        if c.hash_before == c.hash_after and not gone:
            added = removed = 0
        else:
            old = text(c.hash_before, path) if c.hash_before else ""
            new = text(c.hash_after, path) if c.hash_after and not gone else ""
            added, removed = line_counts(old, new)
        earlier = out.pop(before, None) if c.kind == "move" and before else out.get(path)
        entry = FileCount(
            path=path,
            added=added + (earlier["added"] if earlier else 0),
            removed=removed + (earlier["removed"] if earlier else 0),
        )
        origin = earlier.get("from") if earlier else None
        if origin or (c.kind == "move" and before and before != path):
            entry["from"] = origin or before or ""
        out.pop(path, None)
        out[path] = entry
    return list(out.values())


class JournalCounts:
    """The files each write of one run changed, read from the run's change set (``set_id``, the
    run id) in the change journal: each ``take()`` gives the changes made since the last.
    A journal that cannot be read gives None (the counts are unknown), never an error."""

    def __init__(self, journal: Journal, vault: str, set_id: str) -> None:
        self.journal = journal
        self.vault = vault
        self.set_id = set_id
        self._seen = 0

    def _text(self, digest: str, path: str) -> str:
        return self.journal.blob(digest, path).decode("utf-8", "replace")

    def take(self) -> list[FileCount] | None:
        try:
            changes = self.journal.get(self.vault, self.set_id).changes
        except NotFoundError:
            return []  # no change set yet: the run has written nothing
        except VaultpilotError:
            return None
        seen, self._seen = self._seen, max((c.seq for c in changes), default=self._seen)
        # A folder made only to hold a note (a move into a new folder) is not a change of its own.
        fresh = [c for c in without_parent_folders(changes) if c.seq > seen]
        try:
            return file_counts(fresh, self._text)
        except VaultpilotError:
            return None


def approval_mode(policy: ApprovalPolicy, rules: VaultRules) -> ApprovalMode:
    """When a run asks: never when the rules make the vault read-only (nothing may change) or
    the policy approves everything (``ask --yes``), every change when the rules' mode is
    "ask", else where the approval rules say (destructive steps, by default)."""
    if rules.mode == "read-only":
        return "read-only"
    if policy.auto_approve:
        return "auto-approve"
    return "ask" if rules.mode == "ask" else "auto"
