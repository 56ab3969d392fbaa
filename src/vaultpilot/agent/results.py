"""Reading what the model wrote into a tool call, and summing up what a tool returned.

* ``parse_arguments(tool, text)`` → ``(arguments, None)`` or ``(None, problem)``: empty text is
  ``{}``; anything but a JSON object is a problem, worded so the model can send the call again.
* ``preview(result)`` → one short line for a person: the failure message, the tool's own
  ``message``, or a count of what was found or read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["PREVIEW_CHARS", "parse_arguments", "preview"]

PREVIEW_CHARS = 160


def parse_arguments(tool: str, text: str) -> tuple[dict[str, Any] | None, str | None]:
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, (
            f"The arguments of {tool} are not valid JSON ({exc.msg} at character {exc.pos}). "
            f"Call {tool} again with the arguments as one JSON object matching its schema."
        )
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"a {type(value).__name__} value"
        return None, (
            f"The arguments of {tool} must be a JSON object of named parameters, not {kind}. "
            f"Call {tool} again with an object matching its schema."
        )
    return value, None


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def preview(result: Mapping[str, Any]) -> str:
    for key in ("error", "message"):
        if isinstance(result.get(key), str) and result[key]:
            return _cut(result[key])
    if isinstance(result.get("results"), list):
        found = result.get("totalFound", len(result["results"]))
        paths = [str(r.get("path")) for r in result["results"][:3] if isinstance(r, Mapping)]
        more = "…" if len(result["results"]) > 3 else ""
        return _cut(f"{found} found" + (f": {', '.join(paths)}{more}" if paths else ""))
    primary = result.get("primaryNote")
    if isinstance(primary, Mapping):
        related = result.get("relatedNotes") or []
        extra = f" (+{len(related)} more)" if related else ""
        return _cut(f"read {primary.get('path')}, {primary.get('wordCount', '?')} words{extra}")
    return _cut(json.dumps(result, ensure_ascii=False, default=str))
