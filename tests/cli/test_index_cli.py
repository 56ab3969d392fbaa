"""The index commands, run as a user runs them: the real console script in a child process."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "vaultpilot"


def vp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


@pytest.mark.usefixtures("data_dir")
def test_index_then_query(example_vault: Path) -> None:
    out = vp("index", "--vault", str(example_vault))
    assert out.returncode == 0, out.stderr
    assert "47 notes" in out.stdout and "6 unresolved" in out.stdout

    found = json.loads(vp("search", "pgloader", "--vault", str(example_vault), "--json").stdout)
    assert {
        "Projects/Database Migration.md",
        "Meetings/Architecture Review 2025-10-16.md",
    } <= {r["path"] for r in found["results"]}
    assert found["total"] == len(found["results"])
    assert "pgloader" in found["results"][0]["snippet"].lower()

    tagged = vp("search", "migration", "--tag", "project", "--json", "--vault", str(example_vault))
    paths = {r["path"] for r in json.loads(tagged.stdout)["results"]}
    assert "Projects/Database Migration.md" in paths

    unresolved = json.loads(vp("unresolved", "--json", "--vault", str(example_vault)).stdout)
    assert unresolved == {
        "Daily/2025-11-12.md": {"Future Ideas": 1},
        "Inbox.md": {"DB Migration": 1, "Kubernetes Upgrade": 1, "Old Ideas Dump": 1},
        "Projects/2025/Q4 Goals.md": {"Hiring Plan 2026": 1},
        "Projects/Database Migration.md": {"Future Ideas": 1},
    }

    links = json.loads(
        vp("links", "Release Checklist", "--json", "--vault", str(example_vault)).stdout
    )
    assert {"target_text": "Overview", "target": "Projects/Mobile App/Overview.md"}.items() <= next(
        link for link in links if link["target_text"] == "Overview"
    ).items()

    back = json.loads(
        vp(
            "backlinks", "Projects/Database Migration", "--json", "--vault", str(example_vault)
        ).stdout
    )
    assert "Inbox.md" not in {b["source"] for b in back}  # [[DB Migration]] is an alias: no link
    assert len(back) >= 3


@pytest.mark.usefixtures("data_dir")
def test_vault_from_environment_and_cwd(example_vault: Path) -> None:
    assert vp("index", "--no-embed", cwd=example_vault).returncode == 0
    env_run = subprocess.run(
        [str(BIN), "status", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "VAULTPILOT_VAULT": str(example_vault)},
        timeout=60,
    )
    status = json.loads(env_run.stdout)
    assert status["up_to_date"] is True
    assert status["notes_on_disk"] == status["notes_indexed"] == 47
    assert [p for p, _ in status["frontmatter_errors"]] == [
        "Reference/Articles/Blameless Postmortems.md"
    ]


@pytest.mark.usefixtures("data_dir")
def test_status_reports_stale_files(example_vault: Path) -> None:
    vp("index", "--no-embed", "--vault", str(example_vault))
    (example_vault / "New note.md").write_text("fresh", encoding="utf-8")
    (example_vault / "Inbox.md").unlink()
    status = json.loads(vp("status", "--json", "--vault", str(example_vault)).stdout)
    assert status["stale_added"] == ["New note.md"]
    assert status["stale_deleted"] == ["Inbox.md"]
    assert status["up_to_date"] is False


def test_data_dir_flag_keeps_vault_clean(example_vault: Path, tmp_path: Path) -> None:
    before = sorted(p.relative_to(example_vault) for p in example_vault.rglob("*"))
    out = vp(
        "index",
        "--no-embed",
        "--vault",
        str(example_vault),
        "--data-dir",
        str(tmp_path / "elsewhere"),
    )
    assert out.returncode == 0, out.stderr
    assert list((tmp_path / "elsewhere" / "vaults").glob("*/index.db"))
    assert sorted(p.relative_to(example_vault) for p in example_vault.rglob("*")) == before


@pytest.mark.parametrize("command", ["index", "status", "search", "unresolved"])
def test_bad_vault_is_one_line_exit_2(command: str, tmp_path: Path) -> None:
    args = [command, "x"] if command == "search" else [command]
    missing = vp(*args, "--vault", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    a_file = tmp_path / "file.md"
    a_file.write_text("x", encoding="utf-8")
    not_dir = vp(*args, "--vault", str(a_file))
    assert not_dir.returncode == 2 and "not a folder" in not_dir.stderr


@pytest.mark.usefixtures("data_dir")
def test_unknown_note_is_a_clear_error(example_vault: Path) -> None:
    out = vp("backlinks", "No Such Note", "--vault", str(example_vault))
    assert out.returncode == 2
    assert "No note named 'No Such Note'" in out.stderr and "Traceback" not in out.stderr
    dup = vp("links", "Overview", "--vault", str(example_vault))
    assert dup.returncode == 2 and "matches 2 notes" in dup.stderr


@pytest.mark.usefixtures("data_dir")
def test_brackets_in_an_error_are_printed_as_written(example_vault: Path) -> None:
    # A note name is text, not terminal markup: '[/x]' crashed the error line, '[bold]' vanished.
    for name in ("[/x]", "Plan [bold] notes"):
        out = vp("links", name, "--vault", str(example_vault))
        assert out.returncode == 2, out.stderr
        assert f"'{name}'" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.usefixtures("data_dir")
def test_no_backlinks_is_said_and_bad_filters_are_refused(example_vault: Path) -> None:
    (example_vault / "Lonely.md").write_text("# Lonely\nlinks nowhere\n", encoding="utf-8")
    out = vp("backlinks", "Lonely", "--vault", str(example_vault))
    assert out.returncode == 0 and out.stdout.strip() == "No notes link to Lonely.md.", out
    out = vp("links", "Lonely", "--vault", str(example_vault))
    assert out.returncode == 0 and out.stdout.strip() == "Lonely.md links to no note or file."
    assert (
        json.loads(vp("backlinks", "Lonely", "--json", "--vault", str(example_vault)).stdout) == []
    )
    tag = vp("search", "x", "--tag", "#bad tag", "--vault", str(example_vault))
    assert tag.returncode == 2 and "a tag has no spaces" in tag.stderr, tag.stderr
    folder = vp("search", "village", "--path", "/nonexist", "--vault", str(example_vault))
    assert folder.returncode == 2 and "--path Projects" in folder.stderr, folder.stderr
    assert "Plan.md" not in folder.stderr  # the example names a folder, not a note


@pytest.mark.usefixtures("data_dir")
def test_a_rebuild_says_the_embeddings_are_kept_and_reuses_them(example_vault: Path) -> None:
    from vaultpilot.index.embedding import EmbeddingModelMissing, load_default_embedder

    try:
        load_default_embedder()
    except EmbeddingModelMissing as err:
        pytest.skip(f"the offline model is not built ({err})")
    first = vp("index", "--vault", str(example_vault))
    assert first.returncode == 0 and "embedded " in first.stdout, first.stdout
    assert "kept" not in first.stdout  # nothing to keep on a first index
    help_text = " ".join(vp("index", "--help").stdout.split())
    assert "The embeddings are kept" in help_text and "nothing is embedded twice" in help_text
    rebuilt = vp("index", "--rebuild", "--no-embed", "--vault", str(example_vault))
    embed = f"vaultpilot embed --vault {shlex.quote(str(example_vault.resolve()))}"
    kept = re.search(
        rf"kept (\d+) embeddings: `{re.escape(embed)}` chunks the notes again", rebuilt.stdout
    )
    assert rebuilt.returncode == 0 and kept is not None, rebuilt.stdout
    status = vp("status", "--vault", str(example_vault)).stdout
    assert f"{kept.group(1)} embeddings kept for their unchanged text" in status, status
    assert "nothing embedded yet" not in status
    again = vp("embed", "--vault", str(example_vault))
    assert again.returncode == 0 and "their text was already embedded" in again.stdout, again
    assert f"{kept.group(1)} of {kept.group(1)} chunks embedded" in again.stdout
