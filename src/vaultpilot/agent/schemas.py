"""Process tools' command schemas as the model sees them: one object at the root.

* ``flatten_tagged_union`` turns a pydantic tagged-union schema (``oneOf`` + ``discriminator``
  + ``$defs``, as the process tools' commands are) into one object whose tag property is an
  ``enum`` of the actions: model APIs want an object at the root. ``tagged_variants`` gives each
  action's own variant (to check a call's arguments against the action it names).
* ``tool_entry`` builds one OpenAI ``tools`` entry from a rendered ``ToolSpec`` (the schema is
  already compact: ``vaultpilot.tools.schema`` renders every schema, vault tools and process
  tools alike).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from vaultpilot.tools.schema import resolve_refs

__all__ = ["flatten_tagged_union", "tagged_variants", "tool_entry"]


def tagged_variants(schema: dict[str, Any], *, tag: str = "type") -> dict[str, dict[str, Any]]:
    """Each action of a tagged union and its variant's schema (resolved); ``{}`` for others."""
    body = resolve_refs(schema)
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
    body = resolve_refs(schema)
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
            "description": description,
            "parameters": parameters,
        },
    }
