"""The agent view's built page: where its static files are, for a transport to serve.

The files under ``static/`` are built from ``web/`` at the repository root (``make web``) and
committed, so serving the page needs neither node nor npm; ``tests/web/test_bundle.py`` proves
they equal a fresh build of the sources. This package reads nothing and imports no layer.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLE_FILES", "STATIC_DIR"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The folder holding the built page (serve it at ``/``)."""

BUNDLE_FILES = ("index.html", "app.js", "app.css")
"""The files of the built page, relative to ``STATIC_DIR``."""
