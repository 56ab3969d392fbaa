"""How one tool call reads in the terminal: ``Read(Meetings/Retro.md)``, ``Search("q") 7 found``.

Pure functions of a call's name, arguments and result, so the terminal view, the transcript
replay of ``chat --continue`` and the tests all say a step the same way:

* ``label(name, arguments)``: the verb and its object, e.g. ``Edit(Inbox.md)``,
  ``Move(A.md → Archive/A.md)``, ``Search("weekly review")``; an unknown tool shows its name and
  its first arguments.
* ``outcome(result)``: what came back, in a few words (``7 found``, ``312 words``, the message of
  a failure).
* ``line_counts(before, after)``: lines added and removed between two texts (``+3 −1``).
* ``diff_counts(diff)``: the same, read from a unified diff.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["diff_counts", "label", "line_counts", "outcome", "plural"]

_CUT = 60

_VERBS: dict[str, str] = {
    # obsidian_get_context
    "read_note": "Read",
    "read_multiple": "Read",
    "gather_related": "Gather",
    "daily_note": "Daily",
    "note_with_backlinks": "Read",
    # obsidian_query_vault
    "semantic_search": "Search",
    "list_structure": "List",
    "find_related": "Related",
    "search_by_metadata": "Filter",
    "recent_changes": "Recent",
    # obsidian_vault_manager
    "create_note": "Create",
    "update_note": "Write",
    "edit_note": "Edit",
    "append_note": "Append",
    "delete_note": "Delete",
    "move_note": "Move",
    "create_folder": "Mkdir",
    "delete_folder": "DeleteFolder",
    "move_folder": "MoveFolder",
    "bulk_tag": "Tag",
    "bulk_move": "Move",
    "bulk_update_metadata": "Properties",
}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cut(text: str, limit: int = _CUT) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _targets(arguments: Mapping[str, Any]) -> str:
    many = arguments.get("targets")
    if isinstance(many, list) and many:
        shown = ", ".join(_cut(str(t), 40) for t in many[:2])
        return shown + (f", +{len(many) - 2}" if len(many) > 2 else "")
    target = arguments.get("target")
    return _cut(str(target)) if target else ""


def _object(operation: str, arguments: Mapping[str, Any]) -> str:
    target = _targets(arguments)
    match operation:
        case "semantic_search":
            return json.dumps(_cut(str(arguments.get("query", ""))), ensure_ascii=False)
        case "list_structure":
            return _cut(str(arguments.get("path") or "/"))
        case "find_related":
            return _cut(str(arguments.get("referenceNote") or target))
        case "search_by_metadata":
            filters = arguments.get("filters")
            return _cut(json.dumps(filters, ensure_ascii=False)) if filters else ""
        case "recent_changes":
            return ""
        case "daily_note":
            return _cut(str(arguments.get("date") or "today"))
        case "move_note" | "move_folder" | "bulk_move":
            return f"{target} → {_cut(str(arguments.get('destination', '?')))}"
    return target


def label(name: str, arguments: Mapping[str, Any] | None) -> str:
    """``Verb(object)`` for a vault tool's operation; ``name(args)`` for anything else."""
    args = arguments or {}
    operation = next(
        (
            args[k]
            for k in ("operation", "contextType", "queryType")
            if isinstance(args.get(k), str)
        ),
        None,
    )
    if operation in _VERBS:
        return f"{_VERBS[operation]}({_object(operation, args)})"
    if name == "git_agent":
        action = args.get("type") or args.get("action") or "?"
        return f"Git({action})"
    shown = ", ".join(f"{k}={_cut(json.dumps(v, ensure_ascii=False), 30)}" for k, v in args.items())
    return f"{name}({_cut(shown)})"


def outcome(result: Mapping[str, Any]) -> str:
    """A few words on what a tool returned."""
    if result.get("success") is False or (isinstance(result.get("error"), str) and result["error"]):
        return _cut(str(result.get("error") or result.get("message") or "failed"), 160)
    if isinstance(result.get("results"), list):
        return f"{result.get('totalFound', len(result['results']))} found"
    primary = result.get("primaryNote")
    if isinstance(primary, Mapping):
        words = primary.get("wordCount")
        related = result.get("relatedNotes") or []
        text = plural(int(words), "word") if isinstance(words, int) else "read"
        return text + (f", +{plural(len(related), 'note')}" if related else "")
    notes = result.get("notes")
    if isinstance(notes, list):
        return plural(len(notes), "note")
    if isinstance(result.get("message"), str):
        return _cut(result["message"], 100)
    return ""


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
