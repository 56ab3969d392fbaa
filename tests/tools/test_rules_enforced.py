"""The tools enforce the vault's rules on every call, whatever the arguments say."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from vaultpilot.tools import ToolContext, call_tool, open_context
from vaultpilot.tools.rules import PRIVATE_TEXT, VaultRules

NOTES = {
    "Inbox.md": "# Inbox\n\nCall the bank about [[pin]]. See [[Dana]].\n",
    "Secrets/pin.md": "# pin\n\nThe bank pin is 4242. Inbox links [[Inbox]].\n",
    "Archive/old.md": "# old\n\nArchived bank notes.\n",
    "Journal/Dana.md": "# Dana\n\nDear diary, the bank called.\n",
    "Projects/Plan.md": "# Plan\n\nBank project.\n",
}
RULES = VaultRules(deny=("Secrets",), read_only=("Archive",), private=("Journal",))


def _hashes(vault: Path) -> dict[str, str]:
    return {
        str(p.relative_to(vault)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(vault.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir()
    return root


def _ctx(vault: Path, rules: VaultRules) -> ToolContext:
    return open_context(vault, vault.parent / "index.db", rules=rules)


def _call(ctx: ToolContext, name: str, **args: Any) -> dict[str, Any]:
    return call_tool(ctx, name, args)


def _paths(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("path", "notePath") and isinstance(item, str):
                found.add(item)
            else:
                found |= _paths(item)
    elif isinstance(value, list):
        for item in value:
            found |= _paths(item)
    return found


def test_denied_notes_are_never_read_nor_listed(vault: Path) -> None:
    ctx = _ctx(vault, RULES)
    for target in ("Secrets/pin.md", "pin"):  # a title cannot step around the folder rule
        out = _call(ctx, "obsidian_get_context", contextType="read_note", target=target)
        assert "error" in out and "deny" in out["error"] and "4242" not in str(out)
    for query in (
        {"queryType": "semantic_search", "query": "bank pin"},
        {"queryType": "list_structure"},
        {"queryType": "recent_changes"},
        {"queryType": "search_by_metadata", "filters": {}},
    ):
        out = _call(ctx, "obsidian_query_vault", **query)
        assert "Secrets/pin.md" not in _paths(out) and "4242" not in str(out), query
    backlinks = _call(
        ctx, "obsidian_get_context", contextType="note_with_backlinks", target="Inbox"
    )
    assert backlinks["primaryNote"]["path"] == "Inbox.md"
    assert "Secrets/pin.md" not in _paths(backlinks)


def test_private_notes_exist_but_their_text_is_withheld(vault: Path) -> None:
    ctx = _ctx(vault, RULES)
    out = _call(ctx, "obsidian_get_context", contextType="read_note", target="Dana")
    assert out["primaryNote"]["path"] == "Journal/Dana.md"
    assert out["primaryNote"]["private"] is True
    assert out["primaryNote"]["content"] == PRIVATE_TEXT and "diary" not in str(out)
    found = _call(ctx, "obsidian_query_vault", queryType="semantic_search", query="diary bank")
    assert "diary" not in str(found)


@pytest.mark.parametrize(
    "args",
    [
        {"operation": "update_note", "target": "Archive/old.md", "content": "gone"},
        {"operation": "append_note", "target": "old", "content": "more"},
        {"operation": "delete_note", "target": "Journal/Dana.md", "confirmDestructive": True},
        {"operation": "create_note", "target": "Secrets/new.md", "content": "x"},
        {"operation": "move_note", "target": "Inbox.md", "destination": "Archive"},
        {"operation": "move_folder", "target": "Journal", "destination": "Projects"},
        {"operation": "bulk_tag", "targets": ["Inbox.md", "Archive/old.md"],
         "metadata": {"tags": ["x"]}},
    ],
)  # fmt: skip
def test_refused_changes_change_nothing(vault: Path, args: dict[str, Any]) -> None:
    before = _hashes(vault)
    out = _call(_ctx(vault, RULES), "obsidian_vault_manager", **args)
    assert out.get("success") is False and "rules" in out["message"], out
    assert _hashes(vault) == before


def test_a_folder_holding_a_protected_note_is_not_changed_whole(vault: Path) -> None:
    (vault / "Projects" / "Secret plans").mkdir()
    (vault / "Projects" / "Secret plans" / "x.md").write_text("x\n", encoding="utf-8")
    rules = VaultRules(deny=("Projects/Secret plans",))
    before = _hashes(vault)
    out = _call(
        _ctx(vault, rules), "obsidian_vault_manager", operation="move_folder",
        target="Projects", destination="Archive",
    )  # fmt: skip
    # A denied entry is not named (the agent may not learn it exists); a read-only one is.
    assert out["success"] is False and "Secret plans" not in out["message"]
    assert "keep from the agent" in out["message"]
    assert _hashes(vault) == before
    rules = VaultRules(read_only=("Projects/Secret plans",))
    out = _call(
        _ctx(vault, rules), "obsidian_vault_manager", operation="delete_folder",
        target="Projects", confirmDestructive=True, recursive=True,
    )  # fmt: skip
    assert out["success"] is False and "'Projects/Secret plans'" in out["message"]
    assert _hashes(vault) == before
    # A denied note named exactly reads as one, not as "in" itself.
    read = _call(_ctx(vault, RULES), "obsidian_get_context", contextType="read_note",
                 target="Secrets/pin.md")  # fmt: skip
    assert read["error"].startswith("'Secrets/pin.md' is kept from the agent by the vault's")
    by_title = _call(_ctx(vault, RULES), "obsidian_get_context", contextType="read_note",
                     target="pin")  # fmt: skip
    assert by_title["error"].startswith("'pin' is kept") and "Secrets" not in by_title["error"]
    read = _call(_ctx(vault, VaultRules(deny=("Inbox.md",))), "obsidian_get_context",
                 contextType="read_note", target="Inbox.md")  # fmt: skip
    assert read["error"].startswith("'Inbox.md' is kept from the agent by the vault's rules")


@pytest.mark.parametrize(("where", "named"), [("Archive/old.md", True), ("Secrets/pin.md", False)])
@pytest.mark.parametrize(
    "args",
    [
        {"operation": "move_note", "target": "Projects/Plan.md", "destination": "Done"},
        {"operation": "move_note", "target": "Projects/Plan.md", "destination": "Done",
         "dryRun": True},
        {"operation": "move_folder", "target": "Projects", "destination": "Work"},  # a rename
        {"operation": "bulk_move", "targets": ["Projects/Plan.md"], "destination": "Done"},
    ],
)  # fmt: skip
def test_a_move_that_would_rewrite_a_protected_note_is_refused(
    vault: Path, args: dict[str, Any], where: str, named: bool
) -> None:
    (vault / "Done").mkdir()
    with (vault / where).open("a", encoding="utf-8") as f:
        f.write("See [[Projects/Plan]].\n")  # a path link: the move would rewrite it
    before = _hashes(vault)
    out = _call(_ctx(vault, RULES), "obsidian_vault_manager", **args)
    assert out["success"] is False, out
    assert "would rewrite the links" in out["message"] and "Nothing was moved" in out["message"]
    assert (f"'{where}'" in out["message"]) is named  # a denied note is never named
    assert "pin" not in out["message"] or named
    assert _hashes(vault) == before


def test_a_move_whose_links_still_resolve_is_allowed(vault: Path) -> None:
    (vault / "Done").mkdir()
    with (vault / "Archive" / "old.md").open("a", encoding="utf-8") as f:
        f.write("See [[Plan]].\n")  # resolves by name wherever Plan goes: nothing to rewrite
    out = _call(
        _ctx(vault, RULES), "obsidian_vault_manager", operation="move_note",
        target="Projects/Plan.md", destination="Done",
    )  # fmt: skip
    assert out["success"] is True, out
    assert (vault / "Done" / "Plan.md").exists()
    assert (vault / "Archive" / "old.md").read_text(encoding="utf-8").endswith("[[Plan]].\n")


def test_a_title_is_checked_against_where_the_note_is_now(vault: Path) -> None:
    """A note moved into a read-only folder behind the index's back (no watcher) is still
    protected when named by its title."""
    ctx = _ctx(vault, RULES)
    read = _call(ctx, "obsidian_get_context", contextType="read_note", target="Plan")
    assert read["primaryNote"]["path"] == "Projects/Plan.md"  # indexed where it was
    (vault / "Projects" / "Plan.md").rename(vault / "Archive" / "Plan.md")  # the index: Projects
    before = _hashes(vault)
    out = _call(ctx, "obsidian_vault_manager", operation="append_note", target="Plan", content="x")
    assert out["success"] is False and "'Archive'" in out["message"], out
    assert _hashes(vault) == before


def test_read_only_mode_refuses_changes_but_allows_previews(vault: Path) -> None:
    ctx = _ctx(vault, VaultRules(mode="read-only"))
    before = _hashes(vault)
    change = {"operation": "append_note", "target": "Inbox.md", "content": "- new\n"}
    out = _call(ctx, "obsidian_vault_manager", **change)
    assert out["success"] is False and "read-only" in out["message"]
    preview = _call(ctx, "obsidian_vault_manager", **change, dryRun=True)
    assert preview["success"] is True and preview["diffs"]
    assert _hashes(vault) == before
    read = _call(ctx, "obsidian_get_context", contextType="read_note", target="Inbox")
    assert "Call the bank" in read["primaryNote"]["content"]


def test_without_rules_everything_is_as_before(vault: Path) -> None:
    ctx = _ctx(vault, VaultRules())
    out = _call(ctx, "obsidian_get_context", contextType="read_note", target="pin")
    assert "4242" in out["primaryNote"]["content"]


def test_rules_come_from_the_config_file(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[rules]\ndeny = ["Secrets"]\n', encoding="utf-8")
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(config))
    ctx = open_context(vault, tmp_path / "index.db")
    assert ctx.rules.deny == ("Secrets",)
    out = _call(ctx, "obsidian_get_context", contextType="read_note", target="pin")
    assert "error" in out and "4242" not in str(out)


def test_hidden_notes_are_not_counted_either(vault: Path) -> None:
    """A count that included a denied note would tell what it holds, one guess at a time."""
    (vault / "Secrets" / "pw.md").write_text(
        "---\npassword: hunter2\n---\nbank pin and password\n", encoding="utf-8"
    )
    (vault / "Secrets" / "open.md").write_text("an open bank note\n", encoding="utf-8")
    rules = VaultRules(deny=("Secrets",), read_only=("Secrets/open.md",))
    ctx = _ctx(vault, rules)
    guess = _call(
        ctx, "obsidian_query_vault", queryType="search_by_metadata",
        filters={"properties": {"password": "hunter2"}},
    )  # fmt: skip
    assert guess["totalFound"] == 0 and guess["results"] == []
    recent = _call(ctx, "obsidian_query_vault", queryType="recent_changes", limit=50)
    listed = {r["path"] for r in recent["results"]}
    assert recent["totalFound"] == len(listed) and not any("pin" in p or "pw" in p for p in listed)
    assert "Secrets/open.md" in listed  # a longer rule opens it again
    # The limit applies after hiding: the best visible note fills the one place.
    found = _call(
        ctx, "obsidian_query_vault", queryType="semantic_search", query="bank pin", limit=1
    )
    assert len(found["results"]) == 1 and "Secrets/pin.md" not in _paths(found)
    everything = _call(ctx, "obsidian_query_vault", queryType="semantic_search", query="bank")
    assert everything["totalFound"] == len(_paths(everything["results"]))
    related = _call(ctx, "obsidian_query_vault", queryType="find_related", referenceNote="Inbox")
    assert "Secrets/pin.md" not in _paths(related)
    assert related["totalFound"] == len(related["results"])


@pytest.mark.parametrize("flag", ["false", "no", "0", 0, 1, "true", None])
def test_a_dry_run_flag_that_is_not_a_json_boolean_is_refused_before_anything(
    vault: Path, flag: Any
) -> None:
    # Lax validation read "false" as false: checks that looked at the raw value took the call
    # for a preview (no read-only refusal, no question) and the tool then wrote.
    before = _hashes(vault)
    for rules in (VaultRules(mode="read-only"), VaultRules(read_only=("Projects",))):
        ctx = _ctx(vault, rules)
        try:
            out = _call(
                ctx, "obsidian_vault_manager", operation="update_note",
                target="Projects/Plan.md", content="# Gone\n", dryRun=flag,
            )  # fmt: skip
        finally:
            ctx.conn.close()
        assert out["success"] is False
        assert "'dryRun' must be true or false (a JSON boolean, unquoted)" in out["message"], out
    assert _hashes(vault) == before


def test_a_second_spelling_of_a_name_cannot_step_around_the_deny_check(vault: Path) -> None:
    ctx = _ctx(vault, RULES)
    try:
        for key in ("referenceNote", "reference_note"):
            out = _call(ctx, "obsidian_query_vault", queryType="find_related", **{key: "pin"})
            assert out.get("error"), out
            assert "bank pin" not in str(out) and "Inbox" not in str(out.get("results"))
    finally:
        ctx.conn.close()
