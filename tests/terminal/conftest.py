"""A real terminal for the chat: tmux (120 columns unless a test asks for fewer), the real
``vaultpilot`` command, the scripted OpenAI-compatible model server, a private copy of the
example vault.

``terminal(turns)`` starts the scripted server with ``turns`` and returns a ``Terminal`` whose
``start(*args)`` runs ``vaultpilot ARGS`` in a new tmux session inside the vault; ``send`` types
keys, ``screen`` reads what is on screen, ``wait_for`` waits for a text to show. The tests skip,
saying why, when tmux is not installed (``make unit`` installs it where it can).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn

VAULTPILOT = Path(sys.executable).parent / "vaultpilot"
WIDTH, HEIGHT = 120, 50
TEST_NOTE = "# Test\n\nThe second line.\n"


class Terminal:
    def __init__(
        self, vault: Path, env: dict[str, str], server: ScriptedModelServer, width: int = WIDTH
    ) -> None:
        self.vault = vault
        self.env = env
        self.server = server
        self.width = width
        self.socket = f"vp-{uuid.uuid4().hex[:10]}"
        self.session = "chat"
        self.started = False

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        return done.stdout

    def start(self, *args: str) -> None:
        """Run ``vaultpilot ARGS`` in the vault; a second call runs it again in a new window."""
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        command = f"cd {shlex.quote(str(self.vault))} && env {exports} " + " ".join(
            shlex.quote(a) for a in (str(VAULTPILOT), *args)
        )
        if not self.started:
            self._tmux(
                "new-session",
                "-d",
                "-s",
                self.session,
                "-x",
                str(self.width),
                "-y",
                str(HEIGHT),
                "bash",
                "--norc",
                "--noprofile",
            )
            self._tmux("set-option", "-t", self.session, "remain-on-exit", "on")
            self.started = True
        else:
            self._tmux("kill-window", "-a", "-t", self.session)
            self._tmux("respawn-pane", "-k", "-t", self.session, "bash", "--norc", "--noprofile")
        self._tmux("send-keys", "-t", self.session, "clear; " + command, "Enter")

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.session, "-l", text)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.session)

    def rows(self) -> list[str]:
        """The terminal's rows as shown, a wrapped line on several rows (``screen`` joins them)."""
        return self._tmux("capture-pane", "-p", "-S", "-200", "-t", self.session).splitlines()

    def wait_for(self, text: str, timeout: float = 20.0, *, after: int = 0) -> str:
        """Wait until ``text`` is on screen (at or after character ``after``); return the
        screen. Fails with the screen when it does not show up."""
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen[after:]:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{text!r} did not appear within {timeout} s; the screen:\n{screen}")

    def wait_prompt(self, count: int = 1, timeout: float = 30.0) -> str:
        """Wait until the prompt ("› " at a line's start) has been shown ``count`` times."""
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if sum(1 for line in screen.splitlines() if line.startswith("›")) >= count:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"prompt #{count} did not appear within {timeout} s:\n{screen}")

    def shell_is_back(self) -> bool:
        """True when vaultpilot has exited (the shell's prompt is shown again)."""
        lines = [line for line in self.screen().splitlines() if line.strip()]
        return bool(lines) and lines[-1].rstrip().endswith(("$", "#"))

    def close(self) -> None:
        if self.started:
            self._tmux("kill-server")


@pytest.fixture
def terminal(
    example_vault: Path, tmp_path: Path
) -> Iterator[Callable[[Sequence[ScriptedTurn]], Terminal]]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make unit installs it with apt-get where it can)")
    if not VAULTPILOT.exists():
        pytest.skip(f"{VAULTPILOT} is missing: install the package (make test does)")
    (example_vault / "test.md").write_text(TEST_NOTE, encoding="utf-8")
    made: list[tuple[Terminal, ScriptedModelServer]] = []

    def make(turns: Sequence[ScriptedTurn], width: int = WIDTH) -> Terminal:
        server = ScriptedModelServer(turns).start()
        env = {
            "VAULTPILOT_DATA_DIR": str(tmp_path / "data"),
            "VAULTPILOT_CONFIG": str(tmp_path / "config.toml"),
            "VAULTPILOT_MODEL": "scripted",
            "VAULTPILOT_BASE_URL": server.base_url,
            "VAULTPILOT_MAX_RETRIES": "0",
            "OPENAI_API_KEY": "test-key",
            "TERM": "xterm-256color",
            "HOME": str(tmp_path / "home"),
            "PATH": "/usr/bin:/bin",
        }
        term = Terminal(example_vault, env, server, width)
        made.append((term, server))
        return term

    yield make
    for term, server in made:
        term.close()
        server.stop()
