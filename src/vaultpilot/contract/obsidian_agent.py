"""``obsidian_agent``: one note operation per process over the stdin/stdout contract.

Contract (spec ``000_e03d1b2efb812368.txt``; gaps closed as ``spec/README.md`` says):

* stdin holds one ``ActionRequest``; stdout gets one ``ActionResponse`` line; the exit status is
  0 whenever a reply was written (the reply carries the outcome). Logs go to stderr as JSON lines
  carrying the ``correlation_id``. Takes no arguments.
* ``tool`` is ``"obsidian_agent"``; ``action`` is ``create_note``, ``read_note`` or
  ``update_note``; ``payload`` names ``vault_path``, ``note_name`` and, to write, ``content``.
* ``note_name`` may name a subfolder (``Projects/Plan``) and may end in ``.md``; otherwise ``.md``
  is added. It never leaves the vault (``..``, absolute paths, symlinks out are refused), and
  ``.obsidian/``, ``.git/`` and ``.trash/`` are never read nor written; names that are hidden
  (``.x``) or not portable (trailing dot or space, ``CON``, ``<>:"|?*``) are never created.
* Writes hold the vault's write lock, the same file the server and ``vaultpilot tool`` use (in
  the vault's data folder: ``VAULTPILOT_DATA_DIR`` or the per-user default), waiting at most
  ``VAULTPILOT_LOCK_WAIT`` seconds (default 10) before answering code 3 "Another vaultpilot
  process is writing to this vault; nothing was written".
* ``create_note`` never overwrites (missing folders are created); ``update_note`` only replaces an
  existing note, keeping its line endings and byte-order mark. ``read_note`` returns the note's
  text with ``\\n`` line endings and without a byte-order mark.
* The vault's rules (``[rules]`` of the config file, as for every entry point) hold: a ``deny``
  note is neither read nor written, a ``private`` note reads as the tools' placeholder and is not
  written, a ``read_only`` one is not written, and ``mode = "read-only"`` refuses every write
  (code 3, the tools' message). Every write is recorded in the change journal (memory.db in the
  data folder, source ``obsidian_agent``), so ``vaultpilot undo`` restores it; a write the
  journal cannot record is put back and answered as an error.
* Success: ``status`` "success", ``code`` 0, ``result`` ``{"output_type": "text", "data": …,
  "metadata": null}``; ``data`` is "Note 'X' created successfully." / "… updated successfully." /
  the note's text. ``request_id``, ``api_version``, ``plan_id``, ``task_id`` and
  ``correlation_id`` are echoed.
* Errors: ``status`` "error", ``result`` null, ``error`` says what went wrong and what to do:
  code 1 the request could not be parsed ("Failed to parse request: …"; a fresh ``request_id``,
  other ids null); code 2 the request is invalid (wrong ``tool``, unknown ``action``, a payload
  field missing, empty or not a string: "Missing 'vault_path' in parameters"); code 3 the vault
  operation failed (no such vault or note, note exists, path refused, I/O).

Only the standard library, ``wire``, ``jsonlog``, ``vault.files``, ``vault.lock`` and ``configfile``
are imported up front, and ``locations`` and the journal to write: no pydantic, typer or rich,
so a round trip stays far below its 150 ms budget (``bench/bench_contract.py``). The rules'
validation (pydantic) is imported only when the config file has a ``[rules]`` table.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vaultpilot.contract.jsonlog import JsonLog
from vaultpilot.contract.wire import (
    ParsedRequest,
    Reply,
    Result,
    bind_request,
    json_type,
    parse_request,
    reply,
    serve_once,
    wrong_target,
)
from vaultpilot.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    VaultpilotError,
)
from vaultpilot.vault import files
from vaultpilot.vault.lock import DEFAULT_WAIT, LOCK_NAME, write_lock

if TYPE_CHECKING:
    from vaultpilot.contract.scope import VaultScope
    from vaultpilot.memory import journal

__all__ = ["ACTIONS", "TOOL", "NoteCommand", "handle", "main", "parse_command"]

TOOL = "obsidian_agent"
ACTIONS = ("create_note", "read_note", "update_note")
LOCK_WAIT_ENV = "VAULTPILOT_LOCK_WAIT"


@dataclass(frozen=True, slots=True)
class NoteCommand:
    """One validated note operation; ``content`` is None for ``read_note``."""

    action: str
    vault_path: str
    note_name: str
    content: str | None


def _field(payload: dict[str, object], name: str, *, allow_empty: bool = False) -> str:
    if name not in payload:
        raise InvalidArgumentError(f"Missing '{name}' in parameters")
    value = payload[name]
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"Invalid '{name}' in parameters: expected a string, got {json_type(value)}"
        )
    if not value and not allow_empty:
        raise InvalidArgumentError(f"Invalid '{name}' in parameters: must not be empty")
    return value


def parse_command(request: ParsedRequest) -> NoteCommand:
    """The note command a request asks for; InvalidArgumentError (code 2) says what is wrong."""
    wrong = wrong_target(request, TOOL, ACTIONS)
    if wrong is not None:
        raise InvalidArgumentError(wrong)
    payload = request.payload
    vault_path = _field(payload, "vault_path")
    note_name = _field(payload, "note_name")
    content = None
    if request.action != "read_note":
        content = _field(payload, "content", allow_empty=True)
    return NoteCommand(request.action, vault_path, note_name, content)


def _note_rel(note_name: str) -> str:
    canon = files.normalize_rel_path(note_name)  # PathRefusedError for anything leaving the vault
    if not canon or note_name.endswith("/"):
        raise InvalidArgumentError(
            f"'{note_name}' names a folder, not a note; name a note such as 'Projects/Plan'."
        )
    return canon if canon.lower().endswith(".md") else canon + ".md"


def _vault_root(vault_path: str, cwd: Path) -> Path:
    root = cwd / vault_path
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.lexists(root) else "does not exist"
        raise NotFoundError(f"Vault folder '{vault_path}' {what}; set vault_path to the vault.")
    return root


def execute(command: NoteCommand, *, cwd: Path) -> str:
    """Carry out a note command; returns ``data``. VaultpilotError means code 3."""
    root = _vault_root(command.vault_path, cwd)
    rel = _note_rel(command.note_name)
    name = command.note_name
    from vaultpilot.contract.scope import VaultScope

    # A vault_path inside a vault keeps to that vault's rules, lock and journal, with the note
    # named as that vault knows it.
    scope = VaultScope.of(root)
    in_vault, rules = scope.in_vault(rel), scope.rules
    if command.action == "read_note":
        if rules is not None:
            rules.check_read([in_vault])
        try:
            text = files.read_note(root, rel).text
        except NotFoundError:
            raise NotFoundError(
                f"Note '{name}' does not exist in the vault ('{rel}' not found)."
            ) from None
        if rules is not None and rules.private_note(in_vault):
            from vaultpilot.tools.rules import PRIVATE_TEXT

            return PRIVATE_TEXT
        return text
    files.confine(root, rel, write=True)  # refuse escapes and protected folders before anything
    if rules is not None:
        rules.check_write(command.action, [in_vault])
    assert command.content is not None
    from vaultpilot.locations import data_root, memory_db_path, vault_data_dir
    from vaultpilot.memory import journal

    data = data_root()
    book = journal.Journal(memory_db_path(data), source=TOOL)
    try:
        with (
            write_lock(vault_data_dir(scope.vault, data) / LOCK_NAME, timeout=_lock_wait()),
            journal.recording(
                book, str(scope.vault), command.action, revert=_put_back(scope.vault)
            ),
        ):
            return _write(command, root, rel, book, scope)
    finally:
        book.close()


def _put_back(root: Path) -> Callable[[Sequence[journal.FileChange]], list[str]]:
    def revert(changes: Sequence[journal.FileChange]) -> list[str]:
        from vaultpilot.memory.undo import revert as undo_now

        return undo_now(root, changes).skipped

    return revert


def _lock_wait() -> float:
    raw = os.environ.get(LOCK_WAIT_ENV, "")
    try:
        return min(max(float(raw), 0.0), 600.0) if raw else DEFAULT_WAIT
    except ValueError:
        return DEFAULT_WAIT


def _write(
    command: NoteCommand, root: Path, rel: str, book: journal.Journal, scope: VaultScope
) -> str:
    """Carry out a write; its changes go to the journal as the vault names them."""
    from vaultpilot.memory import journal  # the module, at run time

    name = command.note_name
    assert command.content is not None
    if command.action == "create_note":
        made = files.missing_parents(root, rel)
        try:
            note = files.create_note(root, rel, command.content)
        except AlreadyExistsError:
            if os.path.lexists(root / rel):
                raise AlreadyExistsError(
                    f"Note '{name}' already exists; use update_note to change it."
                ) from None
            raise
        for folder in made:
            journal.note(book, journal.FileChange("mkdir", None, scope.in_vault(folder)))
        after = files.encode_note(note.text, note.fmt)
        journal.note(book, journal.FileChange("create", None, scope.in_vault(rel), None, after))
        return f"Note '{name}' created successfully."
    try:
        current = files.read_note(root, rel)
    except NotFoundError:
        raise NotFoundError(
            f"Note '{name}' does not exist ('{rel}' not found); use create_note to create it."
        ) from None
    files.replace_note(root, rel, command.content, current.fmt, base=current)
    before = files.encode_note(current.text, current.fmt)
    after = files.encode_note(command.content, current.fmt)
    path = scope.in_vault(rel)
    journal.note(book, journal.FileChange("update", path, path, before, after))
    return f"Note '{name}' updated successfully."


def handle(raw: bytes, *, cwd: Path, log: JsonLog) -> Reply:
    """Answer one request given as stdin's bytes. Never raises for any input."""
    try:
        request = parse_request(raw)
    except InvalidArgumentError as exc:
        log.warning("request.unparseable", error=str(exc))
        return reply(None, code=1, error=f"Failed to parse request: {exc}")
    log = bind_request(log, request)
    try:
        command = parse_command(request)
    except InvalidArgumentError as exc:
        return reply(request, code=2, error=str(exc))
    try:
        data = execute(command, cwd=cwd)
    except VaultpilotError as exc:
        return reply(request, code=3, error=str(exc))
    except Exception as exc:  # a bug or an unexpected OS failure: still one clean reply
        log.exception("request.failed", error=repr(exc))
        return reply(
            request,
            code=3,
            error=f"{command.action} failed unexpectedly: {type(exc).__name__}: {exc}",
        )
    return reply(request, code=0, result=Result("text", data))


_USAGE = (
    "usage: obsidian_agent < request.json\n\n"
    "Reads one ActionRequest (JSON) from stdin and writes one ActionResponse line to stdout:\n"
    '  {"tool": "obsidian_agent", "action": "read_note" | "create_note" | "update_note",\n'
    '   "payload": {"vault_path": "...", "note_name": "...", "content": "..."}, ...}\n'
    "Takes no arguments. `vaultpilot agents schema obsidian_agent` prints the full schema.\n"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry: read stdin, answer on stdout, exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra = [a for a in args if a not in ("-h", "--help")]
    if extra:
        wrong = f"obsidian_agent takes no arguments (got {extra[0]!r}); {_USAGE.splitlines()[0]}"
        return serve_once(
            TOOL,
            lambda raw, log: reply(None, code=2, error=wrong),
            lambda message: reply(None, code=1, error=message),
            usage=_USAGE,
            argv=args,
        )
    return serve_once(
        TOOL,
        lambda raw, log: handle(raw, cwd=Path.cwd(), log=log),
        lambda message: reply(None, code=1, error=message),
        usage=_USAGE,
        argv=args,
    )


if __name__ == "__main__":
    sys.exit(main())
