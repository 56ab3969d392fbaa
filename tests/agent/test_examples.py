"""The scripted runs shipped in examples/scripted play through ``vaultpilot ask`` on a copy of the
example vault: every tool call succeeds, the run ends done, and the vault ends as the script says.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from vaultpilot.agent.testing import Script, ScriptedModelServer
from vaultpilot.cli import agent_cmds

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "examples" / "scripted").glob("*.json"))

app = typer.Typer(pretty_exceptions_enable=False)
agent_cmds.register(app)


def _play(script: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    loaded = Script.model_validate_json(script.read_text(encoding="utf-8"))
    fast = Script(
        model=loaded.model,
        turns=[t.model_copy(update={"chunk_delay": 0.0}) for t in loaded.turns],
    )
    with ScriptedModelServer(fast) as server:
        monkeypatch.setenv("VAULTPILOT_BASE_URL", server.base_url)
        result = CliRunner().invoke(
            app, ["ask", "do what the script does", "--vault", str(vault), "--json", "--yes"]
        )
        assert result.exit_code == 0, result.output
        assert server.remaining == 0, "the run ended before the script did"
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


@pytest.fixture
def setting(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VAULTPILOT_CONFIG", str(tmp_path / "config.toml"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTPILOT_MODEL", "scripted")
    monkeypatch.setenv("VAULTPILOT_MAX_RETRIES", "0")
    vault = tmp_path / "vault"
    shutil.copytree(REPO / "examples" / "vault", vault)
    return vault


def test_examples_ship_scripts() -> None:
    assert SCRIPTS, "examples/scripted holds no script"


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_a_shipped_script_plays_without_a_failed_step(
    script: Path, setting: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _play(script, setting, monkeypatch)
    results = [e for e in events if e["kind"] == "tool_result"]
    assert results and all(r["success"] for r in results), [r for r in results if not r["success"]]
    assert events[-1]["kind"] == "run_finished" and events[-1]["reason"] == "done"


def test_the_october_review_tags_and_links_the_meetings(
    setting: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _play(REPO / "examples" / "scripted" / "review-october-meetings.json", setting, monkeypatch)
    review = (setting / "Reviews" / "October meetings review.md").read_text(encoding="utf-8")
    october = sorted((setting / "Meetings").glob("* 2025-10-*.md"))
    assert len(october) == 5
    for note in october:
        assert "reviewed" in note.read_text(encoding="utf-8"), note.name
        assert f"[[{note.stem}]]" in review
    assert "reviewed" not in (setting / "Meetings" / "Mobile App Go-No-Go 2025-11-05.md").read_text(
        encoding="utf-8"
    )
