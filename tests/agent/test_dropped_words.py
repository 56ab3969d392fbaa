"""The words a write removes (``approvals.dropped_words``) and when they ask (``drops_words``):
pure functions over a dry run's diffs."""

from __future__ import annotations

from vaultpilot.agent.approvals import ApprovalPolicy, dropped_words, drops_words
from vaultpilot.tools.diffs import unified

MANAGER = "obsidian_vault_manager"


def _lost(before: str, after: str) -> dict[str, int]:
    return dropped_words([unified("N.md", "N.md", before, after).as_json()])


def test_removed_words_are_counted_and_moved_or_reworded_ones_are_not() -> None:
    text = "one two three\nfour five six\n"
    assert _lost(text, "") == {"N.md": 6}
    assert _lost(text, "four five six\none two three\n") == {"N.md": 0}  # reordered
    assert _lost(text, "One, two; THREE!\nfour five six\n") == {"N.md": 0}  # reworded
    assert _lost(text, "one two\nfour five six\n") == {"N.md": 1}
    # A removed line that reads like a diff header is still a removed line.
    assert _lost("--- a/x\n+++ b/y\nkeep\n", "keep\n") == {"N.md": 4}


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
