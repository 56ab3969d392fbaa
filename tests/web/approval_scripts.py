"""Recorded runs for the approval-card tests: a call asking without a diff (git_agent's
``git_add``), a move a person may approve file by file followed by a folder delete that is applied
whole, and the delete of a 6,002-line note. Events are shaped as the agent loop emits them, with
the labels and approval reasons the agent's own modules give."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.web.frame_server import Run
from tests.web.scripts import TOOLS
from vaultpilot.agent.approvals import ApprovalPolicy
from vaultpilot.agent.steps import describe

MANAGER = "obsidian_vault_manager"
HUGE_LINES = 6002
LINK_DIFF = (
    "--- a/Weekly Review.md\n+++ b/Weekly Review.md\n@@ -1,3 +1,3 @@\n # Weekly Review\n \n"
    "-- [[Meetings/Retro]]\n+- [[Archive/Retro]]\n"
)
TRAVEL = {
    "Travel/Norway.md": "# Norway\n\n" + "".join(f"- day {d}: fjords\n" for d in range(1, 18)),
    "Travel/Japan.md": "# Japan\n\nKyoto.\n",
}


def _deleted(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"-{line}\n" for line in lines)
    return f"--- a/{path}\n+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n{body}"


async def _ask(
    run: Run, call_id: str, step: int, name: str, args: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """A call that asks first: tool_call, approval_required, the page's answer, resolved."""
    await run.emit("status", message=f"Thinking (step {step})", step=step)
    await run.emit(
        "tool_call", call_id=call_id, name=name, arguments=args, raw_arguments=json.dumps(args),
        step=step, added={}, label=describe(name, args),
    )  # fmt: skip
    operation = str(args.get("operation") or args.get("action"))
    await run.emit(
        "approval_required", call_id=call_id, name=name, operation=operation, arguments=args,
        reason=ApprovalPolicy().reason(name, operation), **extra,
    )  # fmt: skip
    answer = await run.approval()
    await run.emit(
        "approval_resolved", call_id=call_id, approved=bool(answer.get("approved")), by="user",
        reason=str(answer.get("reason") or ""),
    )  # fmt: skip
    return answer


async def _result(run: Run, call_id: str, name: str, outcome: str, **extra: Any) -> None:
    await run.emit(
        "tool_result", call_id=call_id, name=name, success=True, result={"ok": True},
        preview=outcome, source="tool", duration_ms=5.0, outcome=outcome, **extra,
    )  # fmt: skip


async def _finish(run: Run, steps: int, text: str) -> None:
    await run.emit("status", message=f"Thinking (step {steps})", step=steps)
    await run.emit("text_chunk", text=text, step=steps)
    await run.emit(
        "run_finished", reason="done", steps=steps, prompt_tokens=900, completion_tokens=100,
        total_tokens=1000, text=text, message=f"Done in {steps} steps.",
    )  # fmt: skip


async def git_add_run(run: Run) -> None:
    """git_agent git_add asks (every external tool does), with no diff and no targets."""
    await run.emit(
        "run_started", run_id=run.run_id, model="scripted", tools=[*TOOLS, "git_agent"],
        max_steps=20, token_budget=None, approval_mode="auto",
    )  # fmt: skip
    args = {"action": "git_add", "payload": {"paths": ["Inbox.md"]}}
    answer = await _ask(run, "g1", 1, "git_agent", args)
    if answer.get("approved"):
        await _result(run, "g1", "git_agent", "staged 1 file")
    # Control characters in model text: they must read as escapes, not as empty boxes.
    await _finish(run, 2, "Staged Inbox.md.\x00 \x1b[31mred\x1b[0m")


async def move_then_delete_folder_run(run: Run) -> None:
    """A move that rewrites a link in another note (approvable file by file), then a folder
    delete (applied whole), both with their dry-run diffs."""
    move = {"operation": "move_note", "target": "Meetings/Retro.md", "destination": "Archive"}
    moved = {"path": "Archive/Retro.md", "from": "Meetings/Retro.md", "to": "Archive/Retro.md",
             "diff": ""}  # fmt: skip
    relinked = {"path": "Weekly Review.md", "from": "Weekly Review.md", "to": "Weekly Review.md",
                "diff": LINK_DIFF}  # fmt: skip
    answer = await _ask(run, "m1", 1, MANAGER, move, diffs=[moved, relinked])
    if answer.get("approved"):
        await _result(run, "m1", MANAGER, "moved", files=[{"path": "Archive/Retro.md",
                      "added": 0, "removed": 0, "from": "Meetings/Retro.md"}])  # fmt: skip
    delete = {"operation": "delete_folder", "target": "Travel"}
    diffs = [{"path": path, "diff": _deleted(path, text)} for path, text in TRAVEL.items()]
    answer = await _ask(run, "d1", 2, MANAGER, delete, diffs=diffs)
    if answer.get("approved"):
        await _result(run, "d1", MANAGER, "deleted 2 notes")
    await _finish(run, 3, "Moved the retro and deleted Travel.")


async def huge_delete_run(run: Run) -> None:
    """The delete of a long note: its dry run's diff is every one of its lines, removed."""
    path = "Long/Huge Log.md"
    text = "".join(f"entry {i}: nothing happened\n" for i in range(1, HUGE_LINES + 1))
    delete = {"operation": "delete_note", "target": path}
    diffs = [{"path": path, "diff": _deleted(path, text)}]
    answer = await _ask(run, "h1", 1, MANAGER, delete, diffs=diffs)
    if answer.get("approved"):
        await _result(run, "h1", MANAGER, "moved to the trash")
    await _finish(run, 2, "Deleted the log.")


async def waits_for_ever(run: Run) -> None:
    """Thinks, then waits (until the server restarts under it)."""
    await run.emit(
        "run_started", run_id=run.run_id, model="scripted", tools=TOOLS, max_steps=20,
        token_budget=None,
    )  # fmt: skip
    await run.emit("status", message="Thinking (step 2)", step=2)
    await asyncio.sleep(120)
