"""The naive indexer the full index is measured against: what a weekend script would do.

    .venv/bin/python bench/naive_index.py VAULT DB

One pass in one process: walk the vault (dot-folders skipped), read each ``.md`` file, split
off the frontmatter and load it with PyYAML's safe loader (libyaml's C one when present), find
``[[wikilinks]]``, ``[md](links)`` and ``#tags`` with regular expressions (no code blocks,
comments, escapes or Obsidian's rules), insert files, links and tags, and the text into an
FTS5 table; then resolve link targets by lowercased file name. Prints a JSON summary. It is
a yardstick, not a reference: its results are not Obsidian's.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import time
from datetime import date, datetime
from pathlib import Path

import yaml

WIKI = re.compile(r"!?\[\[([^\]|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")
MD = re.compile(r"!?\[[^\]]*\]\(([^)\s]+\.md)\)")
TAG = re.compile(r"(?<![\w/])#([A-Za-z][\w/-]*)")
# libyaml's C loader when PyYAML was built with it (the wheels are): the fast, obvious choice.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)

SCHEMA = """
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE, title TEXT, mtime REAL,
                    size INTEGER, frontmatter TEXT);
CREATE TABLE links (source_id INTEGER, target TEXT, target_id INTEGER);
CREATE TABLE tags (file_id INTEGER, tag TEXT);
CREATE INDEX links_target ON links(target_id);
CREATE INDEX tags_tag ON tags(tag);
CREATE VIRTUAL TABLE fts USING fts5(title, body);
"""


def _default(value: object) -> str:
    return value.isoformat() if isinstance(value, date | datetime) else str(value)


def index(root: Path, db: Path) -> dict[str, float]:
    started = time.perf_counter()
    if db.exists():
        db.unlink()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA)
    by_name: dict[str, int] = {}
    links: list[tuple[int, str]] = []
    notes = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.endswith(".md"):
                continue
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            st = os.stat(full)
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
            meta: object = None
            body = text
            m = FRONT.match(text)
            if m:
                try:
                    meta = yaml.load(m.group(1), Loader=LOADER)
                except yaml.YAMLError:
                    meta = None
                body = text[m.end() :]
            title = name[:-3]
            cur = conn.execute(
                "INSERT INTO files (path, title, mtime, size, frontmatter) VALUES (?, ?, ?, ?, ?)",
                (rel, title, st.st_mtime, st.st_size, json.dumps(meta, default=_default)),
            )
            fid = cur.lastrowid
            assert fid is not None
            by_name[title.lower()] = fid
            targets = [t.strip() for t in WIKI.findall(body)]
            targets += [os.path.basename(t.replace("%20", " "))[:-3] for t in MD.findall(body)]
            links.extend((fid, t) for t in targets)
            tags = set(TAG.findall(body))
            if isinstance(meta, dict) and isinstance(meta.get("tags"), list):
                tags.update(str(t) for t in meta["tags"])
            conn.executemany("INSERT INTO tags VALUES (?, ?)", [(fid, t) for t in tags])
            conn.execute(
                "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", (fid, title, body)
            )
            notes += 1
    conn.executemany(
        "INSERT INTO links VALUES (?, ?, ?)",
        [(fid, t, by_name.get(t.rsplit("/", 1)[-1].lower())) for fid, t in links],
    )
    conn.commit()
    conn.close()
    return {"seconds": time.perf_counter() - started, "notes": notes, "links": len(links)}


if __name__ == "__main__":
    print(json.dumps(index(Path(sys.argv[1]), Path(sys.argv[2]))))
