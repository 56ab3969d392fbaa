"""What `vaultpilot serve` prints at start-up, from a real index of the example vault: the vault
line, semantic search's coverage as it is (not a promise of work when there is none left), and
the no-model guidance naming the same three kinds of model as the agent view."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.semantic.conftest import HashEmbedder
from vaultpilot.index.db import connect
from vaultpilot.index.semantic import embed_pending
from vaultpilot.index.sync import sync_vault
from vaultpilot.server.banner import Banner, banner, model_status, read_coverage
from vaultpilot.server.settings import ServerSettings

from .conftest import make_settings


def _lines(settings: ServerSettings, **kw: object) -> list[str]:
    fields: dict[str, object] = {
        "settings": settings,
        "url": "http://127.0.0.1:34700",
        "login_path": "/login?token=t",
        "model": "m",
        "model_help": "",
        "key": None,
        "key_created": False,
        **kw,
    }
    return banner(Banner(**fields))  # type: ignore[arg-type]


def _notes(vault: Path) -> int:
    return sum(1 for _ in vault.rglob("*.md"))


def test_the_vault_line_keeps_its_name_apart_from_the_label(vault: Path, data_dir: Path) -> None:
    settings = make_settings({"vault": vault}, data_dir)
    lines = _lines(settings)
    assert f'  vault "vault": {vault}' in lines
    assert not any(line.startswith("  vault vault") for line in lines)


def test_coverage_before_during_and_after_embedding(vault: Path, data_dir: Path) -> None:
    settings = make_settings({"vault": vault}, data_dir, background_embedding=True)
    db = settings.index_db("vault")
    assert read_coverage(db) is None  # no index yet: nothing is made by reading
    assert not db.exists()
    before = _lines(settings, coverage={"vault": None})
    assert any("indexing at start-up, then embedding" in line for line in before)

    conn = connect(db)
    try:
        sync_vault(conn, vault)
        synced = read_coverage(db)
        assert synced is not None and synced.notes == _notes(vault) > 40
        assert synced.status.notes_pending == synced.notes
        during = "\n".join(_lines(settings, coverage={"vault": synced}))
        assert f"semantic search: 0 of {synced.notes} notes embedded; embedding" in during
        assert "embedding the rest in the background" in during

        embed_pending(conn, HashEmbedder())
    finally:
        conn.close()
    done = read_coverage(db)
    assert done is not None and done.status.complete
    after = _lines(settings, coverage={"vault": done})
    assert f"  semantic search: {done.notes} of {done.notes} notes embedded" in after
    assert not any("background" in line for line in after)

    (vault / "Inbox.md").write_text("# Inbox\n\nA new line about zeppelins.\n", encoding="utf-8")
    conn = connect(db)
    try:
        sync_vault(conn, vault)
    finally:
        conn.close()
    changed = read_coverage(db)
    assert changed is not None and changed.status.notes_pending == 1
    st = changed.status
    assert (
        f"  semantic search: {st.embedded} of {st.chunks} passages embedded, 1 new or changed "
        "note to read; embedding the rest in the background (`vaultpilot status` shows how far)"
    ) in _lines(settings, coverage={"vault": changed})

    off = make_settings({"vault": vault}, data_dir, background_embedding=False)
    assert "`vaultpilot embed` embeds the rest" in "\n".join(
        _lines(off, coverage={"vault": synced})
    )


def test_two_vaults_each_get_their_coverage_line(vault: Path, data_dir: Path) -> None:
    settings = make_settings({"notes": vault, "work": vault.parent}, data_dir)
    text = "\n".join(_lines(settings, coverage={"notes": None, "work": None}))
    assert 'vault "notes"' in text and 'semantic search in "notes":' in text
    assert 'semantic search in "work":' in text


def test_no_model_guidance_names_ollama_openai_and_anthropic(
    vault: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(config))
    settings = make_settings({"vault": vault}, data_dir, config_path=config)
    model, help_text = model_status(settings)
    assert model is None
    for needed in ("ollama pull", "OPENAI_API_KEY", "VAULTPILOT_PROVIDER=anthropic",
                   "ANTHROPIC_API_KEY", "vaultpilot[anthropic]", str(config)):  # fmt: skip
        assert needed in help_text, needed
    lines = _lines(settings, model=None, model_help=help_text)
    assert any("Anthropic" in line for line in lines)
    assert any("restart the server" in line for line in lines)
