"""Prompts for the specification's canonical workflows (spec 003, "Real-World Usage Patterns").

* ``find_and_summarise`` (topic): "Find my notes about <topic> and summarize them".
* ``create_in_folder`` (title, folder, about): "Create a new project note in the <folder>
  folder".
* ``tag_last_week_meetings`` (folder, tag): "Tag all my meeting notes from last week as
  'reviewed'".

Each expands to one user message that names the tool calls the workflow takes, with the exact
arguments, so any client's model follows the same steps the specification shows. Arguments are
plain strings (MCP's prompt arguments); a missing required one is ``INVALID_PARAMS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["PROMPTS", "get_prompt", "list_prompts"]


@dataclass(frozen=True, slots=True)
class _Arg:
    name: str
    description: str
    required: bool = True
    default: str = ""


@dataclass(frozen=True, slots=True)
class _Prompt:
    name: str
    title: str
    description: str
    args: tuple[_Arg, ...]
    render: Callable[[Mapping[str, str]], str]


def _js(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _summarise(a: Mapping[str, str]) -> str:
    return (
        f"Find my notes about {a['topic']} and summarise them.\n\n"
        "1. Find the notes: call obsidian_query_vault with "
        f"{_js({'queryType': 'semantic_search', 'query': a['topic']})}.\n"
        "2. Read the most relevant ones (up to 3 first): call obsidian_get_context with "
        '{"contextType": "read_multiple", "targets": [<the paths found>]}.\n'
        "3. Write the summary from what you read, naming each note's path for every point. "
        "Say so if nothing relevant was found; do not invent content."
    )


def _create(a: Mapping[str, str]) -> str:
    folder = a["folder"].strip("/")
    target = f"{folder}/{a['title']}.md" if folder else f"{a['title']}.md"
    about = a.get("about") or "its purpose and first steps"
    call = {
        "operation": "create_note",
        "target": target,
        "content": f"# {a['title']}\n\n<the note's text>",
        "createFolders": True,
    }
    return (
        f"Create a new note '{a['title']}' in the {folder or 'root'} folder about {about}.\n\n"
        f"Call obsidian_vault_manager with {_js(call)}, writing the content yourself (add "
        '"metadata", e.g. {"tags": [...]}, when the folder\'s other notes use properties). '
        "If a note with that name exists, tell me instead of overwriting it."
    )


def _tag_meetings(a: Mapping[str, str]) -> str:
    folder, tag = a.get("folder") or "Meetings", a.get("tag") or "reviewed"
    filters = {"folder": folder, "dateRange": {"days": 7}}
    find = {"queryType": "search_by_metadata", "filters": filters}
    change = {"operation": "bulk_tag", "targets": ["<the paths>"], "metadata": {"tags": [tag]}}
    return (
        f"Tag all my meeting notes from last week as '{tag}'.\n\n"
        f"1. Find them: call obsidian_query_vault with {_js(find)}.\n"
        f"2. Tag them all in one call: obsidian_vault_manager with {_js(change)}.\n"
        "3. Tell me which notes were tagged and any that failed, with the reason."
    )


PROMPTS: tuple[_Prompt, ...] = (
    _Prompt(
        "find_and_summarise",
        "Find and summarise notes",
        "Find the notes about a topic and summarise them, citing each note.",
        (_Arg("topic", "What the notes are about, e.g. 'Python programming'."),),
        _summarise,
    ),
    _Prompt(
        "create_in_folder",
        "Create a note in a folder",
        "Create a new note in a folder (made if missing), never overwriting one.",
        (
            _Arg("title", "The new note's title (its file name without .md)."),
            _Arg("folder", "The folder, e.g. 'Projects/2025'."),
            _Arg("about", "What the note should contain.", required=False),
        ),
        _create,
    ),
    _Prompt(
        "tag_last_week_meetings",
        "Tag last week's meetings",
        "Tag every meeting note changed in the last 7 days (e.g. as 'reviewed').",
        (
            _Arg("folder", "The meetings folder (default 'Meetings').", required=False),
            _Arg("tag", "The tag to add (default 'reviewed').", required=False),
        ),
        _tag_meetings,
    ),
)
_BY_NAME = {p.name: p for p in PROMPTS}


def list_prompts() -> list[types.Prompt]:
    return [
        types.Prompt(
            name=p.name,
            title=p.title,
            description=p.description,
            arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in p.args
            ],
        )
        for p in PROMPTS
    ]


def get_prompt(name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    prompt = _BY_NAME.get(name)
    if prompt is None:
        raise MCPError(
            types.INVALID_PARAMS, f"Unknown prompt '{name}'. Prompts: {', '.join(_BY_NAME)}."
        )
    given = dict(arguments or {})
    known = {a.name for a in prompt.args}
    unknown = sorted(set(given) - known)
    missing = [a.name for a in prompt.args if a.required and not str(given.get(a.name, "")).strip()]
    if unknown or missing:
        problems = [f"unknown argument '{u}'" for u in unknown]
        problems += [f"'{m}' is required" for m in missing]
        raise MCPError(
            types.INVALID_PARAMS,
            f"Invalid arguments for prompt {name}: {'; '.join(problems)} "
            f"(arguments: {', '.join(sorted(known))}).",
        )
    text = prompt.render(given)
    return types.GetPromptResult(
        description=prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )
