"""The one way a tool's parameters and description are rendered, for the model and for MCP.

* ``render_schema(model)``: the JSON Schema of a pydantic parameters model as every client
  receives it: camelCase names, ``$ref``s resolved, no titles, and compact (``compact_schema``).
* ``compact_schema`` removes what costs tokens and tells the model nothing: ``"default": null``,
  boolean ``additionalProperties`` (the tools refuse unknown parameters themselves, with the list
  of valid ones), ``{"type": "null"}`` branches of optional fields (an optional field is simply
  not required), and merges unions of plain scalar types into one ``type`` list. Docstring
  descriptions hard-wrapped at 100 columns are unwrapped into paragraphs (``unwrap_text``).
  Compacting a compact schema changes nothing.

``tests/tools/snapshots/schema_*.json`` pin the result: what the model and MCP clients read.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

__all__ = ["compact_schema", "render_schema", "resolve_refs", "unwrap_text"]

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


def resolve_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` to its ``$defs`` replaced by the definition, untitled."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = copy.deepcopy(defs[str(node["$ref"]).rsplit("/", 1)[-1]])
            return walk({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        return {k: walk(v) for k, v in node.items() if k != "title"}

    out: dict[str, Any] = walk({k: v for k, v in schema.items() if k != "$defs"})
    return out


def render_schema(model: type[BaseModel], *, by_alias: bool = True) -> dict[str, Any]:
    """The schema of ``model``'s parameters as clients receive it (see the module)."""
    raw = model.model_json_schema(by_alias=by_alias)
    out: dict[str, Any] = compact_schema(resolve_refs(raw))
    out.pop("description", None)  # the model's docstring is for us; the tool's is the model's
    return out
