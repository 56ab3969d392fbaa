"""``vaultpilot embed``: the missing-model error, a full run, and Ctrl-C then resume.

The command is mounted on a small Typer app here (``cli/main.py`` mounts it for users), and the
interruption test runs it in a child process and sends it a real SIGINT.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.index.helpers import write
from tests.semantic.conftest import Embedded
from vaultpilot.cli.embed_cmds import embedding_line, register
from vaultpilot.index.semantic import EmbeddingStatus

APP_SCRIPT = """
import typer
from vaultpilot.cli.embed_cmds import register
app = typer.Typer()
@app.callback()
def main() -> None:
    pass
register(app)
app()
"""


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    return app


def small_vault(root: Path) -> Path:
    write(root, "A.md", "# A\n\nThe starter needs feeding.\n\n## More\n\nFlour and water.\n")
    write(root, "B.md", "---\ntags: [x]\n---\n# B\n\nLinks to [[A]].\n")
    return root


def test_missing_model_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTPILOT_EMBEDDING_MODEL_DIR", str(tmp_path / "no-model"))
    monkeypatch.delenv("VAULTPILOT_EMBEDDINGS", raising=False)
    vault = small_vault(tmp_path / "vault")
    result = CliRunner().invoke(
        make_app(), ["embed", "--vault", str(vault), "--data-dir", str(tmp_path / "d")]
    )
    assert result.exit_code == 2
    assert "not built" in result.output and "make install-model" in result.output
    assert "Traceback" not in result.output


def test_embed_then_nothing_left(
    tmp_path: Path, embedded: Embedded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAULTPILOT_EMBEDDINGS", raising=False)
    vault = small_vault(tmp_path / "vault")
    args = ["embed", "--vault", str(vault), "--data-dir", str(tmp_path / "d")]
    first = CliRunner().invoke(make_app(), args)
    assert first.exit_code == 0, first.output
    assert "embedded 3 chunks (2 notes chunked)" in first.output
    assert "3 of 3 chunks embedded (100%)" in first.output
    again = CliRunner().invoke(make_app(), [*args, "--json"])
    report = json.loads(again.stdout)
    assert report["embedded_now"] == 0 and report["chunks"] == report["chunks_embedded"] == 3
    assert report["model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_ctrl_c_stops_cleanly_and_the_next_run_resumes(
    example_vault: Path, tmp_path: Path, embedded: Embedded
) -> None:
    env = {
        **os.environ,
        "VAULTPILOT_DATA_DIR": str(tmp_path / "data"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    env.pop("VAULTPILOT_EMBEDDINGS", None)
    command = [sys.executable, "-c", APP_SCRIPT, "embed", "--vault", str(example_vault)]
    child = subprocess.Popen(
        [*command, "--batch", "8"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    started = child.stderr.readline()  # printed once chunking is done and embedding begins
    assert started.startswith("embedding "), started
    time.sleep(0.3)  # a few batches in: ~190 chunks take ~1 s on two cores
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (out, err)
    again = f"vaultpilot embed --vault {shlex.quote(str(example_vault.resolve()))}"
    assert f"Run `{again}` again to resume" in err, err
    assert "Traceback" not in err
    stopped = re.search(r"stopped: (\d+) of (\d+) chunks embedded", err)
    assert stopped is not None, err
    done, total = int(stopped.group(1)), int(stopped.group(2))
    assert 0 < done < total

    resumed = subprocess.run(
        [*command, "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["notes_chunked"] == 0  # chunking finished before the interruption
    assert report["embedded_now"] == total - done  # only what was left
    assert report["chunks_embedded"] == report["chunks"]


def test_status_line() -> None:
    embed = "vaultpilot embed --vault /v"
    assert embedding_line(EmbeddingStatus(0, 0, 0, None), command=embed) == "nothing embedded yet"
    assert embedding_line(EmbeddingStatus(0, 0, 12, None), command=embed) == (
        "12 notes still to chunk and embed; nothing embedded yet; run `vaultpilot embed --vault /v`"
    )
    assert (
        embedding_line(EmbeddingStatus(194, 194, 0, "m"), command=embed)
        == "194 of 194 chunks embedded (100%)"
    )
    # Notes waiting lead the line, and no percentage then (their chunks are not counted yet).
    assert embedding_line(EmbeddingStatus(200, 200, 3, "m"), command=None) == (
        "3 notes still to chunk and embed; 200 of 200 chunks of the other notes embedded"
    )
    assert embedding_line(EmbeddingStatus(50, 200, 1, "m"), command=embed) == (
        "1 note still to chunk and embed; 50 of 200 chunks of the other notes embedded; "
        "run `vaultpilot embed --vault /v`"
    )
    # A few chunks left never round up to 100%.
    assert embedding_line(EmbeddingStatus(1999, 2000, 0, "m"), command=None) == (
        "1999 of 2000 chunks embedded (99%)"
    )
    assert embedding_line(EmbeddingStatus(50, 200, 0, "m"), "pid 7, server", command=embed) == (
        "50 of 200 chunks embedded (25%); being embedded by pid 7, server"
    )
