"""``vaultpilot history``, ``show`` and ``undo`` through the real command, a real vault and
memory.db; the changes are made with ``vaultpilot tool`` as a user makes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultpilot.cli.main import app


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Projects").mkdir(parents=True)
    (root / "Projects" / "Plan.md").write_text("# Plan\n- [ ] ship\n", encoding="utf-8")
    (root / "Home.md").write_text("see [[Projects/Plan]]\n", encoding="utf-8")
    return root


def vp(vault: Path, *args: str) -> tuple[int, str, str]:
    common = ["--vault", str(vault), "--data-dir", str(vault.parent / "data")]
    result = CliRunner().invoke(app, [*args, *common], env={"COLUMNS": "300", "NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def tool(vault: Path, **arguments: object) -> None:
    code, out, err = vp(vault, "tool", "obsidian_vault_manager", "--json", json.dumps(arguments))
    assert code == 0, (out, err)


def test_history_show_undo(vault: Path) -> None:
    plan = (vault / "Projects" / "Plan.md").read_bytes()
    home = (vault / "Home.md").read_bytes()
    tool(
        vault,
        operation="edit_note",
        target="Projects/Plan.md",
        edits=[{"oldText": "- [ ] ship", "newText": "- [x] ship"}],
    )
    tool(vault, operation="move_note", target="Projects/Plan.md", destination="Home Plan.md")

    code, out, _ = vp(vault, "history", "--json")
    assert code == 0
    sets = json.loads(out)
    assert [s["summary"] for s in sets] == ["move_note", "edit_note"]
    assert all(s["source"] == "cli" for s in sets)
    moved = {(f["kind"], f["from"], f["to"]) for f in sets[0]["files"]}
    assert ("move", "Projects/Plan.md", "Home Plan.md") in moved
    assert ("update", "Home.md", "Home.md") in moved  # the link rewrite belongs to the move

    code, out, _ = vp(vault, "show", sets[1]["id"][:6])
    assert code == 0
    assert "-- [ ] ship" in out and "+- [x] ship" in out

    code, text, _ = vp(vault, "history")
    assert code == 0 and sets[0]["id"] in text and "move_note" in text

    code, out, err = vp(vault, "undo", "--last")
    assert code == 0, err
    assert "restored 2 file(s)" in out  # the moved note and the note whose link was rewritten
    code, out, err = vp(vault, "undo", sets[1]["id"])
    assert code == 0, err
    assert (vault / "Projects" / "Plan.md").read_bytes() == plan
    assert (vault / "Home.md").read_bytes() == home
    assert not (vault / "Home Plan.md").exists()


def test_undo_refuses_a_file_changed_since(vault: Path) -> None:
    tool(vault, operation="append_note", target="Home.md", content="more")
    (vault / "Home.md").write_text("mine now\n", encoding="utf-8")
    code, _, err = vp(vault, "undo", "--last")
    assert code == 2
    assert "Home.md" in err and "--skip-changed" in err and "nothing was undone" in err
    assert (vault / "Home.md").read_text(encoding="utf-8") == "mine now\n"


def test_bad_ids_and_arguments(vault: Path) -> None:
    code, _, err = vp(vault, "undo", "nope")
    assert code == 2 and "No change set 'nope'" in err and "Traceback" not in err
    code, _, err = vp(vault, "show", "nope")
    assert code == 2 and "vaultpilot history" in err
    code, _, err = vp(vault, "undo")
    assert code == 2 and "--last" in err
    code, out, _ = vp(vault, "history")
    assert code == 0 and "No changes recorded" in out
