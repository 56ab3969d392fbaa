"""Trust benchmarks: request tokens of edit_note against update_note; the change journal.

    .venv/bin/python bench/bench_trust.py tokens
    .venv/bin/python bench/bench_trust.py journal

``journal``: a 100-note ``bulk_tag`` timed with and without the change journal (median of
several rounds on fresh copies of the vault), and the undo of that 100-note change set.

The canonical task: change one line of a 5 KB note. Both calls run against a real vault and a
real index through ``call_tool`` (as every transport calls the tools), and must leave the very
same bytes on disk; then the arguments each call sends (the JSON the model writes, which also
stays in every later request of the run) are counted with the project's token estimate (about
four characters of JSON per token, ``tools.tokens``) and, when ``tiktoken`` is installed, with
its ``cl100k_base`` encoding.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vaultpilot.locations import vault_data_dir
from vaultpilot.tools import call_tool, open_context
from vaultpilot.tools.manage import undo_change_set
from vaultpilot.tools.tokens import estimate_tokens

TARGET_BYTES = 5_000


def five_kb_note() -> str:
    """A realistic 5 KB note: frontmatter, headings, tasks, prose with links."""
    parts = ["---\ntags: [project, garden]\nstatus: active\n---\n# Garden plan\n"]
    i = 0
    while sum(len(p) for p in parts) < TARGET_BYTES:
        i += 1
        parts.append(
            f"\n## Bed {i}\n- [ ] sow row {i} with [[Seeds/Carrots]] before the frost\n"
            f"- [ ] water bed {i} every second morning, more when it is dry\n"
            f"Notes on bed {i}: the soil was turned in spring and mulched with leaves; "
            "compost from the heap went in last autumn.\n"
        )
    return "".join(parts)


def _count(arguments: dict[str, Any]) -> dict[str, int]:
    text = json.dumps(arguments, ensure_ascii=False)
    out = {"chars": len(text), "estimate": estimate_tokens(text)}
    try:
        import tiktoken  # optional: only for a second count
    except ImportError:
        return out
    out["cl100k"] = len(tiktoken.get_encoding("cl100k_base").encode(text))
    return out


def tokens() -> dict[str, Any]:
    note = five_kb_note()
    old_line = "- [ ] water bed 7 every second morning, more when it is dry"
    new_line = "- [x] water bed 7 every second morning, more when it is dry"
    assert note.count(old_line) == 1
    wanted = note.replace(old_line, new_line)
    calls = {
        "update_note": {"operation": "update_note", "target": "Garden.md", "content": wanted},
        "edit_note": {
            "operation": "edit_note",
            "target": "Garden.md",
            "edits": [{"oldText": "- [ ] water bed 7", "newText": "- [x] water bed 7"}],
        },
    }
    counts: dict[str, dict[str, int]] = {}
    for name, arguments in calls.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            root.mkdir()
            (root / "Garden.md").write_text(note, encoding="utf-8")
            ctx = open_context(root, Path(tmp) / "index.db")
            try:
                result = call_tool(ctx, "obsidian_vault_manager", arguments)
            finally:
                ctx.conn.close()
            assert result["success"], result
            assert (root / "Garden.md").read_text(encoding="utf-8") == wanted
        counts[name] = _count(arguments)
    saved = {
        key: round(100 * (1 - counts["edit_note"][key] / counts["update_note"][key]), 1)
        for key in counts["edit_note"]
    }
    return {"note_bytes": len(note.encode()), "counts": counts, "saved_percent": saved}


def _journal_round(base: Path, tmp: Path, journal: bool) -> tuple[float, float | None]:
    """One bulk_tag of 100 notes on a fresh copy; with the journal, also its undo."""
    root = tmp / "vault"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(base, root)
    db = (vault_data_dir(root, tmp / "data") if journal else tmp / "plain") / "index.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    ctx = open_context(root, db)
    try:
        ctx.fresh()  # index first: the timing is the write, not the first sync
        names = [f"Notes/n{i:03}.md" for i in range(100)]
        start = time.perf_counter()
        result = call_tool(
            ctx,
            "obsidian_vault_manager",
            {"operation": "bulk_tag", "targets": names, "metadata": {"tags": ["reviewed"]}},
        )
        tag_s = time.perf_counter() - start
        assert result["success"] and not result.get("failures"), result
        undo_s = None
        if journal:
            start = time.perf_counter()
            _, _, report = undo_change_set(ctx, None)
            undo_s = time.perf_counter() - start
            assert len(report.restored) == 100
    finally:
        ctx.conn.close()
        if ctx.journal is not None:
            ctx.journal.close()
    return tag_s, undo_s


def journal_bench(rounds: int = 7) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        (base / "Notes").mkdir(parents=True)
        body = five_kb_note()
        for i in range(100):
            (base / "Notes" / f"n{i:03}.md").write_text(body, encoding="utf-8")
        plain: list[float] = []
        logged: list[float] = []
        undos: list[float] = []
        for _ in range(rounds):  # interleaved, so drift hits both sides alike
            plain.append(_journal_round(base, Path(tmp) / "run", False)[0])
            tag_s, undo_s = _journal_round(base, Path(tmp) / "run", True)
            logged.append(tag_s)
            undos.append(undo_s or 0.0)
    p, j = statistics.median(plain), statistics.median(logged)
    return {
        "notes": 100,
        "note_bytes": len(body.encode()),
        "rounds": rounds,
        "bulk_tag_s": {"without_journal": round(p, 4), "with_journal": round(j, 4)},
        "journal_overhead_percent": round(100 * (j / p - 1), 1),
        "undo_100_notes_s": {
            "median": round(statistics.median(undos), 4),
            "max": round(max(undos), 4),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("what", choices=["tokens", "journal"])
    args = parser.parse_args()
    if args.what == "tokens":
        print(json.dumps(tokens(), indent=2))
    else:
        print(json.dumps(journal_bench(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
