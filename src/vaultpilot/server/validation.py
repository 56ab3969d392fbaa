"""Validation problems in the Agent Communication Server's words.

``explain(what, model, errors)`` is ``tools.validation.describe`` (the one way a validation
problem becomes a message) with the server's ``Wording``: ``unknown argument 'x' (valid: …)``,
``unknown command 'x'; valid commands: …``, and for the fields that take a string or an
object/list (``Changes``, ``Command``) only the branch matching what was sent. Why the server
keeps its own words is said in ``tools/validation.py``. A number that is not finite (a field
with ``allow_inf_nan=False`` given NaN, Infinity or 1e999, which Python's JSON reader takes) is
explained: pydantic says only "Input should be a finite number".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from vaultpilot.tools.validation import Wording, describe

__all__ = ["SERVER_WORDING", "explain"]

SERVER_WORDING = Wording(
    noun="argument",
    valid_fields="valid",
    choices={"commandName": ("command", "valid commands")},
    model_paths=True,
    union_hints={
        "Changes": "a string (the whole new content) or an object with 'content' or 'append', "
        "and/or 'frontmatter' (and optionally 'expectedVersion')",
        "Command": "a string (the command line) or a list of strings (the argument list)",
    },
    union_tags=frozenset({"NoteChanges"}),
)


_NOT_FINITE = (
    "must be a finite number (NaN, Infinity and out-of-range numbers such as 1e999 are not JSON "
    "numbers)"
)
_SEND_INSTEAD = {"timestamp": "send milliseconds since the Unix epoch, e.g. 1764115200000"}


def _finite(item: Any) -> Any:
    if item.get("type") != "finite_number":
        return item
    instead = _SEND_INSTEAD.get(str(item["loc"][-1])) if item.get("loc") else None
    return {**item, "msg": f"{_NOT_FINITE}; {instead}" if instead else _NOT_FINITE}


def explain(what: str, model: type[BaseModel], errors: Sequence[Any]) -> str:
    """``Invalid <what>: <problem>; <problem>.`` for pydantic error dicts, in the server's words."""
    return describe([_finite(e) for e in errors], what=what, model=model, wording=SERVER_WORDING)
