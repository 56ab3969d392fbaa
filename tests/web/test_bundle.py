"""The committed page equals a fresh build of web/, and stays small.

``make run`` serves ``src/vaultpilot/web/static`` without node; this proves those files are what
``web/`` builds (esbuild's output is deterministic for the same sources and lockfile). The build
check needs node and ``web/node_modules`` (``make test`` runs ``npm ci`` when npm is there).
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from vaultpilot.web import BUNDLE_FILES, STATIC_DIR

WEB = Path(__file__).resolve().parents[2] / "web"
MAX_GZIPPED = 200 * 1024


def test_the_committed_bundle_is_a_fresh_build_of_the_sources(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the committed bundle cannot be rebuilt to compare")
    if not (WEB / "node_modules" / "esbuild").is_dir():
        pytest.skip("web/node_modules is missing: run `npm ci` in web/ (make test does)")
    out = tmp_path / "static"
    done = subprocess.run(
        [node, "build.mjs", str(out)], cwd=WEB, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    stale = [n for n in BUNDLE_FILES if (out / n).read_bytes() != (STATIC_DIR / n).read_bytes()]
    assert stale == [], f"rebuild the page with `make web` and commit it: {stale} differ"
    assert sorted(p.name for p in out.iterdir()) == sorted(BUNDLE_FILES)


def test_the_bundle_is_under_200_kb_gzipped() -> None:
    sizes = {n: len(gzip.compress((STATIC_DIR / n).read_bytes(), 9)) for n in BUNDLE_FILES}
    assert sum(sizes.values()) <= MAX_GZIPPED, sizes


def test_the_page_loads_only_its_own_files() -> None:
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    assert 'src="app.js"' in html and 'href="app.css"' in html
    assert "http" not in html.replace("http-equiv", "")  # nothing from another origin
