"""The agents' stdlib parser accepts exactly what the pydantic models accept, with the same values.

``wire.parse_request`` and ``obsidian_agent.parse_command`` exist so the agent does not pay for
importing pydantic; these properties keep them equal to ``ActionRequest`` and the note command
models, the definitions the schemas are derived from.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from vaultpilot.contract.models import ActionRequest, ObsidianAgentCommandV1
from vaultpilot.contract.obsidian_agent import ACTIONS, parse_command
from vaultpilot.contract.wire import ParsedRequest, parse_request
from vaultpilot.errors import InvalidArgumentError

from .strategies import broken_requests, json_values, note_payloads, requests

ANY_REQUEST = st.one_of(
    requests("obsidian_agent", ACTIONS, note_payloads("/v")),
    broken_requests("obsidian_agent", ACTIONS, note_payloads("/v")),
    json_values,
)


@settings(max_examples=1000, deadline=None)
@given(obj=ANY_REQUEST)
def test_parse_request_agrees_with_action_request(obj: Any) -> None:
    try:
        parsed = parse_request(json.dumps(obj).encode("utf-8"))
    except InvalidArgumentError:
        parsed = None
    try:
        model = ActionRequest.model_validate(obj)
    except ValidationError:
        model = None
    assert (parsed is None) == (model is None), (obj, parsed, model)
    if parsed is not None and model is not None:
        dumped = model.model_dump(mode="json")
        for field in ParsedRequest.__slots__:
            assert getattr(parsed, field) == dumped[field], field


@settings(max_examples=500, deadline=None)
@given(
    action=st.sampled_from(ACTIONS),
    payload=note_payloads("/v").filter(lambda p: isinstance(p, dict)),
)
def test_parse_command_agrees_with_the_note_command_models(
    action: str, payload: dict[str, Any]
) -> None:
    request = ParsedRequest("r", None, "obsidian_agent", action, "", None, None, None, payload)
    try:
        command = parse_command(request)
    except InvalidArgumentError:
        command = None
    try:
        model = ObsidianAgentCommandV1.model_validate({**payload, "type": action}).root
    except ValidationError:
        model = None
    assert (command is None) == (model is None), (payload, command, model)
    if command is not None and model is not None:
        dumped = model.model_dump()
        assert (command.vault_path, command.note_name) == (
            dumped["vault_path"],
            dumped["note_name"],
        )
        assert command.content == dumped.get("content")
