"""``vaultpilot chat`` in a 60-column terminal (tmux), and what it says when a run is stopped.

At 60 columns the header wraps at a space, a wrapped diff line breaks at a word boundary and
its later rows hang deeper with no sign (a lone "-." never reads as a deleted line), an approval
names each file's line counts once and whole (a binary file says what happens to it instead), and
a path in the list of changed notes breaks after a '/' (never inside a name). Ctrl-C
in the middle of an answer reports the tokens that streamed, estimated, not 0.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from tests.terminal.conftest import Terminal
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

Make = Callable[..., Terminal]
CHAT = ("chat", "--no-embed")
NARROW = 60
FOLDER = "Projects/Quarterly Planning Notes"
NOTE = f"{FOLDER}/Offsite agenda and open questions.md"


def _wait_rows(term: Terminal, text: str, timeout: float = 30.0) -> list[str]:
    end = time.monotonic() + timeout
    rows: list[str] = []
    while time.monotonic() < end:
        rows = term.rows()
        if any(text in row for row in rows):
            return rows
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not on screen within {timeout} s:\n" + "\n".join(rows))


def test_a_narrow_terminal_wraps_at_spaces_signs_and_slashes(terminal: Make) -> None:
    long_line = " ".join(f"item{i:02d}" for i in range(20))  # 139 characters: three rows
    turns: Sequence[ScriptedTurn] = [
        ScriptedTurn(
            tool_calls=[
                ScriptedCall(
                    name="obsidian_vault_manager",
                    arguments={"operation": "delete_note", "target": NOTE,
                               "confirmDestructive": True},
                )
            ]
        ),
        ScriptedTurn(text="Deleted."),
    ]  # fmt: skip
    term = terminal(turns, width=NARROW)
    note = term.vault / NOTE
    note.parent.mkdir(parents=True)
    note.write_text(f"# Offsite\n\n{long_line}\n", encoding="utf-8")
    term.start(*CHAT)
    term.wait_prompt()
    rows = term.rows()
    head = next(i for i, row in enumerate(rows) if row.startswith("vaultpilot chat"))
    # The header is longer than the terminal: it goes on to a second row at a space, so the
    # two rows joined by a space are the header, every word whole.
    joined = rows[head].rstrip() + " " + rows[head + 1].strip()
    header = r"vaultpilot chat · vault \([\d,]+ notes\) · scripted · /help for commands"
    assert re.fullmatch(header, joined), rows[head : head + 2]
    # The toolbar names the keys in a form that fits, whole, not cut at the edge.
    toolbar = next(r for r in reversed(rows) if r.strip()).strip()
    assert toolbar == "Enter send · Alt-Enter newline · @ note · /help", rows[-3:]

    term.type("delete the offsite note")
    term.send("Enter")
    rows = _wait_rows(term, "1 Yes")
    shown = [r for r in rows if "item" in r]
    assert len(shown) >= 3, rows  # the long removed line took several rows
    first, *more = shown
    assert first.startswith("    -item00 ") and len(first) < NARROW, rows  # indent and sign
    for row in more:  # continuations hang deeper, with no sign of their own
        assert row.startswith("      item") and len(row) < NARROW, rows
    # Broken at spaces only: the rows joined by a space are the line, every word whole.
    assert " ".join([first[len("    -") :].strip(), *(r.strip() for r in more)]) == long_line

    term.type("1")
    term.send("Enter")
    rows = _wait_rows(term, "steps · ")
    start = next(i for i, row in enumerate(rows) if row.startswith("Changed 1 note:"))
    listed = rows[start + 1 : start + 3]
    # The path is longer than the terminal: it breaks after a '/', never inside a name.
    assert listed[0].rstrip().endswith("/"), listed
    assert (listed[0].strip() + listed[1].strip()).startswith(NOTE), listed
    assert not note.exists()


def test_ctrl_c_mid_answer_reports_the_tokens_that_streamed(terminal: Make) -> None:
    words = " ".join(f"word{i:03d}" for i in range(200))
    term = terminal([ScriptedTurn(text=words, chunk_delay=0.05)])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("talk for a while")
    term.send("Enter")
    term.wait_for("word020")
    term.send("C-c")
    screen = term.wait_for("step · ", timeout=30)
    line = next(x for x in screen.splitlines() if "step · " in x)
    assert "· 0 tokens" not in line, line
    assert "tokens (estimated)" in line, line
    count = int(line.split(" · ")[1].split()[0].replace(",", ""))
    assert count > 0 and "word199" not in screen


def test_a_narrow_approval_says_each_files_counts_once_and_a_binary_files_fate(
    terminal: Make,
) -> None:
    # "  Trips2/Japan Trip.md → Archive/Trips2/Japan Trip.md  +0 −0" is one column too wide.
    moved = ["Trips2/Japan Trip.md", "Trips2/Kyoto Trip.md"]
    garden = "Projects/Raised Beds"
    turns: Sequence[ScriptedTurn] = [
        ScriptedTurn(
            tool_calls=[
                ScriptedCall(
                    name="obsidian_vault_manager",
                    arguments={"operation": "bulk_move", "targets": moved,
                               "destination": "Archive/Trips2"},
                )
            ]
        ),
        ScriptedTurn(
            tool_calls=[
                ScriptedCall(
                    name="obsidian_vault_manager",
                    arguments={"operation": "delete_folder", "target": garden,
                               "confirmDestructive": True, "recursive": True},
                )
            ]
        ),
        ScriptedTurn(text="Done."),
    ]  # fmt: skip
    term = terminal(turns, width=NARROW)
    for path in moved:
        (term.vault / path).parent.mkdir(parents=True, exist_ok=True)
        (term.vault / path).write_text("# Trip\n", encoding="utf-8")
    (term.vault / garden).mkdir(parents=True)
    (term.vault / garden / "Beds.md").write_text("# Beds\n", encoding="utf-8")
    (term.vault / garden / "beds.png").write_bytes(b"\x89PNG\r\n\x1a\n not text")
    term.start(*CHAT)
    term.wait_prompt()
    term.type("archive the trips, then drop the garden")
    term.send("Enter")
    rows = _wait_rows(term, "1 Yes")
    # Each moved note's head is longer than the row: what happens to it comes once and whole
    # after it (a move that keeps the text says so, never "+0 −0"), never split over two rows.
    card = rows[next(i for i, r in enumerate(rows) if r.startswith("? Move(")) :]
    assert re.findall(r"[+−]\d+", "\n".join(card)) == [], rows
    said = "moved, text unchanged"
    assert sum(r.rstrip().endswith(f"  {said}") or r.strip() == said for r in card) == 2, rows
    assert all(len(r) < NARROW for r in card), card
    term.type("1")
    term.send("Enter")
    screen = term.wait_for("2 Yes", after=len(term.screen()))
    rows = term.rows()
    png = [r for r in rows if "beds.png" in r]
    assert png and png[-1].strip() == f"{garden}/beds.png  binary, deleted", rows
    assert not any("beds.png" in r and "+0" in r for r in rows), screen
    term.type("1")
    term.send("Enter")
    rows = _wait_rows(term, "steps · ")
    assert any(r.startswith("Changed 3 notes and 1 file:") for r in rows), rows
    assert not (term.vault / garden).exists()
