"""``vaultpilot history``, ``show`` and ``undo`` through the real command, a real vault and
memory.db; the changes are made with ``vaultpilot tool`` as a user makes them."""

from __future__ import annotations

import json
import re
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
    assert "restored 2 notes." in out  # the moved note and the note whose link was rewritten
    code, out, err = vp(vault, "undo", sets[1]["id"])
    assert code == 0, err
    assert (vault / "Projects" / "Plan.md").read_bytes() == plan
    assert (vault / "Home.md").read_bytes() == home
    assert not (vault / "Home Plan.md").exists()


def test_undo_refuses_a_file_changed_since(vault: Path) -> None:
    tool(
        vault,
        operation="bulk_tag",
        targets=["Home.md", "Projects/Plan.md"],
        metadata={"tags": ["x"]},
    )
    (vault / "Home.md").write_text("mine now\n", encoding="utf-8")
    code, _, err = vp(vault, "undo", "--last")
    assert code == 2
    assert "Home.md" in err and "--skip-changed" in err and "nothing was undone" in err
    assert (vault / "Home.md").read_text(encoding="utf-8") == "mine now\n"
    code, out, err = vp(vault, "undo", "--last", "--skip-changed")
    assert code == 0, err
    assert "restored 1 note." in out and "Left as they are (changed since): Home.md" in out
    assert (vault / "Projects" / "Plan.md").read_text(encoding="utf-8") == "# Plan\n- [ ] ship\n"
    assert (vault / "Home.md").read_text(encoding="utf-8") == "mine now\n"


def test_nothing_left_to_undo_is_never_a_success(vault: Path) -> None:
    tool(vault, operation="append_note", target="Home.md", content="more")
    (vault / "Home.md").write_text("mine now\n", encoding="utf-8")
    for extra in ([], ["--skip-changed"]):
        code, out, err = vp(vault, "undo", "--last", *extra)
        assert code == 2, (out, err)
        assert "nothing left to undo" in err and "Home.md" in err
        assert "--skip-changed" not in err and "restored" not in out
    assert (vault / "Home.md").read_text(encoding="utf-8") == "mine now\n"
    code, out, _ = vp(vault, "history")
    assert code == 0 and "undo" not in out  # no empty undo was recorded


def test_an_undone_set_is_marked_and_not_undone_twice(vault: Path) -> None:
    home = (vault / "Home.md").read_bytes()
    tool(vault, operation="append_note", target="Home.md", content="more")
    set_id = json.loads(vp(vault, "history", "--json")[1])[0]["id"]
    code, out, err = vp(vault, "undo", set_id)
    assert code == 0, err
    assert (vault / "Home.md").read_bytes() == home
    (undo,) = [s for s in json.loads(vp(vault, "history", "--json")[1]) if s["undoOf"] == set_id]
    for extra in ([], ["--skip-changed"]):
        code, out, err = vp(vault, "undo", set_id, *extra)
        assert code == 2, (out, err)
        assert f"Change set {set_id} was already undone by {undo['id']} at {undo['when']}" in err
        assert "nothing to do" in err and "--skip-changed" not in err and "restored" not in out
    assert (vault / "Home.md").read_bytes() == home
    sets = {s["id"]: s for s in json.loads(vp(vault, "history", "--json")[1])}
    assert sets[set_id]["undoneBy"] == undo["id"] and sets[undo["id"]]["undoneBy"] is None
    code, text, _ = vp(vault, "history")
    line = next(x for x in text.splitlines() if x.startswith(set_id))
    assert line.endswith(f"[undone by {undo['id']}]")
    # Undoing the undo brings the change back: the set stands again and can be undone again.
    code, _, err = vp(vault, "undo", undo["id"])
    assert code == 0, err
    assert (vault / "Home.md").read_bytes() != home
    sets = {s["id"]: s for s in json.loads(vp(vault, "history", "--json")[1])}
    assert sets[set_id]["undoneBy"] is None and sets[undo["id"]]["undoneBy"] is not None
    code, _, err = vp(vault, "undo", set_id)
    assert code == 0, err
    assert (vault / "Home.md").read_bytes() == home


def _tree(root: Path) -> list[str]:
    """Every file and folder of the vault outside .trash/ (where undone creations go)."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.relative_to(root).parts[0] != ".trash"
    )


def test_undo_removes_the_folders_its_change_set_created(vault: Path) -> None:
    (vault / "Empty").mkdir()
    before = _tree(vault)
    tool(vault, operation="move_note", target="Projects/Plan.md", destination="Archive/Old/Plan.md")
    tool(vault, operation="create_note", target="Empty/Deep/New.md", content="new")
    assert (vault / "Archive" / "Old" / "Plan.md").is_file()
    code, out, err = vp(vault, "undo", "--last")
    assert code == 0, err
    assert "moved 1 note it had created to .trash/ and removed 1 empty folder" in out
    assert (vault / "Empty").is_dir() and not (vault / "Empty" / "Deep").exists()  # existed before
    sets = json.loads(vp(vault, "history", "--json")[1])
    move = next(s for s in sets if s["summary"] == "move_note")
    code, out, err = vp(vault, "undo", move["id"])
    assert code == 0, err
    assert "removed 2 empty folders" in out
    assert _tree(vault) == before
    # Undoing that undo makes the folders again, with the note in them.
    undo = next(
        s for s in json.loads(vp(vault, "history", "--json")[1]) if s["undoOf"] == move["id"]
    )
    code, _, err = vp(vault, "undo", undo["id"])
    assert code == 0, err
    assert (vault / "Archive" / "Old" / "Plan.md").is_file()


def test_undo_keeps_a_created_folder_that_holds_something_else(vault: Path) -> None:
    tool(vault, operation="move_note", target="Projects/Plan.md", destination="Archive/Plan.md")
    (vault / "Archive" / "Mine.md").write_text("mine\n", encoding="utf-8")
    code, out, err = vp(vault, "undo", "--last")
    assert code == 0, err
    undone = r"\(recorded as change set \w+: undo that to bring the changes back\)"
    assert re.search(undone + r": restored 2 notes\.$", out.strip()), out
    assert "folder" not in out  # restored: Plan.md and Home.md (its link)
    assert (vault / "Archive" / "Mine.md").read_text(encoding="utf-8") == "mine\n"
    assert (vault / "Projects" / "Plan.md").is_file()


def test_bad_ids_and_arguments(vault: Path) -> None:
    code, _, err = vp(vault, "undo", "nope")
    assert code == 2 and "No change set 'nope'" in err and "Traceback" not in err
    code, _, err = vp(vault, "show", "nope")
    assert code == 2 and "nothing has been recorded" in err and "vaultpilot history" in err
    code, _, err = vp(vault, "undo")
    assert code == 2 and "Say which change set to undo" in err and "--last" in err
    assert "not both" not in err
    code, _, err = vp(vault, "undo", "abc", "--last")
    assert code == 2 and "not both" in err
    assert err.strip() == "error: Give either a change-set id (abc) or --last, not both."
    code, _, err = vp(vault, "undo", "")
    assert code == 2 and "The change-set id is empty" in err and "ambiguous" not in err
    code, out, _ = vp(vault, "history")
    assert code == 0 and "No changes recorded" in out


def test_undo_in_a_folder_without_data_creates_no_data_folder(vault: Path, tmp_path: Path) -> None:
    data = vault.parent / "data"
    other = tmp_path / "not-a-vault"
    other.mkdir()
    (other / "a.txt").write_text("x", encoding="utf-8")
    code, _, err = vp(other, "undo", "abc123")  # no memory.db yet at all
    assert code == 2 and "No change set 'abc123'" in err
    assert not data.exists()
    tool(vault, operation="append_note", target="Home.md", content="more")  # now there is one
    vaults = sorted(p.name for p in (data / "vaults").iterdir())
    for args in (["undo", "abc123"], ["undo", "--last"], ["history"]):
        code, out, err = vp(other, *args)
        assert code in (0, 2) and "Traceback" not in err, (out, err)
    assert sorted(p.name for p in (data / "vaults").iterdir()) == vaults


def test_a_folder_without_obsidian_is_named_once_when_first_indexed(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\n", encoding="utf-8")
    (folder / "sub" / "b.md").write_text("# B\n", encoding="utf-8")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref\n", encoding="utf-8")
    code, _, err = vp(folder, "search", "A")
    assert code == 0, err
    assert f"note: {folder} has no .obsidian/ folder: using it as a vault (2 files)" in err
    code, _, err = vp(folder, "search", "B")
    assert code == 0 and "no .obsidian/" not in err  # indexed now: said once
    vault = tmp_path / "vault2"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "a.md").write_text("# A\n", encoding="utf-8")
    code, _, err = vp(vault, "search", "A")
    assert code == 0 and "no .obsidian/" not in err


def test_a_run_undone_from_a_shell_while_still_writing_is_undone_again_later(vault: Path) -> None:
    """``vaultpilot undo run-…`` while an agent run (here its tools, on the same data folder)
    keeps writing: the later changes are marked as standing and a second undo takes them."""
    from dataclasses import replace

    from vaultpilot.locations import vault_data_dir
    from vaultpilot.tools import api, open_context

    run_id = "run-0000000000b2"
    db = vault_data_dir(vault, vault.parent / "data") / "index.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    ctx = open_context(vault, db)
    try:
        run = replace(ctx, change_set=run_id)
        api.create_note(run, "First.md", "first step")
        code, out, err = vp(vault, "undo", run_id)
        assert code == 0 and "moved 1 note it had created to .trash/." in out, (out, err)
        api.create_note(run, "Second.md", "after the undo")
    finally:
        ctx.conn.close()
        if ctx.journal is not None:
            ctx.journal.close()
    first_undo = next(s for s in json.loads(vp(vault, "history", "--json")[1]) if s["undoOf"])
    code, text, _ = vp(vault, "history")
    line = next(x for x in text.splitlines() if x.startswith(run_id))
    assert line.endswith(f"[partly undone by {first_undo['id']}: 1 later change stands]")
    listed = {s["id"]: s for s in json.loads(vp(vault, "history", "--json")[1])}
    assert listed[run_id]["undoneBy"] is None
    code, out, err = vp(vault, "undo", run_id)
    assert code == 0 and "moved 1 note it had created to .trash/." in out, (out, err)
    assert not (vault / "First.md").exists() and not (vault / "Second.md").exists()
    listed = {s["id"]: s for s in json.loads(vp(vault, "history", "--json")[1])}
    second = next(s for s in listed.values() if s["undoOf"] == run_id and s != first_undo)
    assert listed[run_id]["undoneBy"] == second["id"]
    code, text, _ = vp(vault, "history")
    line = next(x for x in text.splitlines() if x.startswith(run_id))
    assert line.endswith(f"[undone by {second['id']}]")


def test_undo_last_twice_goes_further_back(vault: Path) -> None:
    home = (vault / "Home.md").read_bytes()
    plan = (vault / "Projects" / "Plan.md").read_bytes()
    tool(vault, operation="append_note", target="Home.md", content="first")
    tool(vault, operation="append_note", target="Projects/Plan.md", content="second")
    code, _, err = vp(vault, "undo", "--last")
    assert code == 0, err
    assert (vault / "Projects" / "Plan.md").read_bytes() == plan
    assert b"first" in (vault / "Home.md").read_bytes()
    code, _, err = vp(vault, "undo", "--last")  # the first change, not a redo of the second
    assert code == 0, err
    assert (vault / "Home.md").read_bytes() == home
    assert (vault / "Projects" / "Plan.md").read_bytes() == plan
    code, out, err = vp(vault, "undo", "--last")
    assert code == 2 and "nothing left to undo" in err and "undo its undo" in err, (out, err)


def test_history_lists_a_table_and_refuses_a_limit_below_one(vault: Path) -> None:
    tool(vault, operation="delete_note", target="Home.md", confirmDestructive=True)
    tool(vault, operation="create_note", target="New.md", content="x")
    code, text, _ = vp(vault, "history")
    assert code == 0
    header, *rows = text.splitlines()
    assert header.split() == ["ID", "WHEN", "SOURCE", "OPERATIONS", "FILES"]
    assert len(rows) == 2
    # Each column starts where its header does; a delete names the note, not its trash path.
    deleted = next(r for r in rows if "delete_note" in r)
    assert deleted[header.index("FILES") :] == "Home.md"
    assert ".trash" not in text
    assert [r[header.index("SOURCE") :].split()[0] for r in rows] == ["cli", "cli"]

    code, text, _ = vp(vault, "history", "--limit", "1")
    assert code == 0 and len(text.splitlines()) == 2
    for bad in ("0", "-1"):
        code, out, err = vp(vault, "history", "--limit", bad)
        assert code == 2 and "--limit" in err and "greater than or equal to 1" in err, (out, err)


def test_an_id_matching_several_sets_names_them(vault: Path) -> None:
    ids: list[str] = []
    n = 0
    while len({i[0] for i in ids}) == len(ids):  # until two ids share their first character
        tool(vault, operation="create_note", target=f"N{n}.md", content="x")
        n += 1
        code, out, _ = vp(vault, "history", "--json", "--limit", "100")
        ids = [s["id"] for s in json.loads(out)]
    first = next(i[0] for i in ids if sum(j[0] == i[0] for j in ids) > 1)
    matching = [i for i in ids if i.startswith(first)]
    for command in ("show", "undo"):
        code, _, err = vp(vault, command, first)
        assert code == 2, err
        assert f"'{first}' matches several change sets: " in err and "give more of the id" in err
        assert all(i in err for i in matching) and "No change set" not in err
    code, _, err = vp(vault, "show", "")
    assert code == 2 and "The change-set id is empty" in err


def test_undo_after_the_trash_was_emptied(vault: Path) -> None:
    import shutil

    plan = (vault / "Projects" / "Plan.md").read_bytes()
    (vault / "Projects" / "beds.png").write_bytes(b"\x89PNG binary")
    tool(
        vault, operation="delete_folder", target="Projects", confirmDestructive=True, recursive=True
    )
    shutil.rmtree(vault / ".trash")
    code, out, err = vp(vault, "undo", "--last")
    assert code == 2 and "Projects/beds.png was emptied from the trash" in err, err
    assert "changed since" not in err and "--skip-changed" in err
    code, out, err = vp(vault, "undo", "--last", "--skip-changed")
    assert code == 0, err
    assert (vault / "Projects" / "Plan.md").read_bytes() == plan
    assert "restored 1 note and 1 folder" in out and "written again from the journal" in out
    assert "Projects/beds.png was emptied from the trash; it cannot be restored" in out
    assert "Left as they are (changed since)" not in out
