"""One embedder per index across processes: ``vaultpilot embed`` and ``status --watch`` follow
the process holding the lock (a server, here a child process standing in for one), and
``vaultpilot embed`` takes over when that process stops before the end."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.semantic.test_embed_cli import make_app, small_vault
from vaultpilot.cli.index_cmds import register as register_index
from vaultpilot.index.db import connect
from vaultpilot.index.embedding import OnnxEmbedder
from vaultpilot.index.semantic import embedding_status
from vaultpilot.index.sync import sync_vault
from vaultpilot.locations import vault_data_dir

HOLDER = """
import sys, time
from pathlib import Path
from vaultpilot.index.background import EmbedLock
from vaultpilot.index.db import connect
from vaultpilot.index.semantic import embed_pending, select_embedder
db, mode = Path(sys.argv[1]), sys.argv[2]
lock = EmbedLock(db, "server")
assert lock.acquire()
print("held", flush=True)
sys.stdin.readline()  # the test says when: once the command under test is following
if mode == "embed":
    conn = connect(db)
    embed_pending(conn, select_embedder())
    conn.close()
lock.release()
"""


@pytest.fixture
def setup(
    tmp_path: Path, real_embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path]:
    """(vault, data dir, index path), the index synced but not embedded."""
    monkeypatch.delenv("VAULTPILOT_EMBEDDINGS", raising=False)
    vault = small_vault(tmp_path / "vault")
    data = tmp_path / "d"
    db = vault_data_dir(vault, data) / "index.db"
    conn = connect(db)
    sync_vault(conn, vault)
    conn.close()
    return vault, data, db


def _go_soon(child: subprocess.Popen[str], delay: float = 1.5) -> threading.Timer:
    """Let the holder go on after ``delay``, once the command invoked next is following it (it
    needs well under 0.2 s to get there)."""

    def go() -> None:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()

    timer = threading.Timer(delay, go)
    timer.start()
    return timer


@contextmanager
def _holder(db: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    try:
        yield child
    finally:
        child.kill()
        child.wait(10)


def test_embed_follows_the_process_that_holds_the_lock(setup: tuple[Path, Path, Path]) -> None:
    vault, data, db = setup
    with _holder(db, "embed") as child:
        _go_soon(child)
        result = CliRunner().invoke(
            make_app(), ["embed", "--vault", str(vault), "--data-dir", str(data), "--json"]
        )
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["embedded_by"] == f"pid {child.pid}, server"
        assert report["embedded_now"] == 0
        assert report["chunks_embedded"] == report["chunks"] == 3


def test_embed_takes_over_when_the_holder_stops_early(setup: tuple[Path, Path, Path]) -> None:
    vault, data, db = setup
    with _holder(db, "quit") as child:
        _go_soon(child)
        result = CliRunner().invoke(
            make_app(), ["embed", "--vault", str(vault), "--data-dir", str(data)]
        )
        assert result.exit_code == 0, result.output
        assert "server is embedding this index; following its progress" in result.output
        assert "embedded 3 chunks" in result.output
    conn = connect(db)
    assert embedding_status(conn).complete
    conn.close()


def test_status_watch_follows_until_done(setup: tuple[Path, Path, Path]) -> None:
    vault, data, db = setup
    app = make_app()
    register_index(app)
    idle = CliRunner().invoke(
        app, ["status", "--watch", "--vault", str(vault), "--data-dir", str(data)]
    )
    assert idle.exit_code == 0, idle.output
    assert "nobody is embedding this index; run `vaultpilot embed`" in idle.output
    with _holder(db, "embed") as child:
        during = CliRunner().invoke(
            app, ["status", "--json", "--vault", str(vault), "--data-dir", str(data)]
        )
        assert json.loads(during.stdout)["embedding"]["embedder"] == f"pid {child.pid}, server"
        _go_soon(child)
        watched = CliRunner().invoke(
            app, ["status", "--watch", "--vault", str(vault), "--data-dir", str(data)]
        )
        assert watched.exit_code == 0, watched.output
        assert "being embedded by" in watched.output  # the first line, while it works
        assert "3 of 3 chunks embedded (100%)" in watched.output.splitlines()[-1]
