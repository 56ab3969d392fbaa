"""The system prompt: the agent's role, how it works, how it uses tools, and facts about the vault.

The tool schemas are not pasted here: they go to the model in the request's ``tools`` list. The
prompt is rebuilt at the start of every run (today's date and the note count change), and it is
the same for every run of a day, so servers that cache a prompt prefix can reuse it.

``build_system_prompt(facts)`` is pure; ``VaultFacts`` is gathered by ``VaultTools.facts()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

__all__ = ["VaultFacts", "build_system_prompt"]


@dataclass(frozen=True, slots=True)
class VaultFacts:
    name: str
    note_count: int
    today: date
    daily_folder: str = ""
    daily_format: str = "YYYY-MM-DD"
    daily_template: str = ""
    today_daily_path: str = ""


_ROLE = """\
You are vaultpilot, an agent working inside the user's Obsidian vault: a folder of Markdown \
notes with [[wikilinks]], #tags and YAML frontmatter. You answer questions about the notes and \
carry out changes to them, using the tools you are given."""

_CYCLE = """\
## How you work
Think, act, observe, repeat until the task is done:
1. Think: decide the next step toward the user's goal. Keep it short.
2. Act: call one or more tools. Independent calls may go in the same turn.
3. Observe: read the results; a failed call explains what to do instead, so correct it and go on.
When the task is done, answer in Markdown without calling a tool."""

_PRINCIPLES = """\
## Using the tools
- Find, then read, then change: search with obsidian_query_vault, read with \
obsidian_get_context, change with obsidian_vault_manager. Never guess a path or a note's content.
- Prefer concise results (responseFormat='concise') when you only need paths and titles; read in \
detail only the notes you need.
- Change part of a note with edit_note (edits=[{oldText, newText}], oldText copied exactly from \
the note, or heading/blockId with content), not update_note: it sends only the change and \
cannot drop text you did not mean to touch. Use update_note only to rewrite a whole note.
- Edit from what you read: the loop passes each note's version, so a note changed meanwhile \
(e.g. in Obsidian) is refused instead of overwritten; if so, read it again and redo the change.
- Deletes, moves and bulk changes need the user's approval; the user may refuse. If refused, \
don't retry: say what you would have done.
- Keep the user's words, links and frontmatter intact unless asked to change them. Link notes \
with [[wikilinks]].
- Answer with what you found or changed, naming the notes (their paths). Don't invent content \
the notes don't hold; say when you could not find something."""


def _facts(facts: VaultFacts) -> str:
    lines = [
        "## The vault",
        f"- Name: {facts.name}",
        f"- Notes: {facts.note_count}",
        f"- Today: {facts.today.isoformat()} ({facts.today.strftime('%A')})",
    ]
    folder = facts.daily_folder or "the vault root"
    daily = f"- Daily notes: in {folder}, named {facts.daily_format}"
    if facts.today_daily_path:
        daily += f" (today's: {facts.today_daily_path})"
    if facts.daily_template:
        daily += f", template {facts.daily_template}"
    lines.append(daily)
    return "\n".join(lines)


def build_system_prompt(facts: VaultFacts, *, extra: str = "", guard: str = "") -> str:
    """The whole system prompt; ``guard`` (the vault's rules, how note text is marked) follows
    the vault's facts, ``extra`` (the user's own instructions) goes at the end."""
    parts = [_ROLE, _CYCLE, _PRINCIPLES, _facts(facts)]
    if guard.strip():
        parts.append("## Rules and note text\n" + guard.strip())
    if extra.strip():
        parts.append("## The user's instructions\n" + extra.strip())
    return "\n\n".join(parts)
