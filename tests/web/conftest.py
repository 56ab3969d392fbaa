"""Browser fixtures: Debian's chromium driven by Playwright for Python, no browser download.

The tests skip, saying why, when Playwright or ``/usr/bin/chromium`` is missing (``make test``
installs both where it can). ``shot(page, name)`` saves a PNG of the page under
``test-artefacts/web/`` at the repository root (gitignored) for a person to look at.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("VAULTPILOT_CHROMIUM", "/usr/bin/chromium"))
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artefacts" / "web"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# Per module, not per session: Playwright's sync API keeps an event loop running in this
# thread while it is open, and tests of other folders run after these call asyncio.run().
@pytest.fixture(scope="module")
def playwright_session() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[dev]' (make test does)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (make test does as root)")
    with sync_playwright() as p:
        yield p


@pytest.fixture
def browser(playwright_session: Any) -> Iterator[Any]:
    # A browser per test: Chromium keeps its WebSocket and connection state per process, and a
    # page of an earlier test reconnecting to its stopped server could hold up the next one's.
    b = playwright_session.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, color_scheme="light")
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.page_errors = errors
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def shot() -> Callable[[Any, str], Path]:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)

    def save(page: Any, name: str) -> Path:
        path = ARTEFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=False)
        return path

    return save
