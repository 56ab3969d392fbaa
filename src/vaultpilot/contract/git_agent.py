"""``git_agent``: one git command per process over the stdin/stdout contract.

Contract (spec ``002_2ce84434b5b511e1.txt``; gaps closed as ``spec/README.md`` says):

* stdin holds one ``ActionRequest``; stdout gets one ``ActionResponse`` line; the exit status is
  0 whenever a reply was written. Logs go to stderr as JSON lines carrying the ``correlation_id``.
  Usage: ``git_agent [--data-dir DIR] < request.json``.
* On start it registers itself in the ``tool_registry`` table of ``memory.db`` in the data
  directory (``--data-dir``, else ``VAULTPILOT_DATA_DIR``, else the per-user folder); the upsert
  is idempotent, and a failure to register is logged, never fatal.
* ``tool`` is ``"git_agent"``; ``action`` is ``git_status``, ``git_diff`` (``files``),
  ``git_log`` (``limit``: a number or a numeric string, default 10), ``git_add`` (``files``, at
  least one) or ``git_commit`` (``message``). The repository is the working directory unless the
  payload names ``repo_path``.
* git runs through its CLI with an argument list (never a shell), without pager or colour, file
  names passed literally after ``--``. File names that look like options or lie outside the
  repository are refused before git runs.
* The vault's rules (``[rules]`` of the config file, for the vault that is the repository) hold
  as for the vault tools: a ``deny`` note is not named in ``git_status``, never shown by
  ``git_diff`` nor staged by ``git_add`` (naming one is refused with the tools' message), and a
  ``private`` note's changes are left out of ``git_diff`` (its text never reaches a model). They
  are left out with git's own pathspec exclusions (``:(exclude,icase,literal)``).
* Success: ``status`` "success", ``code`` 0, ``result`` ``{"output_type": "text", "data": <git's
  stdout>, "metadata": null}``. Any failure: ``status`` "error", ``code`` 1, ``error`` null,
  ``result`` ``{"output_type": "error", "data": <git's stderr, or what is wrong>, "metadata":
  {"exit_code": N}}`` when git ran, ``"metadata": null`` when it did not. An unparseable request
  gets a fresh ``request_id``. Ids and ``api_version`` are echoed.

Hardening: the repository is data, never code. Whoever synced the vault controls its
``.git/config``, ``.gitattributes`` and ``.git/hooks``, and git would run commands named there with
our environment (a ``core.fsmonitor = env > file`` wrote ``OPENAI_API_KEY`` to a file on
``git status``). So every git invocation (``HARDENING`` and ``git_env``):

* starts from a scrubbed environment: ``catalog.BASE_ENV`` (``PATH``, ``HOME``, ``LANG``,
  ``LC_*``, ``TZ``…) and ``catalog.GIT_ENV`` (which of the user's own config files git reads, the
  commit identity), nothing else: no API key, token, ``GIT_DIR``, ``GIT_SSH_COMMAND`` or
  ``GIT_CONFIG_PARAMETERS`` from the caller. ``HOME`` stays: the global config is the user's own
  and carries the commit identity, and the overrides below apply to it too. The system config
  is read as well (it is the administrator's, e.g. Git for Windows' own settings);
* runs ``--no-pager`` with ``GIT_PAGER``/``PAGER`` ``cat`` and ``core.pager=cat`` (``pager.*`` and
  ``core.pager`` never run), ``GIT_EDITOR``/``GIT_SEQUENCE_EDITOR`` ``:`` and ``core.editor`` /
  ``sequence.editor`` ``:`` (git starts no editor; ``git_commit`` passes the message on stdin),
  ``GIT_TERMINAL_PROMPT=0`` and an empty ``core.askPass`` (nothing prompts);
* overrides on the command line, which beats every config file: ``core.fsmonitor=false`` (the
  fsmonitor hook runs on status, diff, add and commit), ``core.hooksPath`` set to the null device
  (no hook runs: pre-commit, commit-msg, post-index-change, reference-transaction…; ``git_commit``
  also passes ``--no-verify``), ``commit.gpgSign=false``, ``tag.gpgSign=false`` and
  ``log.showSignature=false`` (``gpg.program`` and its ssh/x509 siblings never run),
  ``diff.external`` empty and ``--no-ext-diff --no-textconv`` on diff and log
  (``diff.<driver>.command``/``textconv`` named by ``.gitattributes`` never run),
  ``credential.helper`` empty, ``core.sshCommand`` empty, ``protocol.allow=never`` and
  ``GIT_NO_LAZY_FETCH=1`` (no transport at all, so neither ssh, remote helpers nor a partial
  clone's lazy fetch run), ``gc.auto=0`` and ``maintenance.auto=false`` (commit starts no
  background gc), ``submodule.recurse=false`` and ``--ignore-submodules=all`` on status and diff
  (a submodule's own config is not read; its changes are not reported);
* switches off every filter driver (``filter.<name>.clean/smudge/process``, run by git on add,
  status, diff and commit for paths whose ``.gitattributes`` say ``filter=<name>``) and every
  hook defined in the config (``hook.<name>.command``, git 2.54 and later, which
  ``core.hooksPath`` does not reach): the names are read first with
  ``git config -z --name-only --get-regexp`` under the same options, and each filter is
  overridden with empty commands and ``required=false``, each hook with ``enabled=false`` and an
  empty command. A name that cannot be written as ``-c`` (it holds ``=``) makes git_agent refuse
  to run git in that repository.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from vaultpilot.contract.catalog import BASE_ENV, GIT_ENV, git_agent_tool, pick_env
from vaultpilot.contract.jsonlog import JsonLog
from vaultpilot.contract.models import GIT_COMMANDS, GitAdd, GitCommit, GitDiff, GitLog, GitStatus
from vaultpilot.contract.models import describe_errors as _describe
from vaultpilot.contract.scope import VaultScope
from vaultpilot.contract.wire import (
    ParsedRequest,
    Reply,
    Result,
    bind_request,
    parse_request,
    reply,
    serve_once,
    wrong_target,
)
from vaultpilot.errors import (
    ExternalError,
    InvalidArgumentError,
    NotFoundError,
    OSErrorMapping,
    PathRefusedError,
    SetupError,
    VaultpilotError,
    map_os_errors,
)
from vaultpilot.locations import data_root, memory_db_path
from vaultpilot.memory.db import connect
from vaultpilot.memory.registry import upsert_tool

__all__ = [
    "ACTIONS",
    "GIT_TIMEOUT_S",
    "HARDENING",
    "TOOL",
    "GitRun",
    "config_overrides",
    "git_env",
    "handle",
    "main",
    "register",
    "run_git",
]

TOOL = "git_agent"
ACTIONS = tuple(GIT_COMMANDS)
GIT_TIMEOUT_S = 120.0
_USAGE = "usage: git_agent [--data-dir DIR] < request.json"
_HELP = (
    f"{_USAGE}\n\n"
    "Reads one request (JSON) from stdin and writes one reply line to stdout:\n"
    '  {"tool": "git_agent", "action": "git_status" | "git_diff" | "git_log" | "git_add" |\n'
    '   "git_commit", "payload": {"repo_path": "...", "files": [...], "message": "..."}, ...}\n'
    "`vaultpilot agents schema git_agent` prints the full schema.\n"
)

# ``-c`` settings put before every git command; why each is here: see the module docstring.
HARDENING = (
    "color.ui=false",
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    "core.pager=cat",
    "core.editor=:",
    "sequence.editor=:",
    "core.askPass=",
    "core.sshCommand=",
    "credential.helper=",
    "diff.external=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
)
# Fixed values that replace whatever the caller's environment said.
_GIT_FIXED_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_NO_LAZY_FETCH": "1",
}
# For each config section naming commands by a free name: what each such name gets.
_NAMED_COMMANDS = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "hook": (("enabled", "false"), ("command", "")),
}
_LABEL = {"filter": "filter driver", "hook": "hook"}
_NAMED_REGEX = r"^(filter|hook)\."
# The commands during which git may run a filter driver or a hook.
_NEEDS_OVERRIDES = (GitStatus, GitDiff, GitAdd, GitCommit)


@dataclass(frozen=True, slots=True)
class GitRun:
    """How one git invocation ended."""

    exit_code: int
    stdout: str
    stderr: str


def git_env(source: Mapping[str, str]) -> dict[str, str]:
    """The environment git runs with: the allowlisted part of ``source`` and the fixed values."""
    return {**pick_env(source, BASE_ENV + GIT_ENV), **_GIT_FIXED_ENV}


def config_overrides(config_names: str) -> list[str]:
    """``-c`` settings that switch off every filter driver and hook named in ``config_names``.

    ``config_names`` is the output of ``git config -z --name-only --get-regexp
    '^(filter|hook)\\.'``. SetupError for a name that ``-c`` cannot express.
    """
    named: dict[tuple[str, str], None] = {}  # (section, name), in order, once each
    for key in config_names.split("\0"):
        section, _, rest = key.partition(".")
        name, _, _ = rest.rpartition(".")
        if section.lower() in _NAMED_COMMANDS and name:
            named[section.lower(), name] = None
    out: list[str] = []
    for section, name in named:
        if "=" in name:
            raise SetupError(
                f"The repository's git config defines a {_LABEL[section]} named {name!r}, which "
                "git_agent cannot switch off, so it does not run git here; remove or rename "
                f'[{section} "{name}"] in the repository\'s .git/config.'
            )
        out += [
            arg for k, v in _NAMED_COMMANDS[section] for arg in ("-c", f"{section}.{name}.{k}={v}")
        ]
    return out


_GIT_OS_ERRORS: OSErrorMapping = {
    FileNotFoundError: ExternalError(
        "git is not installed or not on PATH; install git to use git_agent."
    ),
    OSError: ExternalError,
}
_GIT_ADVICE = "Check that git is installed and that this user may run it."


def run_git(
    args: Sequence[str],
    *,
    repo: Path,
    env: Mapping[str, str],
    stdin: str | None = None,
    timeout: float = GIT_TIMEOUT_S,
    extra: Sequence[str] = (),
) -> GitRun:
    """Run ``git ARGS`` in ``repo``, hardened; ExternalError if git cannot run or finish.

    ``env`` is what git's environment is picked from (``git_env``); ``extra`` are more ``-c``
    options (``config_overrides``).
    """
    hardening = [arg for setting in HARDENING for arg in ("-c", setting)]
    argv = ["git", "--no-pager", *hardening, *extra, *args]
    try:
        with map_os_errors("git", "run", _GIT_OS_ERRORS, advice=_GIT_ADVICE):
            done = subprocess.run(
                argv,
                cwd=repo,
                input=None if stdin is None else stdin.encode("utf-8"),
                stdin=subprocess.DEVNULL if stdin is None else None,
                capture_output=True,
                timeout=timeout,
                env=git_env(env),
                check=False,
            )
    except subprocess.TimeoutExpired:
        raise ExternalError(
            f"git {next((a for a in args if not a.startswith('-')), '')} did not finish "
            f"within {timeout:g} s and was stopped."
        ) from None
    return GitRun(
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def _check_inside(files: Sequence[str], repo: Path, toplevel: str) -> None:
    """Refuse names outside the repository's work tree (git normalises ``..`` the same way)."""
    top = Path(os.path.realpath(toplevel))
    base = os.path.realpath(repo)
    for name in files:
        lexical = os.path.normpath(os.path.join(base, name))
        # Resolve the folder (a symlinked prefix such as /tmp), not the file: a tracked symlink
        # is a file of the repository wherever it points.
        where = Path(os.path.realpath(os.path.dirname(lexical)), os.path.basename(lexical))
        if where != top and top not in where.parents:
            raise PathRefusedError(
                f"File '{name}' lies outside the repository '{top}'; "
                "name files inside the repository."
            )


def _pathspecs(files: Sequence[str], hidden: Sequence[str], scope: VaultScope) -> list[str]:
    """``-- FILES`` as literal pathspecs (``.`` for none), each hidden entry excluded as the
    rules compare it: any case, as a folder and as a note with or without ``.md``."""
    kept = [f":(literal){name}" for name in files] or [":(literal)."]
    left_out = {
        f":(exclude,icase,literal){scope.in_folder(form)}"
        for entry in hidden
        for bare in [entry.replace("\\", "/").strip().strip("/").removesuffix(".md")]
        if bare
        for form in (bare, f"{bare}.md")
    }
    return ["--", *kept, *sorted(left_out)]


def _check_files(files: Sequence[str], repo: Path, toplevel: str, scope: VaultScope) -> None:
    """Refuse names outside the repository, and names of notes the vault's rules keep from the
    agent (as the vault tools refuse them)."""
    _check_inside(files, repo, toplevel)
    if scope.rules is not None:
        scope.rules.check_read([scope.in_vault(name) for name in files])


def _git_args(command: object, scope: VaultScope | None = None) -> tuple[list[str], str | None]:
    """git's arguments and stdin for a validated command, keeping to the vault's ``rules``:
    with any to keep to, file names go as literal pathspecs beside the exclusions."""
    rules = scope.rules if scope is not None else None
    deny = rules.deny if rules is not None else ()
    unseen = (*deny, *rules.private) if rules is not None else ()
    match command:
        case GitStatus():
            status = ["status", "--ignore-submodules=all"]
            if scope is not None and deny:
                return [*status, *_pathspecs([], deny, scope)], None
            return status, None
        case GitDiff(files=files):
            diff = ["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
            if scope is not None and unseen:
                return [*diff, *_pathspecs(files, unseen, scope)], None
            return ["--literal-pathspecs", *diff, *(["--", *files] if files else [])], None
        case GitLog(limit=limit):
            return ["log", "--no-ext-diff", "--no-textconv", f"--max-count={limit}"], None
        case GitAdd(files=files):
            if scope is not None and deny:
                return ["add", *_pathspecs(files, deny, scope)], None
            return ["--literal-pathspecs", "add", "--", *files], None
        case GitCommit(message=message):
            if deny:  # git's summary would name the files committed, denied ones included
                return ["commit", "--no-verify", "--quiet", "--file=-"], message
            return ["commit", "--no-verify", "--file=-"], message
    raise AssertionError(f"unhandled git command {command!r}")


_QUIET_COMMIT = (
    "Committed what was staged. git's summary of the files is left out because the vault's "
    "rules keep some files from you; git_log shows the commit.\n"
)


def _failure(request: ParsedRequest | None, message: str, exit_code: int | None = None) -> Reply:
    metadata = None if exit_code is None else {"exit_code": exit_code}
    return reply(request, code=1, result=Result("error", message, metadata))


def _locate(repo: Path, env: Mapping[str, str], timeout: float) -> tuple[list[str], str] | GitRun:
    """``pinned``'s options for ``repo`` and the work tree they name, or git's failure to find
    a repository there."""
    found = run_git(["rev-parse", "--absolute-git-dir"], repo=repo, env=env, timeout=timeout)
    if found.exit_code != 0:
        return found
    git_dir = found.stdout.rstrip("\n")
    return pinned(repo, git_dir), str(Path(git_dir).parent)


def pinned(repo: Path, git_dir: str) -> list[str]:
    """``--git-dir`` and ``--work-tree`` for every git run in ``repo``: the repository is the
    real ``.git`` folder git found at or above ``repo`` and its work tree is that folder's
    parent, whatever the repository's config says (``core.worktree`` could point git at another
    folder, whose files would then be read as the repository's). A ``.git`` that is a file or a
    link (``gitdir: /elsewhere``: a worktree, a submodule, or a trap) is refused."""
    found = Path(git_dir)
    top = found.parent
    inside = os.path.realpath(repo)
    is_own = (
        found.name == ".git"
        and not os.path.islink(found)
        and os.path.isdir(found)
        and (inside == os.path.realpath(top) or inside.startswith(os.path.realpath(top) + os.sep))
    )
    if not is_own:
        raise PathRefusedError(
            f"The repository of '{repo}' is kept at '{git_dir}', not in a .git folder of its "
            "own (a .git file or link points elsewhere: a worktree or a submodule); git_agent "
            "works only on a repository whose .git folder is inside it."
        )
    return [f"--git-dir={found}", f"--work-tree={top}"]


def _repo(repo_path: str | None, cwd: Path) -> Path:
    repo = cwd if repo_path is None else cwd / repo_path
    if not os.path.isdir(repo):
        what = "is not a folder" if os.path.lexists(repo) else "does not exist"
        raise NotFoundError(
            f"Repository folder '{repo_path}' {what}; set repo_path to the repository."
        )
    return repo


def handle(
    raw: bytes,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: JsonLog,
    setup_error: str | None = None,
    timeout: float = GIT_TIMEOUT_S,
) -> Reply:
    """Answer one request given as stdin's bytes. Never raises for any input."""
    try:
        request = parse_request(raw)
    except InvalidArgumentError as exc:
        log.warning("request.unparseable", error=str(exc))
        return _failure(None, f"Failed to parse request: {exc}")
    log = bind_request(log, request)
    if setup_error is not None:
        return _failure(request, setup_error)
    wrong = wrong_target(request, TOOL, ACTIONS)
    if wrong is not None:
        return _failure(request, wrong)
    try:
        command = GIT_COMMANDS[request.action].model_validate(
            {**request.payload, "type": request.action}
        )
    except ValidationError as exc:
        return _failure(request, _describe(exc))
    try:
        repo = _repo(getattr(command, "repo_path", None), cwd)
        scope = VaultScope.of(repo)
        located = _locate(repo, env, timeout)
        if isinstance(located, GitRun):  # e.g. not a repository: git's own message and code
            return _failure(request, located.stderr or located.stdout, located.exit_code)
        pin, work_tree = located
        files = getattr(command, "files", None)
        if files:
            _check_files(files, repo, work_tree, scope)
        extra: list[str] = []
        if isinstance(command, _NEEDS_OVERRIDES):
            names = ["config", "-z", "--name-only", "--get-regexp", _NAMED_REGEX]
            found = run_git(names, repo=repo, env=env, timeout=timeout, extra=pin)
            if found.exit_code not in (0, 1):  # 1: none configured
                return _failure(request, found.stderr or found.stdout, found.exit_code)
            extra = config_overrides(found.stdout)
        args, stdin = _git_args(command, scope)
        run = run_git(args, repo=repo, env=env, stdin=stdin, timeout=timeout, extra=[*pin, *extra])
    except VaultpilotError as exc:
        return _failure(request, str(exc))
    except Exception as exc:  # a bug or an unexpected OS failure: still one clean reply
        log.exception("request.failed", error=repr(exc))
        return _failure(
            request, f"{request.action} failed unexpectedly: {type(exc).__name__}: {exc}"
        )
    log.info("git.done", args=args, exit_code=run.exit_code)
    if run.exit_code != 0:
        return _failure(request, run.stderr or run.stdout, run.exit_code)
    quiet = isinstance(command, GitCommit) and "--quiet" in args
    return reply(request, code=0, result=Result("text", _QUIET_COMMIT if quiet else run.stdout))


def register(data_dir: str | None, env: Mapping[str, str], log: JsonLog) -> None:
    """Upsert git_agent into memory.db's tool_registry; a failure is logged, never raised."""
    try:
        path = memory_db_path(data_root(data_dir, env))
        conn = connect(path)
        try:
            changed = upsert_tool(conn, git_agent_tool())
        finally:
            conn.close()
    except (VaultpilotError, sqlite3.Error, OSError) as exc:  # registering is a convenience
        log.warning("registry.failed", error=str(exc))
        return
    log.info("registry.registered", db=str(path), changed=changed)


def _parse_args(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """(data_dir, error): the only option is ``--data-dir DIR``."""
    data_dir: str | None = None
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--data-dir" and rest:
            data_dir = rest.pop(0)
        elif arg.startswith("--data-dir="):
            data_dir = arg.partition("=")[2]
        else:
            return None, f"git_agent was started with a wrong argument {arg!r}; {_USAGE}"
    return data_dir, None


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry: register, read stdin, answer on stdout, exit 0."""
    data_dir, setup_error = _parse_args(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    if setup_error is None:
        register(data_dir, env, JsonLog(TOOL, sys.stderr))
    return serve_once(
        TOOL,
        lambda raw, log: handle(raw, cwd=Path.cwd(), env=env, log=log, setup_error=setup_error),
        lambda message: _failure(None, message),
        usage=_HELP,
        argv=list(sys.argv[1:] if argv is None else argv),
    )


if __name__ == "__main__":
    sys.exit(main())
