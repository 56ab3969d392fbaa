"""``vaultpilot chat`` in a real terminal (tmux, 120 columns) against the scripted model server.

What a person sees: the answer streams (text is on screen before the model's turn ends), the
prompt edits with arrow keys and remembers earlier sessions, ``/help`` is answered without the
model, an approval shows the lines a change removes, "don't ask again" skips the next identical
approval, and Ctrl-C at the prompt clears the line instead of quitting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tests.terminal.conftest import Terminal
from vaultpilot.agent.testing import ScriptedCall, ScriptedTurn

Make = Callable[[Sequence[ScriptedTurn]], Terminal]
CHAT = ("chat", "--no-embed")


def _delete(target: str) -> ScriptedCall:
    return ScriptedCall(
        name="obsidian_vault_manager",
        arguments={"operation": "delete_note", "target": target, "confirmDestructive": True},
    )


def test_the_answer_is_on_screen_before_the_turn_ends(terminal: Make) -> None:
    words = [f"word{i:02d}" for i in range(30)]
    term = terminal([ScriptedTurn(text="Streaming " + " ".join(words) + " end.", chunk_delay=0.2)])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("say something")
    term.send("Enter")
    screen = term.wait_for("word03")
    assert not term.server.finished, "the model's turn had already ended"
    assert "word29" not in screen and "end." not in screen
    screen = term.wait_for("1 step · ", timeout=30)
    assert "word29 end." in screen
    # wrapped at word boundaries: no word is cut across two lines
    for line in screen.splitlines():
        assert len(line) <= 120
        assert not line.rstrip().endswith("wor")


def test_arrow_keys_edit_and_history_survives_a_restart(terminal: Make) -> None:
    term = terminal([])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("/hlp")
    term.send("Left", "Left")
    term.type("e")
    term.send("Enter")
    screen = term.wait_for("/undo")  # "/help" was sent: the cursor moved, no escape codes typed
    assert "^[[D" not in screen
    term.type("/exit")
    term.send("Enter")
    deadline = time.monotonic() + 10
    while not term.shell_is_back() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert term.shell_is_back(), term.screen()
    term.start(*CHAT)  # a new session: the history file is read again
    term.wait_prompt()
    term.send("Up")
    term.wait_for("› /exit")
    term.send("Up")
    screen = term.wait_for("› /help")
    assert "^[[A" not in screen


def test_help_is_answered_without_the_model(terminal: Make) -> None:
    term = terminal([ScriptedTurn(text="unused")])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("/help")
    term.send("Enter")
    screen = term.wait_for("/history")
    for command in ("/new", "/undo", "/mode", "/exit"):
        assert command in screen
    term.wait_prompt(2)
    assert term.server.requests == [], "the model was asked"


def test_an_approval_shows_the_removed_lines_and_a_refusal_is_the_users_choice(
    terminal: Make,
) -> None:
    term = terminal([ScriptedTurn(tool_calls=[_delete("test.md")]), ScriptedTurn(text="Kept it.")])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("delete test.md")
    term.send("Enter")
    screen = term.wait_for("3 No, and tell it why")
    assert "-The second line." in screen and "Delete(test.md)" in screen
    term.type("3")
    term.send("Enter")
    term.wait_for("Tell the agent why")
    term.type("I still need it")
    term.send("Enter")
    screen = term.wait_for("Kept it.")
    assert "declined by you" in screen
    assert "error" not in screen.split("delete test.md", 1)[1].lower()
    assert (term.vault / "test.md").exists()
    refusal = term.server.requests[1].body["messages"][-1]["content"]
    assert "I still need it" in refusal


def test_dont_ask_again_skips_the_next_identical_approval(terminal: Make) -> None:
    term = terminal(
        [
            ScriptedTurn(tool_calls=[_delete("test.md")]),
            ScriptedTurn(tool_calls=[_delete("Inbox.md")]),
            ScriptedTurn(text="Both are in the trash."),
        ]
    )
    term.start(*CHAT)
    term.wait_prompt()
    term.type("delete two notes")
    term.send("Enter")
    term.wait_for("3 No, and tell it why")
    term.type("2")
    term.send("Enter")
    screen = term.wait_for("Both are in the trash.")
    assert screen.count("3 No, and tell it why") == 1, screen
    assert "Delete(Inbox.md)" in screen
    assert not (term.vault / "test.md").exists()
    assert not (term.vault / "Inbox.md").exists()
    assert "Undo all of them with: /undo" in screen


def test_ctrl_c_at_the_prompt_clears_the_line_and_does_not_quit(terminal: Make) -> None:
    term = terminal([])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("half a thought")
    term.send("C-c")
    time.sleep(0.5)
    term.send("C-c")  # on the now empty line: a hint, not an exit
    term.wait_for("Press Ctrl-C again to quit")
    assert not term.shell_is_back()
    term.type("/help")
    term.send("Enter")
    screen = term.wait_for("/history")
    assert "half a thought" not in screen.split("› ")[-1]
    assert not term.shell_is_back()


def test_a_spinner_says_how_long_the_model_has_been_thinking(terminal: Make) -> None:
    term = terminal([ScriptedTurn(text="Finally.", delay=2.5)])
    term.start(*CHAT)
    term.wait_prompt()
    term.type("slow one")
    term.send("Enter")
    screen = term.wait_for("Thinking… 1s")
    assert "Finally." not in screen
    screen = term.wait_for("Finally.")
    assert "Thinking…" not in screen  # the spinner line is gone once text arrives


def test_continue_replays_the_transcript(terminal: Make) -> None:
    term = terminal(
        [
            ScriptedTurn(
                tool_calls=[
                    ScriptedCall(
                        name="obsidian_get_context",
                        arguments={"contextType": "read_note", "target": "test.md"},
                    )
                ]
            ),
            ScriptedTurn(text="It says: the second line."),
        ]
    )
    term.start(*CHAT)
    term.wait_prompt()
    term.type("what is in test.md?")
    term.send("Enter")
    term.wait_for("2 steps · ", timeout=30)
    term.type("/exit")
    term.send("Enter")
    deadline = time.monotonic() + 10
    while not term.shell_is_back() and time.monotonic() < deadline:
        time.sleep(0.1)
    term.start("chat", "--no-embed", "--continue")
    term.wait_for("resuming conversation")
    screen = term.wait_for("────")  # the end of the replayed transcript
    after = screen.split("resuming conversation", 1)[1]
    assert "› what is in test.md?" in after
    assert "Read(test.md)" in after
    assert "It says: the second line." in after


def test_keys_typed_during_a_run_are_not_echoed_nor_sent(terminal: Make) -> None:
    term = terminal(
        [ScriptedTurn(text="Slowly " + " ".join(f"w{i}" for i in range(12)), chunk_delay=0.15)]
    )
    term.start(*CHAT)
    term.wait_prompt()
    term.type("first question")
    term.send("Enter")
    term.wait_for("w1")
    term.type("yyy")  # a person who thinks an approval is waiting
    term.send("Enter")
    term.type("zzz")
    screen = term.wait_for("(what you typed during the run was not sent; type it again)")
    assert "yyy" not in screen and "zzz" not in screen  # never drawn into the answer
    term.wait_prompt(2)
    time.sleep(1.0)
    assert len(term.server.requests) == 1  # the typed "yyy" + Enter did not start a run
