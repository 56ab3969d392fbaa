"""Frontmatter: finding it, and reading its YAML the way Obsidian does.

Obsidian reads YAML between ``---`` lines at the very top of a note. Its parser follows YAML 1.2,
so ``no``, ``on`` and ``yes`` are strings (not booleans), dates and times such as ``12:30`` stay
text, and ``017`` is seventeen; we load with a libyaml-backed loader adjusted to match. A template
placeholder written as a value (``created: {{date}}``, a flow map whose key is a flow map) is read
as the text ``{{date}}``, as Obsidian shows it. Invalid YAML (including a repeated key), a bare
scalar or a top-level list give no properties at all, and the error is recorded rather than raised
(semantics rule 13). So does YAML whose aliases (``*name``) would expand it past ``MAX_NODES``
values or refer to themselves: eight lines of nested aliases can stand for hundreds of megabytes
("billion laughs"); the JavaScript parser Obsidian uses refuses them too ("Excessive alias
count").

``tags`` and ``aliases``/``alias`` are normalised here (``docs/obsidian-rules.md``): a list, or a
single string naming one tag or alias, without a leading ``#``. The legacy ``tag`` key is not read
(Obsidian 1.9.2 and later ignore it), and a comma-separated string is invalid: no tags or aliases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "Frontmatter",
    "frontmatter_aliases",
    "frontmatter_tags",
    "invalid_list_string",
    "load_yaml",
    "split_frontmatter",
]

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_PLACEHOLDER = re.compile(r"\{\{[^{}\n]*\}\}")


class _ObsidianLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 scalars, no timestamp conversion, and unique keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._text = stream

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        # '{{date}}' parses as a flow map whose only key is a flow map, which Python cannot hash.
        # The JavaScript parser Obsidian uses accepts it and Obsidian shows the raw text; read it
        # as that text (libyaml's marks count characters, so the slice is the source).
        if isinstance(node, yaml.MappingNode) and node.flow_style:
            raw = self._text[node.start_mark.index : node.end_mark.index]
            if _PLACEHOLDER.fullmatch(raw):
                return raw
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        # Obsidian's YAML parser rejects a repeated key (rule 12: each key appears once), so the
        # whole frontmatter is invalid (rule 13); PyYAML would silently keep the last value.
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: the base method reports it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def _construct_int(loader: _ObsidianLoader, node: Any) -> int:
    return _int_text(str(loader.construct_scalar(node)))


def _int_text(text: str) -> int:
    """YAML 1.2 core integers: decimal (leading zeros are decimal), ``0o`` octal, ``0x`` hex."""
    value = text.replace("_", "")
    sign = -1 if value.startswith("-") else 1
    digits = value.lstrip("+-")
    if digits[:2] in ("0o", "0O"):
        return sign * int(digits[2:], 8)
    if digits[:2] in ("0x", "0X"):
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)


# Rebuild the implicit resolvers: drop YAML 1.1 booleans (yes/no/on/off), timestamps, the '='
# value key, and the 1.1 number forms (sexagesimal '12:30' = 750, legacy octal '017' = 15), which
# YAML 1.2 reads as text or as decimal; then add the 1.2 core booleans and numbers.
_DROPPED = (
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:value",
)
_ObsidianLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_ObsidianLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
_ObsidianLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9][0-9_]*|0o[0-7][0-7_]*|0x[0-9a-fA-F][0-9a-fA-F_]*)$"),
    list("-+0123456789"),
)
_ObsidianLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)
_ObsidianLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """Where the frontmatter lies in the text, and what it says."""

    yaml_text: str  # the text between the fences ("" when there is no frontmatter)
    start: int  # offset of the first YAML character (0 when absent)
    end: int  # offset just past the closing fence line: where the body begins
    body_line: int  # 0-based line number where the body begins
    properties: dict[str, Any]
    error: str | None


def split_frontmatter(text: str) -> Frontmatter:
    """Find and parse the frontmatter block at the very top of ``text``."""
    m = _OPEN.match(text)
    if not m:
        return Frontmatter("", 0, 0, 0, {}, None)
    close = _CLOSE.search(text, m.end())  # a line of its own after the opening fence
    if close is None:
        return Frontmatter("", 0, 0, 0, {}, None)
    yaml_text = text[m.end() : close.start()]
    end = close.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    props, error = load_yaml(yaml_text)
    return Frontmatter(yaml_text, m.end(), end, text.count("\n", 0, end), props, error)


# The fast path: most frontmatter is ``key: plain value`` lines and ``key:`` followed by
# ``- item`` lines. Those are read here without building a YAML event stream (loading them is a
# fifth of what indexing a note costs); anything else, or anything unsure, returns None and the
# full loader decides. Scalars are typed by the loader's own resolvers, so results are equal.
_KEY_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(?: (.*))?")
_ITEM_LINE = re.compile(r"( *)- (.*)")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ ./+(),'-]*(?<! )")
_FLOW_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ ./+-]*(?<! )")  # no flow indicators
_QUOTED = re.compile(r"\"([^\"\\]*)\"|'([^']*)'")
_RESERVED_KEYS = frozenset(
    ["true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL"]
)  # keys the loader would turn into booleans or None
_NO = object()


def _scalar(text: str, plain: re.Pattern[str] = _PLAIN) -> Any:
    """A single-line value as the loader reads it, or ``_NO`` when unsure."""
    if not text:
        return None
    m = _QUOTED.fullmatch(text)
    if m:
        return m.group(1) if m.group(1) is not None else m.group(2)
    if text[0] == "[" and text[-1] == "]" and plain is _PLAIN:
        return _flow_list(text[1:-1])
    if not plain.fullmatch(text):
        return _NO
    for tag, rx in _ObsidianLoader.yaml_implicit_resolvers.get(text[0], ()):
        if rx.match(text):
            if tag == "tag:yaml.org,2002:int":
                return _int_text(text)
            if tag == "tag:yaml.org,2002:float":
                return float(text.replace("_", ""))
            if tag == "tag:yaml.org,2002:bool":
                return text.lower() == "true"
            if tag == "tag:yaml.org,2002:null":
                return None
            return _NO
    return text


def _flow_list(inner: str) -> Any:
    """``[a, b]`` with simple items, or ``_NO``."""
    if not inner.strip():
        return []
    items = []
    for part in inner.split(","):
        item = part.strip(" ")
        value = _scalar(item, _FLOW_PLAIN) if item and item[0] not in "\"'" else _NO
        if value is _NO or value is None:
            return _NO
        items.append(value)
    return items


def _simple_yaml(yaml_text: str) -> dict[str, Any] | None:
    """Frontmatter of the common shapes (see above) as the loader reads it, else None."""
    out: dict[str, Any] = {}
    key: str | None = None  # the key whose block list is open
    indent = -1
    for line in yaml_text.split("\n"):
        if not line:
            continue
        item = _ITEM_LINE.fullmatch(line)
        if item is not None:
            if key is None or (indent >= 0 and len(item.group(1)) != indent):
                return None
            indent = len(item.group(1))
            value = _scalar(item.group(2))
            if value is _NO or value is None:
                return None
            out[key].append(value)
            continue
        m = _KEY_LINE.fullmatch(line)
        if m is None or m.group(1) in out or m.group(1) in _RESERVED_KEYS:
            return None
        if key is not None and not out[key]:
            out[key] = None  # "key:" with no items is a null value
        name, rest = m.group(1), m.group(2)
        if rest is None or rest == "":
            if rest == "":
                return None  # "key: " with a trailing space: leave it to the loader
            out[name] = []
            key, indent = name, -1
            continue
        value = _scalar(rest)
        if value is _NO:
            return None
        out[name] = value
        key = None
    if key is not None and not out[key]:
        out[key] = None
    return out


# The most values a frontmatter may stand for once its aliases are expanded (a real one has a
# few dozen; the largest in the community vaults measured, a few hundred).
MAX_NODES = 10_000


class _Expansion(ValueError):
    """The aliases expand the YAML past ``MAX_NODES`` values, or a value contains itself."""


def _expanded_size(node: Any) -> int:
    """How many values ``node`` stands for with every alias written out (each shared node is
    counted once per use, computed once)."""
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(n: Any) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in busy:
            raise _Expansion("an alias refers to the value that contains it")
        busy.add(key)
        if isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in n.value)
        else:
            total = 1
        busy.discard(key)
        if total > MAX_NODES:
            raise _Expansion(
                f"its aliases (*name) expand it to more than {MAX_NODES:,} values; write the "
                "values out"
            )
        sizes[key] = total
        return total

    return size(node)


def _load(yaml_text: str) -> Any:
    loader = _ObsidianLoader(yaml_text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "*" in yaml_text:  # only aliases can make the values outgrow the text
            _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(yaml_text: str) -> tuple[dict[str, Any], str | None]:
    """Parse frontmatter YAML; returns (properties, error). Never raises."""
    if not yaml_text.strip():
        return {}, None
    simple = _simple_yaml(yaml_text)
    if simple is not None:
        return simple, None
    try:
        data = _load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, f"invalid YAML frontmatter{where}: {problem}"
    except (ValueError, TypeError, RecursionError) as exc:
        return {}, f"invalid YAML frontmatter: {exc}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        return {}, f"frontmatter is {kind}, not a set of properties"
    return {str(k): v for k, v in data.items()}, None


def _as_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            out.extend(_as_strings(item))
        return out
    if isinstance(value, dict):
        return []
    if isinstance(value, bool):
        return ["true" if value else "false"]
    return [str(value)]


def _prop(props: dict[str, Any], *names: str) -> list[Any]:
    lowered = {k.lower(): v for k, v in props.items()}
    return [lowered[n] for n in names if n in lowered]


def invalid_list_string(value: Any) -> bool:
    """A single string that lists several values (``a, b``): Obsidian 1.9.3+ reads none of them."""
    return isinstance(value, str) and "," in value


def frontmatter_tags(props: dict[str, Any]) -> list[str]:
    """Tags declared in ``tags``, without ``#``, in order, unique.

    Obsidian 1.9.2+ reads only ``tags`` (not the legacy ``tag``); since 1.9.3 a single string is
    one tag, and a comma-separated string is invalid and gives no tags at all.
    """
    out: list[str] = []
    for value in _prop(props, "tags"):
        if invalid_list_string(value):
            continue
        if isinstance(value, str):
            items = [value] if value.strip() and not any(c.isspace() for c in value.strip()) else []
        else:
            items = _as_strings(value)
        for item in items:
            tag = item.strip().lstrip("#").rstrip("/")
            if tag and not tag.isdigit() and tag not in out:
                out.append(tag)
    return out


def frontmatter_aliases(props: dict[str, Any]) -> list[str]:
    """Aliases from ``aliases`` (or the legacy ``alias``), in order, unique."""
    out: list[str] = []
    for value in _prop(props, "aliases", "alias"):
        if invalid_list_string(value):
            continue  # Obsidian 1.9.3+: a comma-separated string is not a list of aliases
        for item in _as_strings(value):
            alias = item.strip()
            if alias and alias not in out:
                out.append(alias)
    return out
