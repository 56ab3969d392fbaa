"""Notes as MCP resources: ``vault://NAME/path.md``, listed from the index and read from disk.

* ``list_resources(vaults, cursor)``: every indexed note of every vault, in vault then path
  order, ``PAGE`` at a time (``nextCursor`` is the offset of the next page). A vault whose first
  sync has not finished lists what its index holds so far. Notes the vault's rules keep from the
  agent (``deny``) are left out, as the tools leave them out.
* ``templates(names)``: one template per vault, ``vault://NAME/{path}``.
* ``read_resource(vaults, uri)``: the note's text (markdown) as it is on disk, read through the
  vault engine, so the vault's confinement rules hold (``..``, symlinks out, ``.obsidian/`` are
  refused), and so do the vault's rules, as for the tools: a ``deny`` note is refused with the
  tools' message, a ``private`` note's text is withheld (the resource says so instead), and a
  note from an ``untrusted`` folder (web clippings) comes between the server's boundary markers,
  flagged when it holds text Obsidian does not show, as the tools give it. A bad
  URI or a missing note is a protocol error (``INVALID_PARAMS`` / ``RESOURCE_NOT_FOUND``) whose
  message says what to do instead.

Paths are percent-encoded in URIs (``/`` kept), so spaces and accents survive any client.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from vaultpilot.errors import NotFoundError, VaultpilotError
from vaultpilot.index.lookup import all_paths
from vaultpilot.mcp.vaults import VaultSession
from vaultpilot.tools.context import ToolContext
from vaultpilot.tools.rules import PRIVATE_TEXT
from vaultpilot.tools.untrusted import hidden_text, mark
from vaultpilot.vault.files import normalize_rel_path, read_note

__all__ = ["PAGE", "RESOURCE_NOT_FOUND", "list_resources", "note_uri", "read_resource", "templates"]

PAGE = 1000
RESOURCE_NOT_FOUND = -32002  # the code MCP gives a resource that does not exist
_SCHEME = "vault://"
_MARKDOWN = "text/markdown"


def note_uri(vault: str, path: str) -> str:
    return f"{_SCHEME}{quote(vault, safe='')}/{quote(path, safe='/')}"


def templates(names: list[str]) -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            name=f"{name} note",
            title=f"A note of the vault '{name}'",
            uri_template=f"{_SCHEME}{quote(name, safe='')}/{{path}}",
            description=f"A note of the vault '{name}' by its path in the vault, e.g. "
            f"{_SCHEME}{quote(name, safe='')}/Projects/Plan.md",
            mime_type=_MARKDOWN,
        )
        for name in names
    ]


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(
            types.INVALID_PARAMS,
            f"Unknown cursor {cursor!r}: pass the nextCursor of the previous resources/list.",
        )
    return int(cursor)


async def list_resources(
    vaults: Mapping[str, VaultSession], cursor: str | None
) -> types.ListResourcesResult:
    start = _offset(cursor)
    notes: list[tuple[str, str]] = []
    for name, vault in vaults.items():
        paths = await vault.run(lambda c: [p for p in all_paths(c.conn) if not c.rules.hidden(p)])
        notes.extend((name, p) for p in paths if p.lower().endswith(".md"))
    page = notes[start : start + PAGE]
    resources = [
        types.Resource(
            uri=note_uri(name, path),
            name=path if len(vaults) == 1 else f"{name}/{path}",
            title=path.rsplit("/", 1)[-1].removesuffix(".md"),
            mime_type=_MARKDOWN,
        )
        for name, path in page
    ]
    more = start + PAGE < len(notes)
    return types.ListResourcesResult(
        resources=resources, next_cursor=str(start + PAGE) if more else None
    )


def _parse(vaults: Mapping[str, VaultSession], uri: str) -> tuple[VaultSession, str]:
    example = note_uri(next(iter(vaults)), "Folder/Note.md")
    if not uri.startswith(_SCHEME):
        raise MCPError(types.INVALID_PARAMS, f"Unknown resource {uri!r}: use {example}.")
    name, _, path = uri[len(_SCHEME) :].partition("/")
    name, path = unquote(name), unquote(path)
    if name not in vaults:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Unknown vault {name!r} in {uri!r}. Vaults: {', '.join(vaults)}.",
        )
    if not path:
        raise MCPError(types.INVALID_PARAMS, f"{uri!r} names no note: use {example}.")
    return vaults[name], path


async def read_resource(
    vaults: Mapping[str, VaultSession], uri: str, *, token: str | None = None
) -> types.ReadResourceResult:
    vault, path = _parse(vaults, uri)
    try:
        text = await vault.run(lambda c: _note_text(c, path, token))
    except NotFoundError as err:
        raise MCPError(RESOURCE_NOT_FOUND, err.message, {"uri": uri}) from None
    except VaultpilotError as err:
        raise MCPError(types.INVALID_PARAMS, err.message, {"uri": uri}) from None
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=_MARKDOWN, text=text)]
    )


def _note_text(ctx: ToolContext, path: str, token: str | None = None) -> str:
    """The note's text as a resource gives it: refused or withheld as the vault's rules say,
    marked when it comes from an untrusted folder (see the module)."""
    rel = normalize_rel_path(path)
    ctx.rules.check_read([path, rel], named=path)
    note = read_note(ctx.root, rel)
    if ctx.rules.private_note(rel):
        return PRIVATE_TEXT
    if token and ctx.rules.untrusted_source(rel):
        return str(mark({"content": note.text}, token)["content"]) + "".join(
            f"\n(hiddenText: {kind})" for kind in hidden_text(note.text)
        )
    return note.text
