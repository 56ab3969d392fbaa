"""Reading an ``ActionRequest`` and writing an ``ActionResponse`` with the standard library only.

This is the agents' hot path. ``contract.models`` holds the pydantic models that define the wire
shapes and derive their JSON Schemas; importing pydantic and building those models costs about
100 ms, two thirds of an ``obsidian_agent`` round trip's budget, so the agents parse with this
module instead. A property test (``tests/contract/test_wire_equivalence.py``) pins the two
together: for any JSON value, ``parse_request`` accepts exactly what ``ActionRequest`` accepts and
yields the same fields.

Contract:

* ``parse_request(raw)`` takes stdin's bytes and returns a ``ParsedRequest`` or raises
  ``InvalidArgumentError`` whose message says every field that is wrong. Input must be one UTF-8
  JSON object (RFC 8259: no ``NaN``/``Infinity``, no lone surrogates, nothing after the object).
  Unknown fields are ignored. UUIDs are returned in canonical lower-case hyphenated form.
* ``Reply`` serialises in the field order of the Rust struct, every field present (``null`` when
  empty), as one line of UTF-8 JSON.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from vaultpilot.contract.jsonlog import JsonLog
from vaultpilot.errors import InvalidArgumentError

__all__ = [
    "API_VERSIONS",
    "ParsedRequest",
    "Reply",
    "Result",
    "Status",
    "bind_request",
    "json_type",
    "load_json",
    "parse_request",
    "reply",
    "serve_once",
    "wrong_target",
]

Status = Literal["success", "error"]

# Accepted on input; always written as "V1" (spec/README.md).
API_VERSIONS = {"V1": "V1", "v1": "V1"}

_HEX = "[0-9a-fA-F]"
_HYPHENATED = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
# The forms pydantic (the Rust uuid crate) accepts: hyphenated, simple, braced, urn.
_UUID = re.compile(f"{_HYPHENATED}|{_HEX}{{32}}|\\{{{_HYPHENATED}\\}}|urn:uuid:{_HYPHENATED}")
_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_ID_FIELDS = ("request_id", "plan_id", "task_id", "correlation_id")


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """An ``ActionRequest`` that passed validation; ids are canonical UUID strings."""

    request_id: str
    api_version: str | None
    tool: str
    action: str
    context: str
    plan_id: str | None
    task_id: str | None
    correlation_id: str | None
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Result:
    """``ActionResult``: what the action produced (``output_type`` "text") or why it failed."""

    output_type: str
    data: str
    metadata: Any = None


@dataclass(frozen=True, slots=True)
class Reply:
    """``ActionResponse``; ``to_bytes`` writes it exactly as the contract documents show."""

    request_id: str
    status: Status
    code: int
    result: Result | None = None
    error: str | None = None
    api_version: str | None = None
    plan_id: str | None = None
    task_id: str | None = None
    correlation_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        return {
            "request_id": self.request_id,
            "api_version": self.api_version,
            "status": self.status,
            "code": self.code,
            "result": None
            if result is None
            else {
                "output_type": result.output_type,
                "data": result.data,
                "metadata": result.metadata,
            },
            "error": self.error,
            "plan_id": self.plan_id,
            "task_id": self.task_id,
            "correlation_id": self.correlation_id,
        }

    def to_bytes(self) -> bytes:
        """One line of UTF-8 JSON (non-ASCII kept readable; escaped only if it cannot encode)."""
        obj = self.to_dict()
        try:
            return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            return (json.dumps(obj) + "\n").encode("ascii")


def reply(
    request: ParsedRequest | None,
    *,
    code: int,
    result: Result | None = None,
    error: str | None = None,
) -> Reply:
    """The reply to ``request``: ids echoed; a fresh ``request_id`` when it could not be parsed.

    ``status`` follows ``code``: 0 is "success", anything else "error".
    """
    status: Status = "success" if code == 0 else "error"
    if request is None:
        return Reply(str(uuid.uuid4()), status, code, result, error)
    return Reply(
        request.request_id,
        status,
        code,
        result,
        error,
        api_version=request.api_version,
        plan_id=request.plan_id,
        task_id=request.task_id,
        correlation_id=request.correlation_id,
    )


def bind_request(log: JsonLog, request: ParsedRequest) -> JsonLog:
    """The agent's logger for this request: every line carries its ids from now on."""
    bound = log.bind(
        correlation_id=request.correlation_id,
        request_id=request.request_id,
        plan_id=request.plan_id,
        task_id=request.task_id,
    )
    bound.info("request.received", tool=request.tool, action=request.action)
    return bound


def wrong_target(request: ParsedRequest, tool: str, actions: tuple[str, ...]) -> str | None:
    """Why ``request`` is not for this agent (wrong ``tool``, unknown ``action``), or None."""
    if request.tool != tool:
        return (
            f"This is {tool}, but the request names tool '{request.tool}'. "
            f"Send it to '{request.tool}', or set tool to '{tool}'."
        )
    if request.action not in actions:
        return f"Unknown action '{request.action}'. Use one of: {', '.join(actions)}."
    return None


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


def _has_lone_surrogate(root: object) -> bool:
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def load_json(raw: bytes) -> Any:
    """Strict JSON (RFC 8259) from bytes; raises InvalidArgumentError saying what is wrong."""
    if not raw.strip():
        raise InvalidArgumentError("stdin was empty; send one ActionRequest JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"input is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidArgumentError("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        raise InvalidArgumentError(f"invalid JSON: {exc}") from None
    if _MAYBE_SURROGATE.search(text) and _has_lone_surrogate(value):
        raise InvalidArgumentError("invalid JSON: a string holds a lone UTF-16 surrogate escape")
    return value


def _uuid(obj: dict[str, Any], name: str, errors: list[str], *, required: bool) -> str | None:
    if name not in obj:
        if required:
            errors.append(f"missing field '{name}'")
        return None
    value = obj[name]
    if value is None and not required:
        return None
    if isinstance(value, str) and _UUID.fullmatch(value):
        return str(uuid.UUID(value))
    errors.append(
        f"field '{name}' must be a UUID such as 'f5e93cc3-5d6f-4e9e-88a2-2f10e1bf7a21', "
        f"got {_short(value)}"
    )
    return None


def _string(obj: dict[str, Any], name: str, errors: list[str], *, default: str | None) -> str:
    if name not in obj:
        if default is None:
            errors.append(f"missing field '{name}'")
        return default or ""
    value = obj[name]
    if isinstance(value, str):
        return value
    errors.append(f"field '{name}' must be a string, got {json_type(value)}")
    return ""


def parse_request(raw: bytes) -> ParsedRequest:
    """Validate stdin's bytes as one ``ActionRequest``."""
    obj = load_json(raw)
    if not isinstance(obj, dict):
        raise InvalidArgumentError(f"expected a JSON object, got {json_type(obj)}")
    errors: list[str] = []
    ids = {name: _uuid(obj, name, errors, required=name == "request_id") for name in _ID_FIELDS}
    version = obj.get("api_version")
    if version is not None and (not isinstance(version, str) or version not in API_VERSIONS):
        errors.append(f"field 'api_version' must be \"V1\" or null, got {_short(version)}")
    tool = _string(obj, "tool", errors, default=None)
    action = _string(obj, "action", errors, default=None)
    context = _string(obj, "context", errors, default="")
    payload = obj.get("payload")
    if "payload" not in obj:
        errors.append("missing field 'payload'")
    elif not isinstance(payload, dict):
        errors.append(f"field 'payload' must be a JSON object, got {json_type(payload)}")
    if errors:
        raise InvalidArgumentError("; ".join(errors))
    assert ids["request_id"] is not None and isinstance(payload, dict)
    return ParsedRequest(
        request_id=ids["request_id"],
        api_version=API_VERSIONS[version] if isinstance(version, str) else None,
        tool=tool,
        action=action,
        context=context,
        plan_id=ids["plan_id"],
        task_id=ids["task_id"],
        correlation_id=ids["correlation_id"],
        payload=payload,
    )


def _write_stdout(data: bytes) -> None:
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        # The reader went away (or there is no stdout): not our failure. Point stdout at
        # /dev/null so the interpreter does not complain about it at exit.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def serve_once(
    agent: str,
    handler: Callable[[bytes, JsonLog], Reply],
    failure: Callable[[str], Reply],
    *,
    usage: str = "",
    argv: list[str] | None = None,
) -> int:
    """Run an agent process: stdin's bytes to ``handler``, its reply to stdout; returns 0.

    ``handler`` must answer every input itself; if it is interrupted or fails anyway, the reply
    is ``failure(message)`` (the agent's code 1 shape), and the traceback goes to the log, never
    to stdout; a Ctrl-C is logged as that, without one. ``-h``/``--help`` prints ``usage`` and
    reads nothing; a person at a terminal is told that one JSON request is read from stdin.
    """
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        _write_stdout((usage or f"usage: {agent} < request.json\n").encode("utf-8"))
        return 0
    started = time.perf_counter()
    log = JsonLog(agent, sys.stderr)
    if sys.stdin.isatty():
        sys.stderr.write(
            f"{agent}: reading one JSON request from stdin; end it with Ctrl-D "
            f"(`{agent} --help` says more)\n"
        )
        sys.stderr.flush()
    try:
        answer = handler(sys.stdin.buffer.read(), log)
    except KeyboardInterrupt:
        log.warning("agent.interrupted")
        answer = failure(f"{agent} was interrupted before it answered.")
    except BaseException as exc:
        log.exception("agent.crashed", error=repr(exc))
        answer = failure(f"{agent} stopped before answering: {type(exc).__name__}")
    _write_stdout(answer.to_bytes())
    log.bind(
        correlation_id=answer.correlation_id,
        request_id=answer.request_id,
        plan_id=answer.plan_id,
        task_id=answer.task_id,
    ).info(
        "request.done",
        status=answer.status,
        code=answer.code,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
    return 0
