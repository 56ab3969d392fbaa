"""VaultRuntime: reads in parallel on their own connections, writes one at a time, syncs skipped
while the watcher is live (a real vault copy, real SQLite, a real file watcher)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from vaultpilot.errors import SetupError
from vaultpilot.index.lookup import all_paths
from vaultpilot.tools import ToolContext
from vaultpilot.tools.rules import VaultRules
from vaultpilot.tools.session import VaultRuntime, live_session

WAIT = 10.0


@pytest.fixture
def runtime(example_vault: Path, data_dir: Path) -> Iterator[VaultRuntime]:
    db = data_dir / "vaults" / "v" / "index.db"
    rt = VaultRuntime(example_vault, db, source="server", slots=4)
    rt.open()
    assert rt.live_info()["state"] == "live"
    yield rt
    rt.close()


def test_reads_run_in_parallel_on_their_own_read_only_connections(runtime: VaultRuntime) -> None:
    # Every read waits for the other three inside its call: under one lock this never returns.
    barrier = threading.Barrier(4, timeout=WAIT)

    def read(ctx: ToolContext) -> tuple[int, int]:
        paths = all_paths(ctx.conn)
        barrier.wait()
        return id(ctx.conn), len(paths)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: runtime.call(read), range(4)))
    assert len({conn for conn, _ in results}) == 4
    assert {n for _, n in results} == {results[0][1]} and results[0][1] > 10
    ctx_conn = runtime.call(lambda ctx: ctx.conn)
    with pytest.raises(Exception, match=r"readonly|read-only|query_only"):
        ctx_conn.execute("DELETE FROM files")


def test_writes_run_one_at_a_time_and_reads_go_on_beside_them(runtime: VaultRuntime) -> None:
    # Four slots, five calls: the writes waiting for the turn give their slots up.
    inside, most = 0, 0
    guard = threading.Lock()
    holding = threading.Event()
    release = threading.Event()

    def write(ctx: ToolContext) -> None:
        nonlocal inside, most
        ctx.fresh(force=True)  # a write's first step: from here it holds the write turn
        with guard:
            inside += 1
            most = max(most, inside)
        holding.set()
        release.wait(WAIT)
        with guard:
            inside -= 1

    with ThreadPoolExecutor(4) as pool:
        writes = [pool.submit(runtime.call, write) for _ in range(4)]
        assert holding.wait(WAIT)
        # A read does not wait for the write in progress.
        started = time.monotonic()
        assert "Home.md" in runtime.call(lambda ctx: all_paths(ctx.conn))
        assert time.monotonic() - started < 2.0
        release.set()
        for f in writes:
            f.result(WAIT)
    assert most == 1


def test_tool_calls_in_parallel_leave_the_index_equal_to_the_vault(
    runtime: VaultRuntime, example_vault: Path
) -> None:
    def create(i: int) -> bool:
        args = {"operation": "create_note", "target": f"Projects/P{i}.md", "content": f"w{i}"}
        return bool(runtime.call_tool("obsidian_vault_manager", args).result.get("success"))

    def read(i: int) -> bool:
        args = {"contextType": "read_note", "target": "Home.md"}
        return runtime.call_tool("obsidian_get_context", args).error is None

    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(create, range(12)))
        reads = list(pool.map(read, range(40)))
    assert all(made) and all(reads)
    on_disk = {p.relative_to(example_vault).as_posix() for p in example_vault.rglob("*.md")}
    indexed = {p for p in runtime.call(lambda ctx: all_paths(ctx.conn)) if p.endswith(".md")}
    assert {f"Projects/P{i}.md" for i in range(12)} <= indexed
    assert indexed == {p for p in on_disk if not any(s.startswith(".") for s in p.split("/"))}


def test_live_session_watches_until_closed(example_vault: Path, data_dir: Path) -> None:
    with live_session(example_vault, data_dir / "chat" / "index.db") as rt:
        assert rt.live_info()["state"] == "live"
        (example_vault / "Seen.md").write_text("# Seen\n", encoding="utf-8")
        deadline = time.monotonic() + WAIT
        while "Seen.md" not in rt.call(lambda ctx: all_paths(ctx.conn)):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert rt.live_info()["state"] == "stopped"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config file this process reads (empty until a test writes it)."""
    path = tmp_path / "config.toml"
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(path))
    return path


def test_rules_from_the_config_file_follow_its_changes(
    example_vault: Path, data_dir: Path, config: Path
) -> None:
    config.write_text('[rules]\ndeny = ["People"]\n', encoding="utf-8")
    rt = VaultRuntime(example_vault, data_dir / "once" / "index.db", source="mcp", watch=False)
    try:
        assert rt.call(lambda ctx: ctx.rules.deny) == ("People",)
        # A change while the process runs holds from the next call on.
        config.write_text('[rules]\ndeny = ["Projects"]\n', encoding="utf-8")
        assert rt.call(lambda ctx: ctx.rules.deny) == ("Projects",)
        run_ctx = rt.open_run_context()
        try:
            assert run_ctx.rules.deny == ("Projects",)
        finally:
            run_ctx.conn.close()
            if run_ctx.journal is not None:
                run_ctx.journal.close()
        # A file that no longer reads keeps the last good rules (and says so in the log).
        config.write_text("[rules\n", encoding="utf-8")
        assert rt.call(lambda ctx: ctx.rules.deny) == ("Projects",)
    finally:
        rt.close()
    given = VaultRules(deny=("Travel",))  # rules a caller gives (the server's) stay as given
    fixed = VaultRuntime(
        example_vault, data_dir / "once" / "index.db", source="mcp", watch=False, rules=given
    )
    try:
        config.write_text('[rules]\ndeny = ["People"]\n', encoding="utf-8")
        assert fixed.call(lambda ctx: ctx.rules.deny) == ("Travel",)
    finally:
        fixed.close()


def test_a_bad_rules_table_names_the_config_file(
    example_vault: Path, data_dir: Path, config: Path
) -> None:
    config.write_text('[rules]\nmode = "sometimes"\n', encoding="utf-8")
    with pytest.raises(SetupError) as err:
        VaultRuntime(example_vault, data_dir / "bad" / "index.db", source="mcp")
    assert err.value.message.startswith(f"The [rules] table of {config} has a bad setting 'mode'")
