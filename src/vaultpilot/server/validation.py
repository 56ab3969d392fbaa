"""Validation problems as one message a person or a model can act on.

``explain(what, model, errors)`` turns pydantic's error list into ``Invalid <what>: <problem>;
<problem>.``: each bad field by its wire name, unknown arguments with the valid ones, unknown
commands with the valid names, and for fields that take a string or an object/list
(``Changes``, ``Command``) only the branch matching what was sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel

__all__ = ["explain", "field_names"]

_UNION_TAGS = frozenset({"str", "list[str]", "NoteChanges"})
_UNION_HINTS = {
    "Changes": "a string (the whole new content) or an object with 'content' or 'append', "
    "and/or 'frontmatter' (and optionally 'expectedVersion')",
    "Command": "a string (the command line) or a list of strings (the argument list)",
}


def field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        names.append(str(choices[0]) if choices else (info.alias or name))
    return names


def _model_at(model: type[BaseModel], path: Sequence[object]) -> type[BaseModel]:
    """The model holding the last part of an error location (for nested objects)."""
    for part in path:
        names = dict(zip(field_names(model), model.model_fields.values(), strict=True))
        info = names.get(str(part))
        if info is None:
            break
        inner = [a for a in get_args(info.annotation) or (info.annotation,) if isinstance(a, type)]
        nested = [a for a in inner if issubclass(a, BaseModel)]
        if not nested:
            break
        model = nested[0]
    return model


def _is_tag(part: object) -> bool:
    """A pydantic union-branch tag in an error location (``str``, ``function-after[...]``)."""
    text = str(part)
    return text in _UNION_TAGS or "[" in text


def explain(what: str, model: type[BaseModel], errors: Sequence[Any]) -> str:
    """One message naming every problem (pydantic error dicts) and what is valid.

    For a field that takes a string or an object/list (``Changes``, ``Command``) only the branch
    matching what was sent is explained; anything else gets the field's accepted forms.
    """
    problems: list[str] = []
    given: dict[object, object] = {
        e["loc"][0]: e.get("input")
        for e in errors
        if len(e["loc"]) == 2 and str(e["loc"][1]) == "str"
    }
    for item in errors:
        loc = item["loc"]
        if len(loc) >= 2 and _is_tag(loc[1]) and loc[0] in given:
            structured = isinstance(given[loc[0]], dict | list)
            if structured == (str(loc[1]) == "str"):
                continue  # the other branch explains it
            if not structured:
                hint = _UNION_HINTS.get(str(loc[0]), "a string, an object or a list")
                problems.append(f"'{loc[0]}' must be {hint}")
                continue
        where = ".".join(str(p) for p in loc if not _is_tag(p)) or "arguments"
        kind = item["type"]
        if kind == "extra_forbidden":
            parts = [p for p in loc if not _is_tag(p)]
            valid = ", ".join(field_names(_model_at(model, parts[:-1])))
            problems.append(f"unknown argument '{where}' (valid: {valid})")
        elif kind == "missing":
            problems.append(f"'{where}' is required")
        elif kind == "literal_error" and where == "commandName":
            valid = (item.get("ctx") or {}).get("expected", "")
            problems.append(f"unknown command {item['input']!r}; valid commands: {valid}")
        elif kind == "value_error":
            problems.append(f"'{where}': {str(item['msg']).removeprefix('Value error, ')}")
        else:
            problems.append(f"'{where}': {item['msg']}")
    return f"Invalid {what}: " + "; ".join(dict.fromkeys(problems)) + "."
