"""Tool schemas as the model sees them: compact, self-contained, always an object at the root.

* ``compact_schema`` removes what costs tokens and tells the model nothing: ``"default": null``,
  boolean ``additionalProperties`` (the tools refuse unknown parameters themselves, with the list
  of valid ones), ``{"type": "null"}`` branches of optional fields (an optional field is simply
  not ``required``), and unions of plain scalar types (``anyOf: [{type: string}, {type:
  integer}]`` becomes ``type: ["string", "integer"]``; ``integer`` folds into ``number``).
  Docstring descriptions hard-wrapped at 100 columns are unwrapped into paragraphs.
* ``flatten_tagged_union`` turns a pydantic tagged-union schema (``oneOf`` + ``discriminator``
  + ``$defs``, as the process tools' commands are) into one object whose tag property is an
  ``enum`` of the actions: model APIs want an object at the root. ``tagged_variants`` gives each
  action's own variant (to check a call's arguments against the action it names).
* ``tool_entry`` builds one OpenAI ``tools`` entry.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection
from typing import Any

__all__ = [
    "compact_schema",
    "flatten_tagged_union",
    "tagged_variants",
    "tool_entry",
    "unwrap_text",
]

_SCALARS = ("string", "integer", "number", "boolean")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s")


def unwrap_text(text: str) -> str:
    """Join hard-wrapped lines into paragraphs; keep blank lines, list items and 'x:' headers."""
    out: list[str] = []
    for line in text.strip().split("\n"):
        stripped = line.strip()
        continues = (
            out
            and stripped
            and out[-1].strip()
            and not _ITEM.match(line)
            and not out[-1].rstrip().endswith(":")
        )
        if continues:
            out[-1] = out[-1].rstrip() + " " + stripped
        else:
            out.append(line.rstrip())
    return "\n".join(out)


def _merge_scalars(options: list[Any]) -> list[Any]:
    plain = [o for o in options if isinstance(o, dict) and set(o) == {"type"}]
    types: list[str] = []
    for o in plain:
        for t in o["type"] if isinstance(o["type"], list) else [o["type"]]:
            if t in _SCALARS and t not in types:
                types.append(t)
    if len(types) < 2 or len(plain) < 2:
        return options
    if "integer" in types and "number" in types:
        types.remove("integer")
    merged: dict[str, Any] = {"type": types if len(types) > 1 else types[0]}
    rest = [o for o in options if o not in plain]
    return [merged, *rest]


def compact_schema(node: Any) -> Any:
    """A smaller schema meaning the same to the model (see the module docstring)."""
    if isinstance(node, list):
        return [compact_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default" and value is None:
            continue
        if key == "additionalProperties" and isinstance(value, bool):
            continue
        if key == "description" and isinstance(value, str):
            out[key] = unwrap_text(value)
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: compact_schema(v) for name, v in value.items()}
            continue
        out[key] = compact_schema(value)
    for union in ("anyOf", "oneOf"):
        if union not in out:
            continue
        options = _merge_scalars([o for o in out[union] if o != {"type": "null"}])
        if len(options) == 1:
            rest = {k: v for k, v in out.items() if k != union}
            out = {**options[0], **rest}
        else:
            out[union] = options
    return out


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[str(node["$ref"]).rsplit("/", 1)[-1]])
        return _resolve({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    return {k: _resolve(v, defs) for k, v in node.items() if k != "title"}


def tagged_variants(schema: dict[str, Any], *, tag: str = "type") -> dict[str, dict[str, Any]]:
    """Each action of a tagged union and its variant's schema (resolved); ``{}`` for others."""
    defs = schema.get("$defs", {})
    body = _resolve({k: v for k, v in schema.items() if k != "$defs"}, defs)
    variants = body.get("oneOf") or body.get("anyOf")
    if body.get("type") == "object" or not isinstance(variants, list):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for variant in variants:
        action = variant.get("properties", {}).get(tag, {}).get("const")
        if isinstance(action, str):
            out[action] = variant
    return out


def flatten_tagged_union(
    schema: dict[str, Any], *, tag: str = "type", omit: Collection[str] = ()
) -> dict[str, Any]:
    """One object schema for a tagged union; other schemas come back resolved, untitled.

    The properties named in ``omit`` (set by the caller, not the model) are left out everywhere:
    properties, ``required`` and each action's "Needs:" line.
    """
    defs = schema.get("$defs", {})
    body = _resolve({k: v for k, v in schema.items() if k != "$defs"}, defs)
    variants = body.get("oneOf") or body.get("anyOf")
    if body.get("type") == "object" or not isinstance(variants, list):
        return _without(dict(body), omit)
    actions: list[str] = []
    properties: dict[str, Any] = {}
    required: set[str] | None = None
    lines: list[str] = []
    for variant in variants:
        props = variant.get("properties", {})
        action = props.get(tag, {}).get("const")
        if not isinstance(action, str):
            continue
        actions.append(action)
        needed = [n for n in variant.get("required", []) if n != tag and n not in omit]
        summary = variant.get("description", "").strip()
        lines.append(f"{action}: {summary} Needs: {', '.join(needed) or 'nothing else'}.")
        required = set(needed) if required is None else required & set(needed)
        for name, prop in props.items():
            if name != tag and name not in omit:
                properties.setdefault(name, prop)
    out: dict[str, Any] = {
        "type": "object",
        "properties": {
            tag: {"type": "string", "enum": actions, "description": "\n".join(lines)},
            **properties,
        },
        "required": [tag, *sorted(required or ())],
    }
    return out


def _without(schema: dict[str, Any], omit: Collection[str]) -> dict[str, Any]:
    if not omit:
        return schema
    props = schema.get("properties")
    if isinstance(props, dict):
        schema["properties"] = {k: v for k, v in props.items() if k not in omit}
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [n for n in required if n not in omit]
    return schema


def tool_entry(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """One entry of the Chat Completions ``tools`` list."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": unwrap_text(description),
            "parameters": compact_schema(parameters),
        },
    }
