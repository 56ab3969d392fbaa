"""Writes from several processes at once: the vault's write lock and compare-before-rename.

Real processes on a real vault and index: tool workers (``run_tool`` on their own context, as
``vaultpilot tool`` does), an "editor" that saves in place the way Obsidian does (truncate, then
write), and a process holding the write lock. Each test is bounded in time and count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import manage, read
from vaultpilot.tools import ToolContext, open_context

# One tool worker: reads a JSON list of tool calls per line, answers one JSON line per call
# (with the conflict copies its answer names, in an error or in a bulk operation's failures).
WORKER = """
import json, re, sys
from pathlib import Path
from vaultpilot.tools import open_context, run_tool
ctx = open_context(Path(sys.argv[1]), Path(sys.argv[2]))
print("ready", flush=True)
for line in sys.stdin:
    for name, args in json.loads(line):
        out = run_tool(ctx, name, args)
        kind = type(out.error).__name__ if out.error is not None else "ok"
        said = json.dumps(out.result) + str(out.error)
        copies = re.findall(r"[^'/]+ \\(conflict [^)]*\\)\\.md", said)
        answer = {"kind": kind, "version": out.result.get("version"), "copies": copies}
        print(json.dumps(answer), flush=True)
"""

# Saves the note in place every ~2 ms for a given time: read, check, truncate-write its own line.
EDITOR = """
import sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
mine, problems = [], []
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    missing = [line for line in mine if line not in text]
    if missing:
        problems.append(f"save {n}: missing {missing[:3]}, ends {text[-30:]!r}")
    line = f"editor line {n:05d}\\n"
    with open(path, "w", encoding="utf-8", newline="") as fh:  # truncate, then write
        fh.write(text + ("" if text.endswith("\\n") else "\\n") + line)
    mine.append(line)
    n += 1
    time.sleep(0.002)
print(n, flush=True)
for p in problems[:20]:
    print(p, flush=True)
"""


class Worker:
    def __init__(self, vault: Path, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(vault), str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ready(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def send(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(calls) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "index.db"


@pytest.fixture
def workers(example_vault: Path, db: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


def _version(vault: Path, db: Path, note: str) -> str:
    ctx = open_context(vault, db)
    try:
        return str(read(ctx, contextType="read_note", target=note)["primaryNote"]["version"])
    finally:
        ctx.conn.close()


def test_twenty_processes_racing_one_version_give_exactly_one_success_per_round(
    example_vault: Path, db: Path, workers: list[Worker]
) -> None:
    """20 processes send update_note with the same expectedVersion, 20 rounds."""
    (example_vault / "Race.md").write_text("# Race\n", encoding="utf-8")
    workers.extend(Worker(example_vault, db) for _ in range(20))
    for worker in workers:
        worker.ready()
    started = time.monotonic()
    for rnd in range(20):
        version = _version(example_vault, db, "Race.md")
        for i, worker in enumerate(workers):
            args = {
                "operation": "update_note",
                "target": "Race.md",
                "content": f"# Race\nround {rnd} won by worker {i}\n",
                "expectedVersion": version,
            }
            worker.send([("obsidian_vault_manager", args)])
        kinds = [worker.answer()["kind"] for worker in workers]
        assert kinds.count("ok") == 1, (rnd, kinds)
        assert set(kinds) <= {"ok", "StaleVersionError", "VaultBusyError"}, kinds
        winner = kinds.index("ok")
        text = (example_vault / "Race.md").read_text(encoding="utf-8")
        assert text == f"# Race\nround {rnd} won by worker {winner}\n"
    assert time.monotonic() - started < 60


def test_an_editor_saving_in_place_loses_no_save_to_appends_and_bulk_tag(
    example_vault: Path, db: Path, workers: list[Worker]
) -> None:
    """An editor saves every ~2 ms for ~10 s while tools append and bulk-tag the note."""
    seconds = 10.0
    note = example_vault / "Edited.md"
    note.write_text("---\ntags: [draft]\n---\n# Edited\n", encoding="utf-8")
    others = ["Edited.md", "Inbox.md"]
    tools = Worker(example_vault, db)
    workers.append(tools)
    tools.ready()
    editor = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(note), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    kinds: dict[str, int] = {}
    reported: set[str] = set()
    n = 0
    while editor.poll() is None and n < 2000:
        tools.send(
            [
                ("obsidian_vault_manager", {
                    "operation": "append_note", "target": "Edited.md", "content": f"tool {n}",
                }),
                ("obsidian_vault_manager", {
                    "operation": "bulk_tag", "targets": others, "metadata": {"tags": [f"t{n}"]},
                }),
            ]
        )  # fmt: skip
        for _ in range(2):
            answer = tools.answer()
            kinds[answer["kind"]] = kinds.get(answer["kind"], 0) + 1
            reported.update(answer["copies"])
        n += 1
    out, _ = editor.communicate(timeout=60)
    saves, *problems = out.splitlines()
    text = note.read_text(encoding="utf-8")
    # When the editor saves into the replaced file after the check and also opens the tool's
    # version before that file could be put back (a stress this test makes likely on a busy
    # machine), the text it saved there is kept beside the note as a conflict copy.
    copies = sorted(example_vault.glob("Edited (conflict *).md"))
    kept = text + "".join(c.read_text(encoding="utf-8") for c in copies)
    lost = [i for i in range(int(saves)) if f"editor line {i:05d}\n" not in kept]
    assert lost == [], f"{len(lost)} of {saves} editor saves lost; tool outcomes {kinds}"
    # Every copy was reported by the tool call that made it.
    assert {c.name for c in copies} <= reported, (copies, reported)
    # The editor saw a line of its own go missing from the note only when a copy kept it.
    assert problems == [] or copies, problems
    assert text.startswith("---\n")
    assert kinds.get("ok", 0) > 0, kinds  # the tools did get writes in, too
    allowed = {"ok", "StaleVersionError", "VaultBusyError", "ConflictKeptError"}
    assert set(kinds) <= allowed, kinds
    assert kinds.get("ConflictKeptError", 0) <= len(copies), kinds


# Appends a line every ~20 ms for a given time, opening the note each time (as `echo >>` does).
APPENDER = """
import sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"script line {n:05d}\\n")
    n += 1
    time.sleep(0.02)
print(n, flush=True)
"""


def test_appends_without_a_version_go_in_while_a_script_appends(
    example_vault: Path, db: Path, workers: list[Worker]
) -> None:
    """A note another program keeps appending to: the tool's appends (no expectedVersion, so
    relative to whatever the note holds) are done again on the new text, not refused."""
    note = example_vault / "Log.md"
    note.write_text("# Log\n", encoding="utf-8")
    tools = Worker(example_vault, db)
    workers.append(tools)
    tools.ready()
    script = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(note), "4"], stdout=subprocess.PIPE, text=True
    )
    kinds: dict[str, int] = {}
    for n in range(80):
        change = {"operation": "append_note", "target": "Log.md", "content": f"tool {n:03d}\n"}
        tools.send([("obsidian_vault_manager", change)])
        kind = tools.answer()["kind"]
        kinds[kind] = kinds.get(kind, 0) + 1
    out, _ = script.communicate(timeout=60)
    text = note.read_text(encoding="utf-8")
    copies = "".join(
        c.read_text(encoding="utf-8") for c in example_vault.glob("Log (conflict *).md")
    )
    assert kinds == {"ok": 80}, kinds
    assert all(f"tool {n:03d}\n" in text for n in range(80))
    lost = [i for i in range(int(out)) if f"script line {i:05d}\n" not in text + copies]
    assert lost == [], f"{len(lost)} of {out.strip()} script lines lost"


HOLDER = """
import sys
from pathlib import Path
from vaultpilot.vault.lock import write_lock
with write_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def lock_held_elsewhere(lock: Path) -> Iterator[None]:
    """Another process holds the vault's write lock (a write in progress) until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)


def test_a_write_lock_held_elsewhere_answers_busy_and_writes_nothing(
    example_vault: Path, db: Path
) -> None:
    with lock_held_elsewhere(db.parent / "write.lock"):
        ctx = open_context(example_vault, db, lock_wait=0.3)
        try:
            started = time.monotonic()
            result = manage(ctx, operation="create_note", target="Busy.md", content="x")
            assert time.monotonic() - started < 5
        finally:
            ctx.conn.close()
        assert result["success"] is False
        assert "Another vaultpilot process is writing" in result["message"]
        assert not (example_vault / "Busy.md").exists()


def test_leftover_temp_files_are_removed_at_the_next_start(example_vault: Path, db: Path) -> None:
    left = [example_vault / ".vaultpilot-0123456789ab.tmp", example_vault / "Projects"]
    left[1] = left[1] / ".vaultpilot-abcdef012345.tmp"
    left[1].parent.mkdir(exist_ok=True)
    for path in left:
        path.write_bytes(b"half a note")
    own = example_vault / ".vaultpilot-notes.tmp"  # not a name we make: kept
    own.write_bytes(b"mine")
    ctx = open_context(example_vault, db)
    try:
        with lock_held_elsewhere(db.parent / "write.lock"):  # a write in progress elsewhere
            ctx.fresh(force=True)
            assert all(path.exists() for path in left)
        ctx.fresh(force=True)
        assert not any(path.exists() for path in left)
        assert own.read_bytes() == b"mine"
    finally:
        ctx.conn.close()


@pytest.mark.parametrize("target", [".obsidian/app.json", ".trash/x.md", ".git/config"])
def test_note_tools_refuse_to_read_protected_folders(ctx: ToolContext, target: str) -> None:
    path = ctx.root / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("private settings\n", encoding="utf-8")
    result = read(ctx, contextType="read_note", target=target)
    assert "note tools do not read it" in result["error"]
    assert "private settings" not in json.dumps(result)
    for op, where in (("create_note", ".hidden/x.md"), ("create_folder", ".hidden/sub")):
        made = manage(ctx, operation=op, target=where, content="x")
        assert "hidden name '.hidden'" in made["message"]
    assert not (ctx.root / ".hidden").exists()
