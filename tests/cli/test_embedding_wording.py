"""What ``index``, ``status`` and ``serve`` say about embedding, run as a user runs them: the
real console script in a child process, a real index and the bundled offline model.

- ``index``'s bar says it is chunking notes before the first chunk count is known (not ``0/?``);
- while ``index`` embeds, the lock names ``vaultpilot index`` (what ``status`` and a server show);
- Ctrl-C in ``index`` says to run ``vaultpilot index --vault '<the vault>'`` again, and that
  command, run from another folder, resumes;
- ``status`` leads with the notes still to chunk and never says 100% while one waits;
- ``serve`` started while ``index`` embeds says ``index`` is embedding and the server follows.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT

BIN = Path(sys.executable).parent / "vaultpilot"
NOTES = sum(1 for _ in EXAMPLE_VAULT.rglob("*.md"))


@pytest.fixture(autouse=True)
def _model() -> None:
    from vaultpilot.index.embedding import EmbeddingModelMissing, load_default_embedder

    try:
        load_default_embedder()
    except EmbeddingModelMissing as err:
        pytest.skip(f"the offline model is not built ({err})")


@pytest.fixture
def spaced_vault(tmp_path: Path) -> Path:
    """The example vault under a name the shell must quote."""
    dest = tmp_path / "my notes" / "vault"
    shutil.copytree(EXAMPLE_VAULT, dest)
    return dest.resolve()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "VAULTPILOT_DATA_DIR": str(tmp_path / "data"),
        "VAULTPILOT_CONFIG": str(tmp_path / "none.toml"),
        "PATH": f"{BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    env.pop("VAULTPILOT_EMBEDDINGS", None)
    env.pop("VAULTPILOT_VAULT", None)
    return env


def vp(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def _holder(db: Path) -> str | None:
    from vaultpilot.index.background import lock_holder

    return lock_holder(db)


def _index_db(vault: Path, env: dict[str, str]) -> Path:
    from vaultpilot.locations import vault_data_dir

    return vault_data_dir(vault, Path(env["VAULTPILOT_DATA_DIR"])) / "index.db"


@pytest.fixture
def embedding_index(spaced_vault: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``vaultpilot index`` started in a child process, returned once it is embedding."""
    child = subprocess.Popen(
        [str(BIN), "index", "--vault", str(spaced_vault)],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    started = child.stderr.readline()  # printed once chunking is done and embedding begins
    assert started.startswith("embedding "), (started, child.stderr.read())
    os.kill(child.pid, signal.SIGSTOP)  # it holds the lock as long as it is paused
    try:
        yield child
    finally:
        os.kill(child.pid, signal.SIGCONT)
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=60)


def test_the_bar_says_chunking_before_the_chunks_are_counted(
    spaced_vault: Path, env: dict[str, str]
) -> None:
    # A terminal as far as the progress bars are concerned: their frames go to stdout.
    out = vp({**env, "TTY_COMPATIBLE": "1"}, "index", "--vault", str(spaced_vault))
    assert out.returncode == 0, out.stderr
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.stdout)  # the frames, without styles
    assert f"chunking {NOTES} notes…" in shown
    assert "0/?" not in shown, shown
    assert re.search(r"^embedding .* \d+/\d+ ", shown, re.MULTILINE), shown[-2000:]


def test_while_index_embeds_the_lock_status_and_server_name_it(
    spaced_vault: Path, env: dict[str, str], embedding_index: subprocess.Popen[str]
) -> None:
    db = _index_db(spaced_vault, env)
    assert _holder(db) == f"pid {embedding_index.pid}, vaultpilot index"
    status = vp(env, "status", "--vault", str(spaced_vault))
    assert f"being embedded by pid {embedding_index.pid}, vaultpilot index" in status.stdout

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve = subprocess.Popen(
        [str(BIN), "serve", "--vault", str(spaced_vault), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        lines = []
        for line in serve.stdout:
            lines.append(line)
            if line.startswith("Press Ctrl"):
                break
        said = next((x for x in lines if x.startswith("  semantic search:")), "".join(lines))
        assert (
            f"being embedded by pid {embedding_index.pid}, vaultpilot index; this server "
            "follows, and takes over if it stops"
        ) in said, said
        assert "embedding the rest in the background" not in said
    finally:
        serve.terminate()
        serve.wait(timeout=20)


def test_ctrl_c_in_index_names_index_with_the_vault_and_that_command_resumes(
    spaced_vault: Path, env: dict[str, str], tmp_path: Path
) -> None:
    child = subprocess.Popen(
        [str(BIN), "index", "--vault", str(spaced_vault)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    started = child.stderr.readline()
    assert started.startswith("embedding "), started
    time.sleep(0.3)  # a few batches in
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (out, err)
    again = f"vaultpilot index --vault {shlex.quote(str(spaced_vault))}"
    assert f"Run `{again}` again to resume" in err, err
    assert "vaultpilot embed" not in out + err
    assert "Traceback" not in err

    # The hint, as written, works from a folder that is no vault, and resumes.
    resumed = subprocess.run(
        again, shell=True, cwd="/", env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "chunks embedded (100%)" in resumed.stdout
    assert "0 notes chunked" in resumed.stdout  # chunking was done before the Ctrl-C


def test_status_leads_with_notes_to_chunk_and_gives_the_command_with_the_vault(
    spaced_vault: Path, env: dict[str, str]
) -> None:
    assert vp(env, "index", "--vault", str(spaced_vault)).returncode == 0
    note = spaced_vault / "Inbox.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nA new line.\n", encoding="utf-8")
    assert vp(env, "index", "--no-embed", "--vault", str(spaced_vault)).returncode == 0

    status = vp(env, "status", "--vault", str(spaced_vault), cwd=Path("/"))
    vectors = next(x for x in status.stdout.splitlines() if x.startswith("vectors"))
    embed = f"vaultpilot embed --vault {shlex.quote(str(spaced_vault))}"
    assert re.fullmatch(
        r"vectors 1 note still to chunk and embed; (\d+) of \1 chunks of the other notes "
        rf"embedded; run `{re.escape(embed)}`",
        vectors,
    ), vectors
    assert "%" not in vectors

    # The command it gives works from any folder and brings the vectors up to date.
    done = subprocess.run(embed, shell=True, cwd="/", env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "(1 note chunked)" in done.stdout and "chunks embedded (100%)" in done.stdout
