"""The words a write removes (``approvals.dropped_words``) and when they ask (``drops_words``):
pure functions over a dry run's diffs."""

from __future__ import annotations

from vaultpilot.agent.approvals import (
    DROP_ASK_WORDS,
    ApprovalPolicy,
    dropped_words,
    drops_words,
)
from vaultpilot.tools.diffs import unified

MANAGER = "obsidian_vault_manager"


def _lost(before: str, after: str) -> dict[str, int]:
    return dropped_words([unified("N.md", "N.md", before, after).as_json()])


def test_removed_words_are_counted_and_moved_or_reworded_ones_are_not() -> None:
    text = "one two three\nfour five six\n"
    assert _lost(text, "") == {"N.md": 6}
    assert _lost(text, "four five six\none two three\n") == {"N.md": 1}  # moved: an edge
    assert _lost(text, "One, two; THREE!\nfour five six\n") == {"N.md": 0}  # reworded
    assert _lost(text, "one two\nfour five six\n") == {"N.md": 2}  # a word, two pairs
    # A removed line that reads like a diff header is still a removed line.
    assert _lost("--- a/x\n+++ b/y\nkeep\n", "keep\n") == {"N.md": 4}


def test_the_same_words_scrambled_or_hidden_in_a_comment_are_lost() -> None:
    text = "".join(f"Step {i}: ask who owns item {i} before the review.\n" for i in range(5))
    words = text.split()
    scrambled = " ".join(sorted(words)) + "\n"
    assert _lost(text, scrambled)["N.md"] >= len(words) - 5
    assert _lost(text, f"<!--\n{text}-->\n") == {"N.md": len(words)}
    assert _lost(text, f"%%\n{text}%%\n") == {"N.md": len(words)}
    # An unclosed comment hides more than the diff shows: at least enough to ask.
    assert _lost(text, f"<!--\n{text}")["N.md"] >= DROP_ASK_WORDS
    long = text * 4  # the comment opens far from where the diff ends
    assert _lost(long, f"<!--\n{long}")["N.md"] >= DROP_ASK_WORDS
    # A moved paragraph costs only its edges; a reworded phrase only its neighbours.
    first, rest = text.splitlines(keepends=True)[0], "".join(text.splitlines(keepends=True)[1:])
    assert _lost(text, rest + first)["N.md"] <= 2
    assert _lost(text, text.replace("before the review", "ahead of the review"))["N.md"] <= 10


def test_opening_or_closing_a_comment_far_from_its_other_end_asks() -> None:
    # The other end lies outside the hunk: what it now hides (or shows) is not in the diff.
    body = "".join(f"Paragraph {i} of the plan says what to do next.\n\n" for i in range(30))
    for mark in ("%%", "-->"):
        opening = "%%" if mark == "%%" else "<!--"
        note = f"{opening}\n" + "a hidden line\n" * 10 + f"{mark}\n" + body
        assert _lost(note, note.replace(f"{mark}\n", "", 1))["N.md"] >= DROP_ASK_WORDS
        assert _lost(note, note.replace(f"{mark}\n", "word\n", 1))["N.md"] >= DROP_ASK_WORDS
        assert _lost(note, note.replace(f"{mark}\n", "", 1) + mark + "\n")["N.md"] >= 25
    # A whole new comment, both ends in the change, hides nothing of what was there.
    assert _lost(body, "<!-- a note to self -->\n" + body) == {"N.md": 0}
    assert _lost(body, "%%\nto do later\n%%\n" + body) == {"N.md": 0}


def test_a_language_written_without_spaces_counts_each_character() -> None:
    chinese = "今天的会议决定了三件事情。\n"  # one run of letters, twelve words' worth
    assert _lost(chinese, "") == {"N.md": 12}
    assert _lost("한국어 단어 둘\n", "") == {"N.md": 3}  # Korean is spaced: words as usual


def test_only_a_write_no_rule_decides_asks_and_only_past_the_limit() -> None:
    policy = ApprovalPolicy()
    assert drops_words(policy, MANAGER, "update_note", {"N.md": 24}) is None
    assert drops_words(policy, MANAGER, "update_note", {"N.md": 25}) == (
        "it would remove 25 words from N.md"
    )
    assert drops_words(policy, MANAGER, "edit_note", {"A.md": 20, "B.md": 0, "C.md": 5}) == (
        "it would remove 25 words from A.md, C.md"
    )
    assert drops_words(policy, MANAGER, "append_note", {"N.md": 99}) is None  # cannot drop text
    allowed = policy.with_rules({MANAGER: "allow"})
    assert drops_words(allowed, MANAGER, "update_note", {"N.md": 99}) is None
    asked = policy.with_rules({f"{MANAGER}.update_note": "ask"})  # asks already, for its own
    assert drops_words(asked, MANAGER, "update_note", {"N.md": 99}) is None
    auto = ApprovalPolicy(auto_approve=True)
    assert drops_words(auto, MANAGER, "update_note", {"N.md": 99}) is None
