"""The one way a validation error is explained, to a model or a person.

``explain(err, subject=..., model=...)`` turns a pydantic ``ValidationError`` into one sentence
per problem, in the caller's terms (camelCase parameter names, as on the wire): an unknown
parameter lists the valid ones, an unknown ``operation``/``queryType``/``contextType`` lists the
valid values, a missing one is named, and a length limit says how long the value was, the limit,
and what to do instead (``_STRING_ADVICE``/``_LIST_ADVICE``). Every transport (the tools, the
agent's function tools, the server's request models, the process-tool contract) uses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

__all__ = ["explain"]


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


# What a length limit protects and what to do instead, by parameter (the last name in the
# error's location, camelCase as on the wire): (what happens to the allowed part, advice).
_NAME_ADVICE = ("are read", "Pass a shorter path or title")
_STRING_ADVICE: dict[str, tuple[str, str]] = {
    "query": ("are searched", "Ask with fewer words"),
    "content": ("fit in a note", "Split it into several notes"),
    "contains": ("are compared", "Search for a shorter text"),
    "tags": ("are read", "Use a shorter tag"),
    "expectedVersion": ("are read", "Pass the 'version' exactly as you read it"),
    "date": ("are read", "Write a date as YYYY-MM-DD"),
    "from": ("are read", "Write a date as YYYY-MM-DD"),
    "to": ("are read", "Write a date as YYYY-MM-DD"),
    **dict.fromkeys(
        ("target", "targets", "destination", "referenceNote", "path", "folder"), _NAME_ADVICE
    ),
}
_LIST_ADVICE: dict[str, tuple[str, str]] = {
    "targets": ("are taken in one call", "Split them into several calls"),
    "tags": ("are combined", "Filter on fewer tags"),
    "properties": ("are combined", "Filter on fewer properties"),
    "metadata": ("are set in one call", "Split them into several calls"),
    "metadataChanges": ("are set in one call", "Split them into several calls"),
}


def _too_long(loc: str, item: Mapping[str, Any]) -> str:
    """A length limit in the caller's terms: how long it was, the limit, what to do instead."""
    ctx = item.get("ctx") or {}
    given = item.get("input")
    names = [p for p in loc.split(".") if not p.isdigit()]
    name = to_camel(names[-1]) if names else loc
    match item["type"]:
        case "note_too_large":
            return (
                f"'{loc}' is {ctx['size']:,} bytes in UTF-8; at most {ctx['max_bytes']:,} "
                "fit in a note. Split it into several notes"
            )
        case "too_many_filters":
            return (
                f"'{loc}' has {ctx['count']:,} conditions and values; at most "
                f"{ctx['max_items']:,} are combined. Filter on fewer tags, properties or values"
            )
        case "filter_value_too_long":
            return (
                f"a property name or value in '{loc}' has {ctx['length']:,} characters; at most "
                f"{ctx['max_length']:,} are compared. Filter on a shorter value"
            )
        case "string_too_long":
            length = len(given) if isinstance(given, str) else 0
            done, advice = _STRING_ADVICE.get(name, ("are accepted", "Shorten it"))
            unit = "characters"
        case _:  # too_long: a list or an object
            length = ctx.get("actual_length") or (len(given) if isinstance(given, Sized) else 0)
            done, advice = _LIST_ADVICE.get(name, ("are accepted", "Pass fewer"))
            unit = "entries" if ctx.get("field_type") == "Dictionary" else "items"
    limit = int(ctx.get("max_length", 0))
    return f"'{loc}' has {length:,} {unit}; at most {limit:,} {done}. {advice}"


_LENGTH_ERRORS = (
    "string_too_long",
    "too_long",
    "note_too_large",
    "too_many_filters",
    "filter_value_too_long",
)


def explain(err: ValidationError, *, subject: str, model: type[BaseModel] | None = None) -> str:
    """A validation error in the caller's terms: which parameter, what is wrong, what is valid.

    ``subject`` names what was called ("obsidian_vault_manager", "CreateNote"); ``model`` (the
    parameters model) lists the valid parameter names when one is unknown.
    """
    problems: list[str] = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"]) or "arguments"
        kind = item["type"]
        if kind == "extra_forbidden":
            valid = f" (valid parameters: {', '.join(_field_names(model))})" if model else ""
            problems.append(f"unknown parameter '{loc}'{valid}")
        elif kind == "literal_error" and loc in ("operation", "queryType", "contextType"):
            valid = (item.get("ctx") or {}).get("expected", "")
            problems.append(f"unknown {loc} {item['input']!r}; valid values: {valid}")
        elif kind == "missing":
            problems.append(f"'{loc}' is required")
        elif kind in _LENGTH_ERRORS:
            problems.append(_too_long(loc, item))
        else:
            problems.append(f"'{loc}': {item['msg']}")
    return f"Invalid arguments for {subject}: " + "; ".join(problems) + "."
