"""Which tool calls run at once, which wait for the person, and which are refused.

A rule maps ``"tool"`` or ``"tool.operation"`` to ``"allow"``, ``"ask"`` or ``"deny"``; the more
specific rule wins, then the tool's rule, then the policy's default (``"allow"``). The operation of
a call is its ``operation`` argument (obsidian_vault_manager) or its ``type``/``action`` (process
tools).

``DEFAULT_RULES`` asks before every destructive step: deletes, moves and bulk operations of
obsidian_vault_manager, and any shell tool. The configuration's ``[approvals]`` table is laid over
them (``ApprovalPolicy.with_rules``); ``auto_approve`` (``vaultpilot ask --yes``) turns every
"ask" into "allow" but keeps "deny".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["DEFAULT_RULES", "ApprovalPolicy", "Decision", "operation_of"]

Decision = Literal["allow", "ask", "deny"]
_MANAGER = "obsidian_vault_manager"
DEFAULT_RULES: Mapping[str, Decision] = MappingProxyType(
    {
        **{
            f"{_MANAGER}.{op}": "ask"
            for op in (
                "delete_note",
                "delete_folder",
                "move_note",
                "move_folder",
                "bulk_tag",
                "bulk_move",
                "bulk_update_metadata",
            )
        },
        "shell": "ask",
        "execute_shell": "ask",
    }
)


def operation_of(arguments: Mapping[str, Any] | None) -> str | None:
    """The operation a call asks for, if its arguments name one."""
    for key in ("operation", "type", "action"):
        value = (arguments or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    rules: Mapping[str, Decision] = field(default_factory=lambda: DEFAULT_RULES)
    default: Decision = "allow"
    auto_approve: bool = False

    def with_rules(self, rules: Mapping[str, Decision]) -> ApprovalPolicy:
        return replace(self, rules=MappingProxyType({**self.rules, **rules}))

    def decide(self, tool: str, operation: str | None) -> Decision:
        decision = self.default
        if operation is not None and f"{tool}.{operation}" in self.rules:
            decision = self.rules[f"{tool}.{operation}"]
        elif tool in self.rules:
            decision = self.rules[tool]
        if decision == "ask" and self.auto_approve:
            return "allow"
        return decision

    def reason(self, tool: str, operation: str | None) -> str:
        what = f"{tool} {operation}" if operation else tool
        return f"{what} changes or removes things; the policy asks before it runs."
