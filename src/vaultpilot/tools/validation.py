"""The one way a pydantic validation problem becomes a message, to a model or a person.

``describe(errors, what=..., model=..., wording=...)`` turns pydantic's error list into
``Invalid <what>: <problem>; <problem>.``, one problem per bad field, in the caller's terms
(names as on the wire, from each field's alias): an unknown field lists the valid ones, an
unknown choice (``operation``, ``commandName``…) lists the valid values, a missing field is
named, a validator's own message is kept without pydantic's ``Value error,`` prefix, a problem
said twice is said once, and a length limit says how long the value was, the limit and what to
do instead (``_STRING_ADVICE``/``_LIST_ADVICE``). ``explain(err, subject=..., model=...)`` is
``describe`` with the tools' wording; the tools, the agent's function tools and MCP use it, and
the Agent Communication Server uses ``describe`` with its own ``Wording``
(``server/validation.py``).

Why two wordings remain. Both are wire contracts that clients and models already read (pinned by
``tests/tools/snapshots``, ``tests/server/snapshots/rpc_failures.json`` and the tests that assert
error text), so they were unified everywhere except where they say different things:

* the words: the tools say ``unknown parameter 'x' (valid parameters: …)`` and ``unknown
  operation 'x'; valid values: …``; the server says ``unknown argument 'x' (valid: …)`` and
  ``unknown command 'x'; valid commands: …``.
* locations: the server's models take a string or an object for one field (``Changes``,
  ``Command``), so its wording reads a location against the model (``Wording.model_paths``):
  pydantic's union-branch tags are dropped, only the branch matching what was sent is explained,
  and an unknown nested name lists the nested model's fields. The tools' wording prints
  pydantic's own location and the top-level parameters: turning that on for the tools would
  rewrite their messages for union-typed property filters (``filters.properties.x.str``) and for
  unknown keys in ``dateRange``.
* length limits: only the tools' wording explains them (``Wording.lengths``); the server's
  request models answer a too-long field with pydantic's text (``String should have at most 64
  characters``), which its clients receive today.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

__all__ = ["TOOL_WORDING", "Wording", "describe", "explain"]


@dataclass(frozen=True, slots=True)
class Wording:
    """The words one wire uses for validation problems; everything else is shared.

    ``noun`` is what an unknown field is called ("parameter") and ``valid_fields`` the label
    before the valid ones. ``choices`` maps a field that takes one of a fixed set of values to
    (what one value is called, the label before the valid ones). ``model_paths`` reads locations
    against the model (see the module docstring); ``union_hints`` then says what a
    string-or-object field takes, and ``union_tags`` names the wire's own models that pydantic
    puts in locations as union branches. ``lengths`` explains length limits with advice instead of
    pydantic's text.
    """

    noun: str
    valid_fields: str
    choices: Mapping[str, tuple[str, str]]
    model_paths: bool = False
    union_hints: Mapping[str, str] = field(default_factory=dict)
    union_tags: frozenset[str] = frozenset()
    lengths: bool = False


TOOL_WORDING = Wording(
    noun="parameter",
    valid_fields="valid parameters",
    choices={name: (name, "valid values") for name in ("operation", "queryType", "contextType")},
    lengths=True,
)


def _field_names(model: type[BaseModel]) -> list[str]:
    """A model's field names as the wire spells them (the first validation alias, else alias)."""
    names = []
    for name, info in model.model_fields.items():
        choices = getattr(info.validation_alias, "choices", None)
        names.append(str(choices[0]) if choices else (info.alias or name))
    return names


def _model_at(model: type[BaseModel], path: Sequence[object]) -> type[BaseModel]:
    """The model holding the last part of an error location (for nested objects)."""
    for part in path:
        names = dict(zip(_field_names(model), model.model_fields.values(), strict=True))
        info = names.get(str(part))
        if info is None:
            break
        inner = [a for a in get_args(info.annotation) or (info.annotation,) if isinstance(a, type)]
        nested = [a for a in inner if issubclass(a, BaseModel)]
        if not nested:
            break
        model = nested[0]
    return model


_UNION_TAGS = frozenset({"str", "list[str]"})


def _is_tag(part: object, wording: Wording) -> bool:
    """A pydantic union-branch tag in an error location (``str``, ``function-after[...]``, or
    one of the wire's models)."""
    text = str(part)
    return text in _UNION_TAGS or text in wording.union_tags or "[" in text


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
_LENGTH_ERRORS = frozenset(
    {"string_too_long", "too_long", "note_too_large", "too_many_filters", "filter_value_too_long"}
)


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


def _branch(
    item: Mapping[str, Any], given: Mapping[object, object], wording: Wording
) -> str | None:
    """For a string-or-object field: "" when the other branch explains it, a hint, or None."""
    loc = item["loc"]
    if len(loc) < 2 or not _is_tag(loc[1], wording) or loc[0] not in given:
        return None
    structured = isinstance(given[loc[0]], dict | list)
    if structured == (str(loc[1]) == "str"):
        return ""  # the other branch explains it
    if structured:
        return None
    hint = wording.union_hints.get(str(loc[0]), "a string, an object or a list")
    return f"'{loc[0]}' must be {hint}"


def _problem(item: Mapping[str, Any], model: type[BaseModel] | None, wording: Wording) -> str:
    """One error dict as one problem, in ``wording``'s terms."""
    parts = [p for p in item["loc"] if not (wording.model_paths and _is_tag(p, wording))]
    where = ".".join(str(p) for p in parts) or "arguments"
    kind = item["type"]
    if kind == "extra_forbidden":
        valid = ""
        if model is not None:
            holder = _model_at(model, parts[:-1]) if wording.model_paths else model
            names = _field_names(holder)
            spelled = to_camel(str(parts[-1])) if parts else ""
            if spelled != str(parts[-1]) and spelled in names:  # a snake_case spelling
                return f"unknown {wording.noun} '{where}': write it '{spelled}'"
            valid = f" ({wording.valid_fields}: {', '.join(names)})"
        return f"unknown {wording.noun} '{where}'{valid}"
    if kind == "missing":
        return f"'{where}' is required"
    if kind == "literal_error" and where in wording.choices:
        noun, label = wording.choices[where]
        expected = (item.get("ctx") or {}).get("expected", "")
        return f"unknown {noun} {item['input']!r}; {label}: {expected}"
    if kind in _LENGTH_ERRORS and wording.lengths:
        return _too_long(where, item)
    if kind == "bool_type":  # a flag is a JSON boolean: "false" or 0 is not read as false
        given = json.dumps(item.get("input"), ensure_ascii=False, default=str)[:40]
        return f"'{where}' must be true or false (a JSON boolean, unquoted), not {given}"
    return f"'{where}': {str(item['msg']).removeprefix('Value error, ')}"


def describe(
    errors: Sequence[Any],
    *,
    what: str,
    model: type[BaseModel] | None = None,
    wording: Wording = TOOL_WORDING,
) -> str:
    """One message naming every problem (pydantic error dicts) and what is valid.

    ``what`` names what was invalid ("arguments for CreateNote", "IToolCommand"); ``model``
    (the validated model) lists the valid field names when one is unknown.
    """
    given: dict[object, object] = {}
    if wording.model_paths:
        given = {
            e["loc"][0]: e.get("input")
            for e in errors
            if len(e["loc"]) == 2 and str(e["loc"][1]) == "str"
        }
    problems: list[str] = []
    for item in errors:
        branch = _branch(item, given, wording) if given else None
        if branch is None:
            problems.append(_problem(item, model, wording))
        elif branch:
            problems.append(branch)
    return f"Invalid {what}: " + "; ".join(dict.fromkeys(problems)) + "."


def explain(err: ValidationError, *, subject: str, model: type[BaseModel] | None = None) -> str:
    """A tool's validation error: which parameter, what is wrong, what is valid.

    ``subject`` names what was called ("obsidian_vault_manager"); ``model`` (the parameters
    model) lists the valid parameter names when one is unknown.
    """
    return describe(err.errors(include_url=False), what=f"arguments for {subject}", model=model)
