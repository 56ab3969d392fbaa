"""Recorded runs the frame server replays, event by event as the agent loop emits them: each tool
call with its label and each result with its outcome (and a write's files), said by the agent's
own ``agent.steps``; ``external_run`` is an external agent's, which says none of them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.web.frame_server import Run
from vaultpilot.agent.approvals import ApprovalPolicy
from vaultpilot.agent.steps import describe, diff_counts, outcome

TOOLS = ["obsidian_query_vault", "obsidian_get_context", "obsidian_vault_manager"]
DIFF = (
    "--- a/Meetings/Retro.md\n+++ b/Meetings/Retro.md\n@@ -1,5 +1,6 @@\n ---\n"
    "-tags: [meeting]\n+tags: [meeting, reviewed]\n ---\n # Retro\n \n"
    "+Reviewed in [[Weekly Review]].\n"
)
HOSTILE = (
    "# Hostile\n\n"
    '<script>window.__pwned = "script"</script>\n\n'
    '<img src="x" onerror="window.__pwned = \'img\'">\n\n'
    "[click me](javascript:window.__pwned='link'), [again](JAVASCRIPT:window.__pwned='up') and "
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n\n"
    "<a href=\"javascript:window.__pwned='a'\">raw anchor</a> and [[Weekly Review]]\n"
)
NOTES = {
    "Meetings/Retro.md": "---\ntags: [meeting]\n---\n# Retro\n\nWhat went well.\n",
    "Weekly Review.md": "# Weekly Review\n\n- [ ] Inbox zero\n",
    "Inbox/Hostile.md": HOSTILE,
}


async def _call(
    run: Run, call_id: str, step: int, name: str, arguments: dict[str, Any], *, said: bool = True
) -> None:
    label = {"label": describe(name, arguments)} if said else {}
    await run.emit(
        "tool_call", call_id=call_id, name=name, arguments=arguments,
        raw_arguments=json.dumps(arguments), step=step, added={}, **label,
    )  # fmt: skip


async def _usage(run: Run, step: int, total: int, run_total: int) -> None:
    await run.emit(
        "usage", step=step, prompt_tokens=total - 40, completion_tokens=40, total_tokens=total,
        run_total_tokens=run_total, estimated=False,
    )  # fmt: skip


async def _say(run: Run, kind: str, step: int, text: str) -> None:
    for word in text.split(" "):
        await run.emit(kind, text=word + " ", step=step)
        await asyncio.sleep(0.01)


async def _finish(run: Run, steps: int, total: int, text: str, *, reason: str = "done") -> None:
    await run.emit(
        "run_finished", reason=reason, steps=steps, prompt_tokens=total - 120,
        completion_tokens=120, total_tokens=total, text=text, message=f"Done in {steps} steps.",
    )  # fmt: skip


async def recorded_run(run: Run) -> None:
    """A thought, two tool calls (the second waits for approval with its diff), the answer."""
    await run.emit(
        "run_started", run_id=run.run_id, model="scripted", tools=TOOLS, max_steps=20,
        token_budget=200000,
    )  # fmt: skip
    await run.emit("status", message="Thinking (step 1)", step=1)
    await _say(run, "thought", 1, "I should find the meeting notes first.")
    await _usage(run, 1, 940, 940)
    search = {"queryType": "search_by_metadata", "filters": {"tags": ["meeting"]}, "limit": 20}
    await _call(run, "call_1", 1, "obsidian_query_vault", search)
    found = {"results": [{"path": "Meetings/Retro.md"}], "totalFound": 1}
    await run.emit(
        "tool_result", call_id="call_1", name="obsidian_query_vault", success=True,
        result=found, preview="1 note: Meetings/Retro.md", source="tool", duration_ms=12.5,
        outcome=outcome(found),
    )  # fmt: skip
    await run.emit("status", message="Thinking (step 2)", step=2)
    await _usage(run, 2, 1210, 2150)
    edit = {
        "operation": "update_note",
        "target": "Meetings/Retro.md",
        "content": "...",
        "mode": "replace",
    }
    await _call(run, "call_2", 2, "obsidian_vault_manager", edit)
    await run.emit(
        "approval_required", call_id="call_2", name="obsidian_vault_manager",
        operation="update_note", arguments=edit,
        reason=ApprovalPolicy().reason("obsidian_vault_manager", "update_note"),
        diffs=[{"path": "Meetings/Retro.md", "diff": DIFF}],
    )  # fmt: skip
    decision = await run.approval()
    approved = bool(decision.get("approved"))
    await run.emit("approval_resolved", call_id="call_2", approved=approved, by="user")
    if approved:
        added, removed = diff_counts(DIFF)
        files = [{"path": "Meetings/Retro.md", "added": added, "removed": removed}]
        await run.emit(
            "tool_result", call_id="call_2", name="obsidian_vault_manager", success=True,
            result={"path": "Meetings/Retro.md", "diff": DIFF, "version": "v2"},
            preview="updated Meetings/Retro.md (+2 −1)", source="tool", duration_ms=8.0,
            outcome="", files=files,
        )  # fmt: skip
        answer = "Tagged **Meetings/Retro.md** as reviewed and linked it from [[Weekly Review]]."
    else:
        # What the agent loop tells the model (the page shows the person their own words).
        because = f" ({decision['reason']})" if decision.get("reason") else ""
        refused = {
            "error": f"The user refused obsidian_vault_manager update_note{because}. Don't retry "
            "it; say what you would have done, or ask the user how to go on."
        }
        await run.emit(
            "tool_result", call_id="call_2", name="obsidian_vault_manager", success=False,
            result=refused, preview=refused["error"], source="denied", duration_ms=0.0,
            outcome=outcome(refused),
        )  # fmt: skip
        answer = "I left [[Meetings/Retro]] unchanged, as you asked."
    await run.emit("status", message="Thinking (step 3)", step=3)
    await _say(run, "text_chunk", 3, answer)
    await _usage(run, 3, 1300, 3450)
    await _finish(run, 3, 3450, answer)


async def external_run(run: Run) -> None:
    """An external agent's run: its events say no label, outcome or files."""
    await run.emit("status", message="Thinking (step 1)", step=1)
    search = {"queryType": "semantic_search", "query": "dentist"}
    await _call(run, "x1", 1, "obsidian_query_vault", search, said=False)
    await run.emit(
        "tool_result", call_id="x1", name="obsidian_query_vault", success=True,
        result={"results": [], "totalFound": 0}, preview="no notes found", source="tool",
        duration_ms=3.0,
    )  # fmt: skip
    await _finish(run, 1, 500, "Nothing about the dentist.")


async def slow_run(run: Run) -> None:
    """Thinks, then waits for a long time (until Stop)."""
    await run.emit("status", message="Thinking (step 1)", step=1)
    await _say(run, "thought", 1, "Reading every note of the vault, this will take a while.")
    await asyncio.sleep(60)


async def hostile_answer(run: Run) -> None:
    """The answer quotes a note full of HTML and script."""
    await run.emit("status", message="Thinking (step 1)", step=1)
    await run.emit("text_chunk", text="The note says:\n\n" + HOSTILE, step=1)
    await _finish(run, 1, 500, HOSTILE)


def long_run(steps: int) -> Any:
    """``steps`` steps of one search each, streamed as fast as the socket takes them."""

    async def script(run: Run) -> None:
        total = 0
        for step in range(1, steps + 1):
            await run.emit("status", message=f"Thinking (step {step})", step=step)
            await run.emit("thought", text=f"Step {step}: look further.", step=step)
            total += 500
            await _usage(run, step, 500, total)
            args = {"queryType": "semantic_search", "query": f"topic {step}"}
            await _call(run, f"c{step}", step, "obsidian_query_vault", args)
            await run.emit(
                "tool_result", call_id=f"c{step}", name="obsidian_query_vault", success=True,
                result={"results": [], "totalFound": 0}, preview="no notes", source="tool",
                duration_ms=1.0,
            )  # fmt: skip
            await asyncio.sleep(0.003)  # a real loop waits for its model; a few seconds in all
        await run.emit("text_chunk", text="Searched everything.", step=steps)
        await _finish(run, steps, total, "Searched everything.")

    return script
