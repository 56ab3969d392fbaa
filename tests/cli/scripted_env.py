"""The environment a CLI test runs the agent in: its own data and config folders and the
scripted model server (``vaultpilot.agent.testing``) as the model, without colours."""

from __future__ import annotations

from pathlib import Path


def scripted_env(
    tmp_path: Path, base_url: str | None = None, *, columns: int = 200
) -> dict[str, str]:
    env = {
        "VAULTPILOT_DATA_DIR": str(tmp_path / "data"),
        "VAULTPILOT_CONFIG": str(tmp_path / "config.toml"),
        "VAULTPILOT_MODEL": "scripted",
        "VAULTPILOT_MAX_RETRIES": "0",
        "OPENAI_API_KEY": "test-key",
        "COLUMNS": str(columns),
        "NO_COLOR": "1",
    }
    if base_url is not None:
        env["VAULTPILOT_BASE_URL"] = base_url
    return env
