"""The orchestrator side of the contract: start a process tool, send one request, judge the reply.

Contract:

* ``run_process(command, request)`` starts ``command`` (an argv list, never a shell), writes the
  ``ActionRequest`` JSON to its stdin, closes stdin, and waits at most ``timeout`` seconds. It
  never raises for anything the child does; it returns a ``CallOutcome``:

  - ``Replied``: the child exited 0 and wrote exactly one JSON object that validates as an
    ``ActionResponse`` (the reply may itself report an error: look at ``response.status``);
  - ``Failed`` with ``reason`` "spawn" (the program could not be started), "timeout" (it was
    stopped: on POSIX its whole process group is killed), "exit" (non-zero exit status or killed
    by a signal), "not_json" (stdout empty, not JSON, or more than one value) or "schema" (JSON,
    but not an ``ActionResponse``). ``message`` says what happened in one or two sentences
    and quotes the end of the child's stderr where that helps.

* ``list_process_tools(conn)`` and ``call_tool(conn, name, action, payload)`` are what an agent
  loop needs: the registered process tools with their payload schemas, and a call by name.
  Call ``catalog.register_shipped(conn)`` once at start-up so the shipped agents are listed.

* The child never inherits our environment: it gets ``catalog.child_env(request.tool, env)``, a
  short allowlist picked from ``env`` (this process's environment when None) plus what that one
  tool needs, so secrets such as ``OPENAI_API_KEY``, ``*_TOKEN`` or ``DATABASE_URL`` never reach
  a process tool. The list and its reasons are in ``catalog``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from vaultpilot.contract.catalog import child_env
from vaultpilot.contract.models import ActionRequest, ActionResponse, describe_errors
from vaultpilot.contract.wire import json_type, load_json
from vaultpilot.errors import ExternalError, InvalidArgumentError, OSErrorMapping, map_os_errors
from vaultpilot.memory.registry import ProcessTool, get_tool, list_tools

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "CallOutcome",
    "Failed",
    "FailureReason",
    "Replied",
    "call_tool",
    "list_process_tools",
    "new_request",
    "run_process",
]

DEFAULT_TIMEOUT_S = 60.0
FailureReason = Literal["spawn", "timeout", "exit", "not_json", "schema"]
_STDERR_TAIL = 1500
# A process tool that cannot start is reported as its failure (``Failed``), not raised.
_SPAWN: OSErrorMapping = {OSError: ExternalError}
_SPAWN_ADVICE = (
    "Check that the program exists and that this user may run it "
    "(`vaultpilot agents list` shows each tool's command)."
)


@dataclass(frozen=True, slots=True)
class Replied:
    """The child answered with a valid ActionResponse."""

    response: ActionResponse
    stderr: str
    kind: Literal["replied"] = "replied"


@dataclass(frozen=True, slots=True)
class Failed:
    """The child gave no valid answer; ``message`` says why."""

    reason: FailureReason
    message: str
    exit_code: int | None
    stdout: str
    stderr: str
    kind: Literal["failed"] = "failed"


CallOutcome = Replied | Failed


def new_request(
    tool: str,
    action: str,
    payload: Mapping[str, Any],
    *,
    context: str = "",
    plan_id: uuid.UUID | None = None,
    task_id: uuid.UUID | None = None,
    correlation_id: uuid.UUID | None = None,
) -> ActionRequest:
    """A V1 request with a fresh ``request_id`` (and ``correlation_id`` unless given)."""
    return ActionRequest(
        request_id=uuid.uuid4(),
        api_version="V1",
        tool=tool,
        action=action,
        context=context,
        plan_id=plan_id,
        task_id=task_id,
        correlation_id=correlation_id or uuid.uuid4(),
        payload=dict(payload),
    )


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _STDERR_TAIL else "…" + text[-_STDERR_TAIL:]


def _stop(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Kill the child (and, on POSIX, its process group) and collect what it wrote."""
    with contextlib.suppress(OSError):  # it has exited already: nothing left to kill
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a descendant that left the group still holds the pipes
        proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
        return b"", b""


def run_process(
    command: Sequence[str],
    request: ActionRequest,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CallOutcome:
    """Spawn ``command``, send ``request``, and return the validated reply or why there is none.

    ``env`` is what the child's allowlisted environment is picked from (default: ours); no other
    variable is passed on.
    """
    name = request.tool
    child = child_env(name, os.environ if env is None else env)
    program = command[0] if command else "no command"
    try:
        with map_os_errors(program, f"start '{name}' from", _SPAWN, advice=_SPAWN_ADVICE):
            proc = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=child,
                start_new_session=os.name == "posix",
            )
    except ExternalError as exc:
        return Failed("spawn", exc.message, None, "", "")
    except ValueError as exc:  # e.g. a NUL character in the command
        message = f"Could not start '{name}' from '{program}': {exc}. {_SPAWN_ADVICE}"
        return Failed("spawn", message, None, "", "")
    try:
        out, err = proc.communicate(request.model_dump_json().encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = _stop(proc)
        stderr = err.decode("utf-8", errors="replace")
        return Failed(
            "timeout",
            f"'{name}' did not answer within {timeout:g} s and was stopped.",
            proc.returncode,
            out.decode("utf-8", errors="replace"),
            stderr,
        )
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace")
    code = proc.returncode
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = _tail(stderr)
        message = f"'{name}' {how}" + (f"; its stderr ends with:\n{tail}" if tail else ".")
        return Failed("exit", message, code, stdout, stderr)
    if not out.strip():
        message = f"'{name}' exited without writing a reply on stdout."
        return Failed("not_json", message, code, stdout, stderr)
    try:
        value = load_json(out)
    except InvalidArgumentError as exc:
        message = f"'{name}' did not reply with one JSON object on stdout: {exc}."
        return Failed("not_json", message, code, stdout, stderr)
    if not isinstance(value, dict):
        message = f"'{name}' replied with a JSON {json_type(value)}, not an ActionResponse object."
        return Failed("schema", message, code, stdout, stderr)
    try:
        response = ActionResponse.model_validate(value)
    except ValidationError as exc:
        message = f"'{name}' replied with JSON that is not an ActionResponse: "
        message += describe_errors(exc, where="the reply") + "."
        return Failed("schema", message, code, stdout, stderr)
    return Replied(response, stderr)


def list_process_tools(conn: sqlite3.Connection) -> list[ProcessTool]:
    """The registered process tools, by name, each with its payload schema and command."""
    return [t for t in list_tools(conn, kind="process") if isinstance(t, ProcessTool)]


def call_tool(
    conn: sqlite3.Connection,
    name: str,
    action: str,
    payload: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    context: str = "",
    plan_id: uuid.UUID | None = None,
    task_id: uuid.UUID | None = None,
    correlation_id: uuid.UUID | None = None,
) -> CallOutcome:
    """Call the registered process tool ``name``.

    NotFoundError if no such tool is registered; InvalidArgumentError if it is a built-in tool.
    """
    tool = get_tool(conn, name)
    if not isinstance(tool, ProcessTool):
        raise InvalidArgumentError(
            f"'{name}' is a built-in tool; it runs inside vaultpilot, not as a process."
        )
    request = new_request(
        name,
        action,
        payload,
        context=context,
        plan_id=plan_id,
        task_id=task_id,
        correlation_id=correlation_id,
    )
    return run_process(tool.command, request, timeout=timeout, cwd=cwd, env=env)
