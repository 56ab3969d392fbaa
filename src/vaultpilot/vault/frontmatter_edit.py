"""Edit a note's frontmatter and nothing else (pure: text in, text out).

``edit_frontmatter(text, set_values=..., remove_keys=..., add_tags=..., remove_tags=...)``
returns the new text of a note (``\\n`` line endings, as ``files.read_note`` gives it). Its
contract:

* The body (everything after the closing ``---`` line) is returned byte for byte.
* Only the lines of the keys that change are rewritten. Every other line of the YAML block (other
  keys, comments, blank lines, key order, quoting, spacing) stays as it was.
* A changed key is written with ruamel.yaml: a string keeps the quote style it had, a one-line
  value keeps its end-of-line comment, ISO dates and times are written plain (as Obsidian does),
  and lists use the indentation the block already uses (Obsidian's ``  - item`` by default).
* Tags are added and removed keeping the list's style: a block list gains or loses item lines
  (in the existing indentation and quoting), a flow list ``[a, b]`` stays a flow list. A single
  string (``tags: recipe``) becomes a list when a tag is added; a comma- or space-separated
  string (no tags to Obsidian 1.9.3+) is refused rather than split. Removing the last tag
  removes the key. Tags compare case-insensitively and without ``#``; only ``tags`` is used
  (Obsidian 1.9.2+ ignores the legacy ``tag``). A comment on the ``tags`` line is kept. Property
  names match case-insensitively, like Obsidian's.
* JSON or one-line flow frontmatter (``{"title": "x"}``) is rewritten one key per line, as
  Obsidian saves it, so that editing one key keeps the others.
* A note without frontmatter gets a new block at the top.
* Invalid YAML is never guessed at: the edit is refused with ``InvalidArgumentError``. Every
  result is checked before it is returned (the YAML parses, the body is unchanged, the values
  are the ones asked for, every other property reads back as before); a result that fails the
  check is refused the same way.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.vault.frontmatter import (
    Frontmatter,
    frontmatter_tags,
    invalid_list_string,
    split_frontmatter,
)
from vaultpilot.vault.parse import is_valid_tag

__all__ = ["FrontmatterEdit", "edit_frontmatter", "normalize_tag"]

_ISO_DATE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
)
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
_ITEM_PREFIX = re.compile(r"^([ ]*-[ ]+)")
_SEQ_INDENT = re.compile(r"^([ ]*)-[ ]", re.MULTILINE)
_ODD_BREAKS = ("\r", "\x85", "\u2028", "\u2029")
_TAG_KEYS = ("tags",)


@dataclass(frozen=True, slots=True)
class FrontmatterEdit:
    """The new text and the property names that changed (empty: the text is the same)."""

    text: str
    changed: tuple[str, ...]


def normalize_tag(tag: str) -> str:
    """A tag as frontmatter stores it: no ``#``, no surrounding spaces or trailing ``/``."""
    return tag.strip().lstrip("#").strip().rstrip("/")


_MADE = threading.local()  # YAML instances are reusable but not shared between threads


def _yaml(seq_offset: int) -> YAML:
    """A round-trip YAML for this list indentation, made once per thread (making one searches
    ruamel's install folder for plug-ins: too slow to do per note in a bulk edit)."""
    made: dict[int, YAML] = _MADE.__dict__.setdefault("by_offset", {})
    y = made.get(seq_offset)
    if y is None:
        y = YAML(typ="rt")
        y.preserve_quotes = True
        y.width = 4096  # never fold a long value onto a second line
        y.indent(mapping=2, sequence=seq_offset + 2, offset=seq_offset)
        made[seq_offset] = y
    return y


def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


def _is_trailing(line: str, indent: int) -> bool:
    """A blank or comment line at the key's indentation: it stays where it is."""
    stripped = line.strip()
    if not stripped:
        return True
    return stripped.startswith("#") and len(line) - len(line.lstrip(" ")) <= indent


def _plain(value: Any) -> Any:
    """A value as JSON sees it: what decides whether a key really changed."""
    return json.loads(json.dumps(value, default=str))


def _to_yaml(value: Any, loader: YAML) -> Any:
    """Plain Python values to what ruamel writes as Obsidian would (ISO dates stay plain)."""
    if isinstance(value, str) and _ISO_DATE.match(value):
        return loader.load(f"v: {value}\n")["v"]
    if isinstance(value, list | tuple):
        return [_to_yaml(v, loader) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_yaml(v, loader) for k, v in value.items()}
    return value


def _dump(key: str, value: Any, y: YAML) -> list[str]:
    single = CommentedMap()
    single[key] = value
    out = io.StringIO()
    y.dump(single, out)
    return _lines(out.getvalue())


def _find_key(data: CommentedMap, name: str) -> str | None:
    if name in data:
        return name
    low = name.lower()
    return next((k for k in data if isinstance(k, str) and k.lower() == low), None)


class _Block:
    """The YAML block as lines, with each top-level key's line range, and queued edits."""

    def __init__(self, yaml_text: str) -> None:
        if any(ch in yaml_text for ch in _ODD_BREAKS):
            raise InvalidArgumentError(
                "The frontmatter contains unusual line-break characters, so it cannot be edited "
                "safely. Rewrite the note with operation='update_note' instead."
            )
        match = _SEQ_INDENT.search(yaml_text)
        self.y = _yaml(len(match.group(1)) if match else 2)
        loaded = self._load(yaml_text)
        keys = list(loaded.keys())
        if loaded.fa.flow_style() or len({loaded.lc.key(k)[0] for k in keys}) < len(keys):
            # JSON (or a one-line flow map): every key shares a line, so a line-based edit of
            # one key would drop the others. Obsidian saves such a block back as YAML; do the
            # same, one key per line (values keep their own flow style and quotes).
            loaded.fa.set_block_style()
            out = io.StringIO()
            self.y.dump(loaded, out)
            yaml_text = out.getvalue()
            loaded = self._load(yaml_text)
            keys = list(loaded.keys())
        self.lines = _lines(yaml_text)
        self.data: CommentedMap = loaded
        starts = [loaded.lc.key(k)[0] for k in keys]
        self.ranges: dict[Any, tuple[int, int]] = {}
        for i, key in enumerate(keys):
            start = starts[i]
            end = starts[i + 1] if i + 1 < len(keys) else len(self.lines)
            indent = loaded.lc.key(key)[1]
            while end > start + 1 and _is_trailing(self.lines[end - 1], indent):
                end -= 1
            self.ranges[key] = (start, end)
        self.edits: list[tuple[int, int, list[str]]] = []  # (start, end, replacement lines)
        self.appended: list[str] = []

    def _load(self, yaml_text: str) -> CommentedMap:
        try:
            loaded = self.y.load(yaml_text) if yaml_text.strip() else None
        except YAMLError as exc:
            raise InvalidArgumentError(
                f"The frontmatter is not valid YAML ({str(exc).splitlines()[0]}); fix it with "
                "operation='update_note' before changing properties."
            ) from None
        if loaded is None:
            loaded = CommentedMap()
        if not isinstance(loaded, CommentedMap):
            raise InvalidArgumentError(
                "The frontmatter is not a set of properties; fix it with operation='update_note' "
                "before changing properties."
            )
        return loaded

    def replace_key(self, key: str, value: Any) -> None:
        old = self.data[key]
        if isinstance(value, str) and not _ISO_DATE.match(value):
            if isinstance(old, DoubleQuotedScalarString):
                value = DoubleQuotedScalarString(value)
            elif isinstance(old, SingleQuotedScalarString):
                value = SingleQuotedScalarString(value)
        new = _dump(key, value, self.y)
        start, end = self.ranges[key]
        token = self.data.ca.items.get(key, [None, None, None, None])[2]
        carried = getattr(getattr(old, "ca", None), "comment", None)
        if token is None and carried:  # a flow list or map carries its own end-of-line comment
            token = carried[0]
        column = getattr(token, "column", None)
        if end - start == 1 and isinstance(column, int):
            line = self.lines[start].rstrip("\n")
            before = line[:column]
            comment = line[column:]
            first = new[0].rstrip("\n")
            # A one-line value keeps its comment on its line; a value that becomes a block list
            # keeps it after the key (``tags: # note`` then the items): YAML allows both.
            fits = len(new) == 1 or first.endswith(":")
            if fits and comment.startswith("#") and before.strip() and comment not in first:
                gap = before[len(before.rstrip()) :] or " "
                new = [first + gap + comment + "\n", *new[1:]]
        self.edits.append((start, end, new))

    def delete_key(self, key: str) -> None:
        start, end = self.ranges[key]
        self.edits.append((start, end, []))

    def add_key(self, key: str, value: Any) -> None:
        self.appended.extend(_dump(key, value, self.y))

    def render(self) -> str:
        lines = list(self.lines)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        for start, end, new in sorted(self.edits, key=lambda e: e[0], reverse=True):
            lines[start:end] = new
        return "".join(lines) + "".join(self.appended)


def _item_text(tag: str, items: CommentedSeq, y: YAML) -> str:
    quoted = [type(i) for i in items]
    value: Any = tag
    if quoted and all(t is DoubleQuotedScalarString for t in quoted):
        value = DoubleQuotedScalarString(tag)
    elif quoted and all(t is SingleQuotedScalarString for t in quoted):
        value = SingleQuotedScalarString(tag)
    out = io.StringIO()
    y.dump(CommentedSeq([value]), out)
    text = out.getvalue().strip()
    return text[1:].lstrip() if text.startswith("-") else text


def _current_tags(key: str | None, node: Any) -> list[str]:
    """The tags the note lists now; refuses a comma- or space-separated string (no tags to
    Obsidian), saying how to make it a list."""
    if isinstance(node, str) and (invalid_list_string(node) or len(node.split()) > 1):
        parts = [p for p in re.split(r"[,\s]+", node) if p]
        raise InvalidArgumentError(
            f"The note's '{key}' property is the single string {str(node)!r}, which Obsidian "
            "reads as no tags (a comma- or space-separated string is invalid since Obsidian "
            "1.9.3). Make it a list first (operation='bulk_update_metadata' with "
            f"metadataChanges={{'{key}': {parts!r}}}); nothing was changed."
        )
    if isinstance(node, str):
        return [node] if node.strip() else []
    if isinstance(node, list):
        return [str(i) for i in node if i is not None]
    return []


def _new_tags(current: list[str], add: list[str]) -> list[str]:
    """The tags of ``add`` the note does not have yet (case-insensitive), each once."""
    have = {normalize_tag(t).lower() for t in current}
    to_add = []
    for tag in add:
        if tag.lower() not in have:
            have.add(tag.lower())
            to_add.append(tag)
    return to_add


def _edit_block_list(
    block: _Block, key: str, node: CommentedSeq, to_remove: list[str], to_add: list[str]
) -> None:
    """Drop and append the lines of a block list's items; every other line stays as written."""
    end = block.ranges[key][1]
    item_lines = [node.lc.item(i)[0] for i in range(len(node))]
    for i, item in enumerate(node):
        if item in to_remove:
            stop = item_lines[i + 1] if i + 1 < len(node) else end
            block.edits.append((item_lines[i], stop, []))
    if to_add:
        match = _ITEM_PREFIX.match(block.lines[item_lines[0]])
        prefix = match.group(1) if match else "  - "
        new = [f"{prefix}{_item_text(t, node, block.y)}\n" for t in to_add]
        block.edits.append((end, end, new))


def _edit_tags(block: _Block, add: list[str], remove: list[str], changed: list[str]) -> None:
    data = block.data
    key = _find_key(data, "tags")
    node = data[key] if key is not None else None
    current = _current_tags(key, node)
    to_add = _new_tags(current, add)
    drop = {t.lower() for t in remove}
    to_remove = [t for t in current if normalize_tag(t).lower() in drop]
    if not to_add and not to_remove:
        return
    kept = [t for t in current if t not in to_remove]
    if key is None:
        block.add_key("tags", to_add)
        changed.append("tags")
        return
    changed.append(key)
    if not kept and not to_add:
        block.delete_key(key)
        return
    if isinstance(node, CommentedSeq) and not node.fa.flow_style() and len(node) > 0:
        _edit_block_list(block, key, node, to_remove, to_add)
        return
    if isinstance(node, CommentedSeq):  # a flow list stays a flow list (items keep quotes)
        flow = CommentedSeq([item for item in node if item not in to_remove] + to_add)
        flow.fa.set_flow_style()
        block.replace_key(key, flow)
        return
    block.replace_key(key, kept + to_add)


def _check(
    new_text: str,
    body: str,
    expected: Mapping[str, Any],
    tags: tuple[list[str], ...],
    before: Mapping[str, Any],
) -> None:
    fm = split_frontmatter(new_text)
    problem = None
    if fm.error:
        problem = fm.error
    elif new_text[fm.end :] != body:
        problem = "the body would change"
    else:
        lowered = {k.lower(): v for k, v in fm.properties.items()}
        touched = {k.lower() for k in expected} | set(_TAG_KEYS)
        for key, value in before.items():
            if key.lower() not in touched and _plain(lowered.get(key.lower())) != _plain(value):
                problem = f"property '{key}' would be lost or changed"
        for key, value in expected.items():
            got = lowered.get(key.lower(), _MISSING) if value is not _MISSING else None
            if value is _MISSING:
                if key.lower() in lowered:
                    problem = f"property '{key}' would remain"
            elif _plain(got) != _plain(value):
                problem = f"property '{key}' would read back as {got!r}"
        now = {t.lower() for t in frontmatter_tags(fm.properties)}
        added = [t for t in tags[0] if is_valid_tag(t)]  # Obsidian ignores e.g. '2025'
        if any(t.lower() not in now for t in added) or any(t.lower() in now for t in tags[1]):
            problem = "the tags would not read back as asked"
    if problem:
        raise InvalidArgumentError(
            f"The frontmatter could not be edited safely ({problem}); nothing was changed. "
            "Read the note and rewrite it with operation='update_note' instead."
        )


_MISSING: Any = object()


def _with_yaml(text: str, fm: Frontmatter, new_yaml: str) -> str:
    """``text`` with its frontmatter's YAML replaced by ``new_yaml``: a new block when it had
    none, and no block at all when the last property went (no empty ``---`` pair is left)."""
    if fm.end == 0:
        return "---\n" + new_yaml + "---\n" + text
    if not new_yaml.strip():
        return text[fm.end :]
    return text[: fm.start] + new_yaml + text[fm.start + len(fm.yaml_text) :]


def edit_frontmatter(
    text: str,
    *,
    set_values: Mapping[str, Any] | None = None,
    remove_keys: Iterable[str] = (),
    add_tags: Iterable[str] = (),
    remove_tags: Iterable[str] = (),
) -> FrontmatterEdit:
    """Apply property and tag changes to the frontmatter of ``text`` (see the module contract)."""
    set_values = dict(set_values or {})
    remove = [k for k in remove_keys]
    lowered = [k.lower() for k in set_values]
    twins = sorted({k for k in set_values if lowered.count(k.lower()) > 1})
    if twins:
        raise InvalidArgumentError(
            f"Properties {', '.join(map(repr, twins))} differ only in case, and Obsidian reads "
            "them as one property; give it once."
        )
    both = {k.lower() for k in set_values} & {k.lower() for k in remove}
    if both:
        raise InvalidArgumentError(
            f"Property {sorted(both)[0]!r} is both set and removed; choose one."
        )
    adds = [t for t in (normalize_tag(t) for t in add_tags) if t]
    drops = [t for t in (normalize_tag(t) for t in remove_tags) if t]
    if (adds or drops) and any(k.lower() in _TAG_KEYS for k in [*set_values, *remove]):
        raise InvalidArgumentError(
            "Tags are both replaced (as a property) and added or removed; do one or the other."
        )
    fm = split_frontmatter(text)
    if fm.error:
        raise InvalidArgumentError(
            f"The note's frontmatter is invalid ({fm.error}); fix it with "
            "operation='update_note' before changing properties."
        )
    present = fm.end > 0
    yaml_text = fm.yaml_text if present else ""
    body = text[fm.end :] if present else text
    block = _Block(yaml_text)
    changed: list[str] = []
    expected: dict[str, Any] = {}
    for name in remove:
        key = _find_key(block.data, name)
        if key is not None:
            block.delete_key(key)
            changed.append(key)
            expected[key] = _MISSING
    for name, value in set_values.items():
        key = _find_key(block.data, name)
        converted = _to_yaml(value, block.y)
        if key is None:
            block.add_key(name, converted)
            changed.append(name)
        elif _plain(block.data[key]) != _plain(value):
            block.replace_key(key, converted)
            changed.append(key)
        expected[key or name] = value
    _edit_tags(block, adds, drops, changed)
    if not changed:
        return FrontmatterEdit(text, ())
    new_text = _with_yaml(text, fm, block.render())
    _check(new_text, body, expected, (adds, drops), fm.properties)
    return FrontmatterEdit(new_text, tuple(dict.fromkeys(changed)))
