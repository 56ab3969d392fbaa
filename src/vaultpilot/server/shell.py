"""ExecuteShell: run one command in a vault's root, bounded in time, output and environment.

Contract:

* ``plan_command(policy, command)`` checks the request against the ``ShellPolicy`` and returns a
  ``ShellPlan``. It refuses (``SetupError``) when shell execution is off (the default). A string
  is split like a POSIX shell (``shlex``) into an argument list and run without a shell; with
  ``allow_shell`` it runs through ``/bin/sh -c`` instead. A list is the argument list itself.
* ``ShellPlan.allowlisted`` is true when the argument list matches one of the policy's
  allowlist entries as a whole (``allowlist_match``). Each entry is split like the command and
  compared argument by argument: a word matches itself only; ``*`` matches exactly one argument
  that is not an option (does not start with ``-``); ``**``, only as the last word, matches any
  further arguments, options included. So ``"git status"`` allows exactly ``git status`` (not
  ``git status --porcelain``, not ``git push``), ``"ls"`` allows ``ls`` but not ``ls /etc``,
  ``"git log --oneline -n *"`` allows ``git log --oneline -n 5`` but not
  ``git log --oneline -n --output=x``. Options are never matched by ``*`` because an option
  can change what a harmless command does (``git log --output=FILE`` writes a file); ``**``
  matches them, so it belongs only after a program whose every option is harmless. Neither
  matches an argument naming a path outside the vault (absolute, ``~``, with ``..``, or a link
  in the vault leading out of it; as itself, as an ``=value``, or attached to a short option
  as in ``-f/etc/passwd``): ``"cat *"`` allows ``cat Notes/a.md``, not ``cat /etc/passwd``, nor
  ``cat ../data/server.key``, nor ``cat link.md`` when link.md leads to a file outside; nor an
  argument longer than ``MAX_MATCHED_ARG`` (4096) characters. A command run through
  ``/bin/sh`` is never allowlisted, since a shell line can do anything after its first word.
  Commands that are not allowlisted must be approved (the caller's business: see
  ``approvals``).
* ``run_plan(plan, cwd=..., policy=...)`` runs it in its own process group with a scrubbed
  environment (``scrubbed_env``: an allowlist of ``PATH``, ``HOME``, locale, ``TZ``, ``USER``,
  ``LOGNAME``, ``TMPDIR`` and the names the policy lists; nothing else passes, and the policy
  refuses to list a name that looks like a secret, see ``settings``), stdin closed, stdout and
  stderr each capped at
  ``max_output`` bytes (the rest is read and dropped, so the child never blocks), and kills the
  whole group at ``timeout`` (``ExitCode`` 124, ``TimedOut``). A program that cannot be found
  or started is a ``NotFoundError``/``ExternalError`` with its name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultpilot.errors import (
    ExternalError,
    InvalidArgumentError,
    NotFoundError,
    SetupError,
    map_os_errors,
)
from vaultpilot.server.settings import ShellPolicy

__all__ = [
    "MAX_MATCHED_ARG",
    "ShellOutcome",
    "ShellPlan",
    "allowlist_match",
    "plan_command",
    "run_plan",
    "scrubbed_env",
]

_BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "TMPDIR")
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_CHUNK = 65_536
TIMEOUT_EXIT = 124
_GRACE_S = 2.0
_START_ADVICE = "Check that it is a program this user may run, or give another command."
# A longer argument is never matched by ``*`` or ``**`` (it must be approved). 4096 is Linux's
# PATH_MAX: the kernel refuses a longer path, and nothing an allowlist entry is written for (a
# file in the vault, a count, a branch) comes near it. It also bounds the work of checking one
# argument, done for every entry while a request waits.
MAX_MATCHED_ARG = 4096
# The longest name of one file or folder (NAME_MAX, in bytes, so never fewer characters): a
# longer value without a "/" cannot be an entry in the vault, so it is no link to follow.
_NAME_MAX = 255


@dataclass(frozen=True, slots=True)
class ShellPlan:
    argv: tuple[str, ...]
    display: str
    via_shell: bool
    allowlisted: bool


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"Command {text!r} cannot be split into arguments ({exc}); check its quotes."
        ) from None


def _spelled_outside(value: str) -> bool:
    """Whether ``value`` names a path outside by its spelling: absolute, from a home folder,
    or going up with ``..``."""
    return value.startswith(("/", "~")) or ".." in value.replace("\\", "/").split("/")


def _attached_spelled_outside(option: str) -> bool:
    """Whether a value a short option may carry attached (any suffix after its first letter:
    ``-f/etc/passwd``, ``-vf/etc/passwd``, ``-f..``) is spelled outside. In one pass: a suffix
    starts with ``/`` or ``~`` when one is in the rest, and holds a ``..`` part when a part of
    the rest ends with ``..``."""
    rest = option[2:]
    return "/" in rest or "~" in rest or any(p.endswith("..") for p in rest.split("\\"))


def _escapes(root: Path, inside: Path, value: str) -> bool:
    """Whether ``value``, read as a path under ``root`` (resolved: ``inside``), resolves outside
    it through a link, whether the path exists yet or is still to be written."""
    try:
        return not (root / value).resolve().is_relative_to(inside)
    except (OSError, RuntimeError, ValueError):
        return True  # a path that cannot be followed is not matched by a pattern


def _leaves_the_vault(arg: str, root: Path | None) -> bool:
    """Whether an argument names a path outside the folder the command runs in: absolute, from
    a home folder, going up with ``..``, or a link in ``root`` that leads out of it; as itself,
    as its ``=value``, or as a value attached to a short option. Spellings are checked first:
    they need no look-up.

    Its cost is linear in the argument's length: a short option's suffixes are spelled outside
    when ``_attached_spelled_outside`` says so, and otherwise hold no ``/``, so each is at most
    one name in ``root``; only the last ``_NAME_MAX`` can be one (a longer name does not exist),
    and a name leads out only when it is a link."""
    values = [v for v in (arg, arg.partition("=")[2]) if v]
    short = arg.startswith("-") and not arg.startswith("--")
    if any(_spelled_outside(v) for v in values) or (short and _attached_spelled_outside(arg)):
        return True
    if root is None:
        return False
    try:
        inside = root.resolve()
    except (OSError, RuntimeError):
        return True
    if any(_escapes(root, inside, v) for v in values):
        return True
    if short:
        folder = os.fspath(root)  # os.path, not pathlib: this runs up to 255 times an argument
        for k in range(max(2, len(arg) - _NAME_MAX), len(arg)):
            if os.path.islink(os.path.join(folder, arg[k:])) and _escapes(root, inside, arg[k:]):
                return True
    return False


def _matchable(arg: str, root: Path | None) -> bool:
    """Whether ``*`` or ``**`` may match ``arg`` (besides ``*``'s rule on options)."""
    return len(arg) <= MAX_MATCHED_ARG and not _leaves_the_vault(arg, root)


def allowlist_match(entry: str, argv: Sequence[str], root: Path | None = None) -> bool:
    """Whether ``argv``, run in ``root``, matches the allowlist ``entry`` as a whole (see the
    module)."""
    pattern = _split(entry)
    for i, word in enumerate(pattern):
        if word == "**" and i == len(pattern) - 1:
            return len(argv) >= i and all(_matchable(a, root) for a in argv[i:])
        if i >= len(argv):
            return False
        arg = argv[i]
        if word == "*":
            if arg.startswith("-") or not _matchable(arg, root):
                return False
        elif arg != word:
            return False
    return len(argv) == len(pattern)


def plan_command(
    policy: ShellPolicy, command: str | Sequence[str], root: Path | None = None
) -> ShellPlan:
    """Check ``command``, to run in ``root``, against ``policy`` (see the module)."""
    if not policy.enabled:
        raise SetupError(
            "ExecuteShell is off on this server. To allow it, set enabled = true under "
            "[server.shell] in the config file (commands then need approval unless allowlisted)."
        )
    if isinstance(command, str):
        if not command.strip():
            raise InvalidArgumentError("Command is empty; give the command to run, e.g. 'ls'.")
        if "\x00" in command:
            raise InvalidArgumentError("Command contains a NUL character.")
        if policy.allow_shell:
            return ShellPlan(("/bin/sh", "-c", command), command, True, False)
        argv = _split(command)
    else:
        argv = list(command)
        if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
            raise InvalidArgumentError(
                "Command as a list must hold the program and its arguments as strings, "
                "e.g. ['git', 'status']."
            )
        if any("\x00" in a for a in argv):
            raise InvalidArgumentError("Command contains a NUL character.")
    allowed = any(allowlist_match(entry, argv, root) for entry in policy.allowlist)
    return ShellPlan(tuple(argv), shlex.join(argv), False, allowed)


def scrubbed_env(policy: ShellPolicy, source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the allowlisted variables only (see the module)."""
    source = os.environ if source is None else source
    env: dict[str, str] = {}
    for name in (*_BASE_ENV, *policy.env):
        if name in source:
            env[name] = source[name]
    env.setdefault("PATH", _DEFAULT_PATH)
    env["TERM"] = "dumb"
    return env


class _Sink:
    """What was kept of one output stream, filled as it is read (so a timeout keeps it)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.truncated = False

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _drain(stream: asyncio.StreamReader | None, sink: _Sink, cap: int) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_CHUNK):
        room = cap - len(sink.data)
        if room > 0:
            sink.data += chunk[:room]
        if len(chunk) > room:
            sink.truncated = True


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_plan(plan: ShellPlan, *, cwd: Path, policy: ShellPolicy) -> ShellOutcome:
    """Run a checked command (see the module); never leaves a child behind."""
    program = plan.argv[0]
    missing = NotFoundError(
        f"Program '{program}' was not found. Give a program on PATH or its full path."
    )
    with map_os_errors(
        program, "start", {FileNotFoundError: missing, OSError: ExternalError}, advice=_START_ADVICE
    ):
        proc = await asyncio.create_subprocess_exec(
            *plan.argv,
            cwd=cwd,
            env=scrubbed_env(policy),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    out, err = _Sink(), _Sink()
    reading = asyncio.ensure_future(
        asyncio.gather(
            _drain(proc.stdout, out, policy.max_output),
            _drain(proc.stderr, err, policy.max_output),
            proc.wait(),
        )
    )
    timed_out = False
    try:
        done, _ = await asyncio.wait({reading}, timeout=policy.timeout)
        if not done:
            timed_out = proc.returncode is None  # else only a left-behind child held a pipe
            _kill_group(proc)
            # The pipes close when the group dies; a child that left the group may keep them
            # open, so stop reading after a grace period.
            await asyncio.wait({reading}, timeout=_GRACE_S)
    finally:
        _kill_group(proc)  # anything the command left running in its group goes too
        if not reading.done():
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                await asyncio.wait_for(proc.wait(), _GRACE_S)
    code = TIMEOUT_EXIT if timed_out else (proc.returncode if proc.returncode is not None else -1)
    return ShellOutcome(out.text(), err.text(), code, timed_out, out.truncated or err.truncated)
