"""The agent view's files as the server sends them, and the page for a refused login link.

``static_files()`` reads the built page (from ``vaultpilot.web.STATIC_DIR``: ``index.html``,
``app.js``, ``app.css``) once, when the application is made, so serving ``/`` costs no disk
read; a missing file is a ``SetupError`` naming it (a broken install), not a 404 later.
``login_refused_page(why)`` is a small self-contained HTML page saying why a login link was
refused and what to do (run ``vaultpilot open``); it echoes nothing from the request.
"""

from __future__ import annotations

import html
from pathlib import Path

from vaultpilot.errors import SetupError, map_os_errors
from vaultpilot.server.sessions import LINK_TTL_S, Refusal
from vaultpilot.web import BUNDLE_FILES, STATIC_DIR

__all__ = ["login_refused_page", "static_files"]

_FIX = "Reinstall vaultpilot (or run `make web` in a checkout)."
_MEDIA = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
_WHY: dict[Refusal, str] = {
    "used": "This login link was already used: each link signs in once.",
    "expired": f"This login link has expired (links last {LINK_TTL_S / 60:g} minutes).",
    "unknown": "This login link is not valid (or the server restarted since it was made).",
}


def static_files(folder: Path = STATIC_DIR) -> dict[str, tuple[bytes, str]]:
    """Each file of the built page in ``folder``: its bytes and media type."""
    out: dict[str, tuple[bytes, str]] = {}
    for name in BUNDLE_FILES:
        path = folder / name
        with map_os_errors(path, "read the agent view's file", {OSError: SetupError}, advice=_FIX):
            out[name] = (path.read_bytes(), _MEDIA[path.suffix])
    return out


def login_refused_page(why: Refusal) -> str:
    message = html.escape(_WHY[why])
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>vaultpilot: sign in"
        "</title><meta name=viewport content='width=device-width, initial-scale=1'></head>"
        "<body style='font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto'>"
        f"<h1>Sign in to vaultpilot</h1><p>{message}</p>"
        "<p>Run <code>vaultpilot open</code> in a terminal for a new link (it opens the "
        "browser when it can), or paste the API key from the server's key file into the "
        "agent view.</p></body></html>"
    )
