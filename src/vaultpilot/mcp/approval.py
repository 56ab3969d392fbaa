"""Asking the person to approve one tool call, through MCP elicitation.

``ask_person(ctx, params, reason, arguments)`` returns:

* ``Asked.UNSUPPORTED`` when the client declared no form elicitation (nothing is asked);
* on a handshake-era connection (protocol up to 2025-11-25): the person's answer to an
  ``elicitation/create`` request sent while the call waits (``ACCEPTED``, ``DECLINED`` or
  ``CANCELLED``);
* on a 2026-07-28 connection: an ``InputRequiredResult`` carrying the question the first time;
  the client asks, then retries the call with the answer and the echoed ``request_state``, and
  the answer is returned then. ``request_state`` is a digest of the tool and its arguments, so
  an answer given for one call never approves another.

``summarize(preview)`` turns the operation's dry-run result into the one or two lines the
question adds about what would change: the files with their lines added and removed, and the
dry run's first warning (e.g. notes left linking to a deleted one).

Only ``accept`` approves. The form has one boolean field, ``approve``; a client that accepts
with it set to false has declined.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vaultpilot.agent.steps import describe, diff_counts
from vaultpilot.wording import plural

__all__ = ["Asked", "ask_person", "summarize"]

_KEY = "approval"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this operation on the vault.",
            "default": True,
        }
    },
}


class Asked(enum.Enum):
    ACCEPTED = "accepted"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    UNSUPPORTED = "unsupported"


def _can_elicit(ctx: Any) -> bool:
    caps: types.ClientCapabilities | None = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return False
    # A bare ``elicitation: {}`` (before modes existed) means form support; url-only does not.
    return caps.elicitation.form is not None or caps.elicitation.url is None


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _file_change(diff: Mapping[str, Any]) -> tuple[str, int, int]:
    before, after = diff.get("from"), diff.get("to")
    text = str(diff.get("diff") or "")
    added, removed = diff_counts(text)
    counts = f"+{added} −{removed}"
    path = str(diff.get("path") or after or before or "")
    if "\n@@" not in "\n" + text and not path.lower().endswith(".md"):
        # Not a note (no hunks to count): "+0 −0" would read as "nothing changes".
        what = "deleted" if after is None else "created" if before is None else "changed"
        if before and after and before != after:
            return f"{before} → {after} (binary, moved)", 0, 0
        return f"{before if after is None else after} (binary, {what})", 0, 0
    if after is None and before:
        return f"{before} deleted ({counts})", added, removed
    if before is None and after:
        return f"{after} created ({counts})", added, removed
    if before and after and before != after:
        moved = f"{before} → {after}"
        return (f"{moved} ({counts})" if added or removed else moved), added, removed
    return f"{diff.get('path') or after or before} ({counts})", added, removed


def summarize(preview: Mapping[str, Any], *, shown: int = 3) -> str:
    """What a dry run says the call would change, in one or two lines (see the module); empty
    when it lists no files."""
    diffs = [d for d in preview.get("diffs") or () if isinstance(d, Mapping)]
    if not diffs:
        return ""
    changes = [_file_change(d) for d in diffs]
    added = sum(c[1] for c in changes)
    removed = sum(c[2] for c in changes)
    listed = "; ".join(c[0] for c in changes[:shown])
    if len(changes) > shown:
        listed += f"; and {plural(len(changes) - shown, 'more file')}"
    total = f" ({plural(len(changes), 'file')}, +{added} −{removed})" if len(changes) > 1 else ""
    line = _cut(f"Would change{total}: {listed}.", 400)
    warnings = [w for w in preview.get("warnings") or () if isinstance(w, str)]
    return line + (f"\nNote: {_cut(warnings[0], 300)}" if warnings else "")


def _question(name: str, reason: str, arguments: Mapping[str, Any], changes: str = "") -> str:
    shown = json.dumps(arguments, ensure_ascii=False)
    if len(shown) > 600:
        shown = shown[:600] + "…"
    label = describe(name, arguments)
    acts_on = f" {label['object']}" if label["object"] else ""
    what = f"\n{changes}" if changes else ""
    return f"{label['verb']}{acts_on}? {reason}{what}\nThe call: {name} with {shown}"


def _digest(name: str, arguments: Mapping[str, Any], preview: object) -> str:
    canon = json.dumps([name, arguments, preview], sort_keys=True, ensure_ascii=True)
    return "vaultpilot-approval:" + hashlib.sha256(canon.encode("ascii")).hexdigest()


def _answer(result: types.ElicitResult) -> Asked:
    if result.action == "accept":
        approve = (result.content or {}).get("approve", True)
        return Asked.ACCEPTED if approve is not False else Asked.DECLINED
    return Asked.DECLINED if result.action == "decline" else Asked.CANCELLED


async def ask_person(
    ctx: Any,
    params: types.CallToolRequestParams,
    reason: str,
    arguments: Mapping[str, Any],
    *,
    changes: str = "",
    preview: object = None,
) -> Asked | types.InputRequiredResult:
    """Ask whether the call may run (see the module); ``ctx`` is the SDK's request context,
    ``changes`` what the dry run says would change (``summarize``) and ``preview`` the dry run's
    diffs: an answer given to another preview (its notes edited since) is not taken, the
    person is asked again."""
    if not _can_elicit(ctx):
        return Asked.UNSUPPORTED
    message = _question(params.name, reason, arguments, changes)
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        result = await ctx.session.elicit_form(message, _SCHEMA, related_request_id=ctx.request_id)
        return _answer(result)
    state = _digest(params.name, arguments, preview)
    answer = (params.input_responses or {}).get(_KEY)
    if params.request_state == state and isinstance(answer, types.ElicitResult):
        return _answer(answer)
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=_SCHEMA)
    )
    return types.InputRequiredResult(input_requests={_KEY: request}, request_state=state)
