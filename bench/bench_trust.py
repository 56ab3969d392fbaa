"""Trust benchmarks: request tokens of edit_note against update_note.

    .venv/bin/python bench/bench_trust.py tokens

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
import sys
import tempfile
from pathlib import Path
from typing import Any

from vaultpilot.tools import call_tool, open_context
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("what", choices=["tokens"])
    args = parser.parse_args()
    if args.what == "tokens":
        print(json.dumps(tokens(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
