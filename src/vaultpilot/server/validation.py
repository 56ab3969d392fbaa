"""Validation problems in the Agent Communication Server's words.

``explain(what, model, errors)`` is ``tools.validation.describe`` (the one way a validation
problem becomes a message) with the server's ``Wording``: ``unknown argument 'x' (valid: …)``,
``unknown command 'x'; valid commands: …``, and for the fields that take a string or an
object/list (``Changes``, ``Command``) only the branch matching what was sent. Why the server
keeps its own words is said in ``tools/validation.py``.
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


def explain(what: str, model: type[BaseModel], errors: Sequence[Any]) -> str:
    """``Invalid <what>: <problem>; <problem>.`` for pydantic error dicts, in the server's words."""
    return describe(errors, what=what, model=model, wording=SERVER_WORDING)
