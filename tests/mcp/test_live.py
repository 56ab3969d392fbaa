"""``vaultpilot mcp``'s vaults watch too: a note saved on disk is found within a second, with no
rescan and no tool call walking the vault (a real vault copy, a real watcher)."""

from __future__ import annotations

import time
from pathlib import Path

from vaultpilot.index.lookup import all_paths
from vaultpilot.locations import vault_data_dir
from vaultpilot.mcp import LocalVault

TIMEOUT = 20.0


def test_a_saved_note_is_found_within_a_second(example_vault: Path, data_dir: Path) -> None:
    vault = LocalVault(example_vault, vault_data_dir(example_vault, data_dir) / "index.db")
    try:
        vault.start(embed=False, rescan=3600.0)  # no periodic rescan can be what finds it
        deadline = time.monotonic() + TIMEOUT
        while vault.runtime.live_info()["state"] != "live":
            assert time.monotonic() < deadline, vault.runtime.live_info()
            time.sleep(0.05)
        (example_vault / "Saved In Obsidian.md").write_text("# S\nmarigoldvane\n", "utf-8")
        saved = time.monotonic()
        args = {"queryType": "semantic_search", "query": "marigoldvane"}
        while not vault.runtime.call_tool("obsidian_query_vault", args).result["results"]:
            assert time.monotonic() - saved < 1.0, "not found 1 s after the save"
            time.sleep(0.02)
        assert "Saved In Obsidian.md" in vault.call(lambda c: all_paths(c.conn))
    finally:
        vault.close()
    assert vault.runtime.live_info()["state"] == "stopped"
