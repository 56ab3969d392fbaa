"""``@`` mentions in the user's message: which notes they name, and the context section they make.

Forms (a mention starts at the beginning of the message or after a space or an opening bracket,
so ``me@example.com`` is not one):

* ``@"Folder/Note with spaces.md"`` (or single quotes, or ``@[[Note]]``): exactly that name;
* ``@Note name``: the longest run of up to six words after ``@`` that names a note, so
  ``@Weekly Review tomorrow`` finds "Weekly Review" when that note exists; trailing punctuation
  is ignored.

A name matches a note's path (with or without ``.md``, any case) or its file name; when several
notes share a file name the shortest path wins, as in Obsidian. ``find_mentions`` and
``resolve_mentions`` are pure; ``attach`` reads the notes through a callable and builds the
"Context from attached files" section within a token budget (about four characters a token).
Each note's text is between boundary markers (``tools.untrusted.wrap_attached``: sealed with the
run's token when sent) and flagged when it holds text Obsidian does not show, as tool results
are. Mentions that name no note, or a note the read refused (the vault's rules), are listed in
the section with the reason and returned, never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vaultpilot.errors import PathRefusedError, VaultpilotError
from vaultpilot.tools.untrusted import hidden_text, wrap_attached

__all__ = [
    "AttachedNote",
    "Attachments",
    "Mention",
    "attach",
    "find_mentions",
    "resolve_mentions",
]

_QUOTED = re.compile(r"""(?:(?<=^)|(?<=[\s(\[{]))@(?:"([^"\n]+)"|'([^'\n]+)'|\[\[([^\]\n]+)\]\])""")
_BARE = re.compile(r"(?:(?<=^)|(?<=[\s(\[{]))@(?![\s\"'@]|\[\[)")
_TRAIL = ".,;:!?)]}»\"'"
MAX_WORDS = 6
HEADER = "### Context from attached files ###"


@dataclass(frozen=True, slots=True)
class Mention:
    written: str  # as the user wrote it, e.g. '@"Plan.md"' or '@Plan'
    candidates: tuple[str, ...]  # names to try, best first


@dataclass(frozen=True, slots=True)
class AttachedNote:
    mention: str
    path: str
    version: str
    tokens: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Attachments:
    section: str  # "" when the message mentions nothing
    notes: tuple[AttachedNote, ...]
    unknown: tuple[str, ...]
    omitted: tuple[str, ...]


def find_mentions(message: str) -> list[Mention]:
    found: list[tuple[int, Mention]] = []
    taken: list[tuple[int, int]] = []
    for m in _QUOTED.finditer(message):
        name = next(g for g in m.groups() if g is not None).strip()
        if m.group(3) is not None:  # [[Note#Heading]] or [[Note|shown]] names the note Note
            name = re.split(r"[#|^]", name, maxsplit=1)[0].strip() or name
        found.append((m.start(), Mention(m.group(0), (name,))))
        taken.append(m.span())
    for m in _BARE.finditer(message):
        if any(a <= m.start() < b for a, b in taken):
            continue
        words: list[str] = []
        for word in message[m.end() :].split("\n", 1)[0].split()[:MAX_WORDS]:
            if word.startswith("@"):  # the next mention
                break
            words.append(word)
        names = []
        for n in range(len(words), 0, -1):
            name = " ".join(words[:n]).rstrip(_TRAIL)
            if name and name not in names:
                names.append(name)
        if names:
            found.append((m.start(), Mention("@" + names[-1], tuple(names))))
    return [mention for _, mention in sorted(found, key=lambda item: item[0])]


def _keys(paths: Sequence[str]) -> dict[str, str]:
    index: dict[str, str] = {}
    for path in sorted(paths, key=lambda p: (p.count("/"), len(p), p)):
        low = path.lower()
        stem = low[:-3] if low.endswith(".md") else low
        for key in (low, stem, stem.rsplit("/", 1)[-1], low.rsplit("/", 1)[-1]):
            index.setdefault(key, path)
    return index


def resolve_mentions(
    mentions: Sequence[Mention], paths: Sequence[str]
) -> tuple[list[tuple[Mention, str, str]], list[str]]:
    """``([(mention, name that matched, path)], [unknown mentions as written])``."""
    index = _keys(paths)
    found: list[tuple[Mention, str, str]] = []
    unknown: list[str] = []
    for mention in mentions:
        for name in mention.candidates:
            path = index.get(name.strip().strip("/").lower())
            if path is not None:
                written = mention.written if len(mention.candidates) == 1 else "@" + name
                found.append((Mention(written, (name,)), name, path))
                break
        else:
            if mention.written not in unknown:
                unknown.append(mention.written)
    return found, unknown


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def attach(
    message: str,
    paths: Sequence[str],
    read: Callable[[str], tuple[str, str]],
    *,
    budget_tokens: int,
) -> Attachments:
    """Resolve the message's mentions and read the notes into one section, within the budget."""
    mentions = find_mentions(message)
    if not mentions:
        return Attachments("", (), (), ())
    found, unknown = resolve_mentions(mentions, paths)
    notes: list[AttachedNote] = []
    omitted: list[str] = []
    refused: list[str] = []
    blocks: list[str] = []
    left = budget_tokens
    for mention, _name, path in found:
        if any(n.path == path for n in notes) or path in omitted:
            continue
        try:
            text, version = read(path)
        except PathRefusedError:  # said without where the mention led
            refused.append(f"{mention.written} — kept from the agent by the vault's rules")
            continue
        except (VaultpilotError, OSError) as exc:  # unreadable: say why
            refused.append(f"{mention.written} — {exc}")
            continue
        cost = _tokens(text)
        truncated = cost > left
        if truncated and left < 200:
            omitted.append(path)
            continue
        if truncated:
            text = text[: left * 4].rstrip() + (
                "\n[… truncated to fit the context budget; read the whole note with "
                "obsidian_get_context before editing it]"
            )
        left -= _tokens(text)
        notes.append(AttachedNote(mention.written, path, version, _tokens(text), truncated))
        hidden = hidden_text(text)
        flag = f" (hiddenText: {', '.join(hidden)})" if hidden else ""
        blocks.append(f"--- {path} ---{flag}\n{wrap_attached(text.rstrip())}")
    lines = [HEADER, "The user attached these notes with @ mentions."]
    lines.extend(blocks)
    if omitted:
        lines.append(
            "Not included (over the context budget; read them with obsidian_get_context): "
            + ", ".join(omitted)
        )
    if unknown:
        lines.append(
            "These mentions match no note in the vault: "
            + ", ".join(unknown)
            + ". Search with obsidian_query_vault or ask the user which note they meant."
        )
    if refused:
        lines.append("These mentions were not attached: " + "; ".join(refused))
    return Attachments("\n\n".join(lines), tuple(notes), (*unknown, *refused), tuple(omitted))
