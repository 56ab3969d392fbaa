"""Every shell example in README.md, run as written against copies of the example vault.

The commands run with bash from a folder laid out like the repository (``examples/vault`` is a
copy, ``.venv`` is this interpreter's environment) with ``HOME`` pointing at a folder where
``~/Notes``, ``~/Work`` and ``~/Home`` are copies of the example vault too. Remote pieces are
stood in for: the model is the scripted OpenAI-compatible server (the README's ``export`` of an
Ollama URL and model is applied, then pointed at it), and the server port is any free one.
Commands that serve until stopped (``serve``, ``mcp`` over stdio) must start and print their
banner (or answer on stdin's end); ``make`` lines are what the test suite itself runs. Each
command must exit 0 without a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, REPO
from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn

README = REPO / "README.md"
BIN = Path(sys.executable).parent
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def readme_commands() -> list[str]:
    out: list[str] = []
    for block in _BLOCK.findall(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()  # drop the comment
            if command and not command.startswith("#"):
                out.append(command)
    return out


COMMANDS = readme_commands()


def _bash(command: str, repo: Path, env: dict[str, str], *, timeout: float) -> tuple[int, str]:
    """Run one README line as a shell runs it; its exit code and everything it printed."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_readme_has_examples_and_points_only_inside_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(COMMANDS) >= 25
    assert "../shared" not in text and "spec/0" not in text
    prose = re.sub(r"`[^`\n]*`", "", _BLOCK.sub("", text))  # links, not code that shows links
    for target in re.findall(r"\]\(([^)#]+)\)", prose):
        if not target.startswith(("http://", "https://", "<")):
            assert (REPO / target).exists(), f"README links to a missing file: {target}"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("readme")
    repo = root / "repo"
    shutil.copytree(EXAMPLE_VAULT, repo / "examples" / "vault")
    if shutil.which("git"):  # like the repository itself (git_agent's examples read its log)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
        subprocess.run([*git, "add", "."], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "example"], cwd=repo, check=True)
    (repo / ".venv").mkdir()
    (repo / ".venv" / "bin").symlink_to(BIN)
    home = root / "home"
    for name in ("Notes", "Work", "Home"):
        shutil.copytree(EXAMPLE_VAULT, home / name)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VAULTPILOT_", "OPENAI_"))},
        "HOME": str(home),
        "VAULTPILOT_DATA_DIR": str(root / "data"),
        "VAULTPILOT_CONFIG": str(root / "config.toml"),
        "VAULTPILOT_PORT": "0",
        "VAULTPILOT_MAX_RETRIES": "0",
        "COLUMNS": "160",
    }
    return repo, env


def _exports(command: str, env: dict[str, str]) -> None:
    for word in shlex.split(command)[1:]:
        name, _, value = word.partition("=")
        env[name] = os.path.expanduser(value)


def _serve(command: str, repo: Path, env: dict[str, str]) -> str:
    """A command that serves until stopped: it must print its banner, then stop on Ctrl-C."""
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=repo,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("Press Ctrl+C to stop"):
            break
    proc.send_signal(signal.SIGINT)
    try:
        rest, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rest, _ = proc.communicate()
    out = "".join(lines) + (rest or "")
    assert any(line.startswith("Press Ctrl+C to stop") for line in lines), out
    return out


@pytest.mark.slow
def test_every_shell_example_in_the_readme_works(place: tuple[Path, dict[str, str]]) -> None:
    repo, env = place
    turns = [ScriptedTurn(text=f"Answer {i}.") for i in range(10)]
    with ScriptedModelServer(turns) as model:
        ran = 0
        for command in COMMANDS:
            if command.startswith("make "):
                continue  # make run / make test / make plugin: what this suite runs
            if command.startswith("export "):
                _exports(command, env)
                if "VAULTPILOT_BASE_URL" in env:
                    env["VAULTPILOT_BASE_URL"] = model.base_url  # the model is remote
                    env.setdefault("OPENAI_API_KEY", "test-key")
                continue
            if " plugin install" in command and not (
                (REPO / "obsidian-plugin" / "main.js").exists() or shutil.which("npm")
            ):
                continue  # needs the built plugin or npm to build it (make plugin)
            if re.search(r"vaultpilot (serve|mcp --vault)", command):
                out = _serve(command, repo, env) if " serve" in command else ""
                if " mcp " in command:
                    code, out = _bash(command, repo, env, timeout=120)
                    assert code == 0, f"{command}\n{out}"
                assert "Traceback" not in out, f"{command}\n{out}"
                ran += 1
                continue
            code, out = _bash(command, repo, env, timeout=300)
            assert code == 0, f"`{command}` exited {code}:\n{out}"
            assert "Traceback" not in out, f"{command}\n{out}"
            ran += 1
        assert ran >= 20
