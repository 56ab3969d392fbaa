"""Small helpers for the vault-engine tests: parse inline text, write files into a tmp vault."""

from __future__ import annotations

from pathlib import Path

from vaultpilot.vault.parse import Link, ParsedNote, parse_note

LinkTuple = tuple[str, str, str | None, str, str]


def parse(text: str, path: str = "Note.md") -> ParsedNote:
    return parse_note(path, text)


def links(text: str, path: str = "Note.md") -> list[LinkTuple]:
    """(target, subpath, alias, kind, syntax) of every link, in order."""
    return [(lk.target, lk.subpath, lk.alias, lk.kind, lk.syntax) for lk in parse(text, path).links]


def targets(text: str, path: str = "Note.md") -> list[str]:
    return [lk.target for lk in parse(text, path).links]


def inline_tags(text: str) -> list[str]:
    return [t.name for t in parse(text).tags if t.source == "inline"]


def source_of(text: str, link: Link) -> str:
    """The exact characters a link occupies in the note."""
    return text[link.start : link.end]


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path
