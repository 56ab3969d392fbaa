"""Tests for bench/synth_vault.py, the synthetic vault generator used by the benchmarks."""

from __future__ import annotations

import importlib.util
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote

import pytest

_SRC = Path(__file__).resolve().parents[1] / "bench" / "synth_vault.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("synth_vault", _SRC)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["synth_vault"] = module
    spec.loader.exec_module(module)
    return module


sv = _load()

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```$", re.M | re.S)
INLINE = re.compile(r"`([^`\n]+)`")
EMBED = re.compile(r"!\[\[([^\]]+)\]\]")
WIKI = re.compile(r"(?<!!)\[\[([^\]]+)\]\]")
MDLINK = re.compile(r"(?<![!\]])\[([^\]\[]+)\]\(([^)\s]+\.md)\)")
TAG = re.compile(r"(?<![\w/#&])#[A-Za-z][\w/-]*")
HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)
BLOCK = re.compile(r" \^([a-z0-9]{6})$", re.M)
RELATED = re.compile(r'^related: "\[\[([^\]]+)\]\]"$', re.M)
DECOY = re.compile(r"\[\[[^\]]*\]\]|(?<![\w#])#[A-Za-z][\w/-]*|\[[^\]\[]+\]\([^)]*\)")


def _snapshot(root: Path) -> list[tuple[str, bytes | None]]:
    return sorted(
        (p.relative_to(root).as_posix(), None if p.is_dir() else p.read_bytes())
        for p in root.rglob("*")
    )


def _fm_tags(fm: str) -> list[str]:
    lines = fm.split("\n")
    assert lines[0].startswith("tags:")
    if lines[0].startswith("tags: ["):
        return lines[0][7:-1].split(", ")
    return [ln[4:] for ln in lines[1:] if ln.startswith("  - ")][: _run(lines[1:])]


def _run(lines: list[str]) -> int:
    return next((i for i, ln in enumerate(lines) if not ln.startswith("  - ")), len(lines))


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("synth") / "vault"
    return root, sv.generate(root, 300, seed=42)


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path: Path) -> None:
    a = sv.generate(tmp_path / "a", 120, seed=7)
    b = sv.generate(tmp_path / "b", 120, seed=7)
    c = sv.generate(tmp_path / "c", 120, seed=8)
    snap_a = _snapshot(tmp_path / "a")
    assert a == b
    assert snap_a == _snapshot(tmp_path / "b")
    assert snap_a != _snapshot(tmp_path / "c")
    assert a != c


def test_refuses_non_empty_or_file_target(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.md").write_text("mine")
    with pytest.raises(ValueError, match="refusing"):
        sv.generate(tmp_path / "full", 10)
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.md"]
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="refusing"):
        sv.generate(tmp_path / "afile", 10)
    with pytest.raises(ValueError):
        sv.generate(tmp_path / "zero", 0)
    (tmp_path / "empty").mkdir()
    assert sv.generate(tmp_path / "empty", 5).notes == 5


def test_layout_and_size_distribution(vault: tuple[Path, Any]) -> None:
    root, stats = vault
    notes = sorted(root.rglob("*.md"))
    assert len(notes) == stats.notes == 300
    depths = Counter(len(p.relative_to(root).parts) - 1 for p in notes)
    assert set(depths) <= {1, 2, 3, 4} and len(depths) >= 2
    assert stats.folders == sum(1 for p in root.rglob("*") if p.is_dir())
    assert 8 <= stats.folders <= 60
    sizes = sorted(p.stat().st_size for p in notes)
    assert sizes[len(sizes) // 2] == stats.size_median and sizes[-1] == stats.size_max
    assert 1100 <= statistics.median(sizes) <= 2000
    assert stats.size_p99 >= 3 * stats.size_median
    assert stats.size_max <= sv.MAX_BYTES
    all_files = [p for p in root.rglob("*") if p.is_file()]
    assert stats.total_bytes == sum(p.stat().st_size for p in all_files)
    assert stats.attachments == len(list((root / "attachments").glob("*.png")))
    basenames = Counter(p.stem.lower() for p in notes)
    shared = sum(c for c in basenames.values() if c > 1)
    assert shared == stats.duplicate_basenames > 0
    assert 0.7 * 300 <= stats.frontmatter_notes <= 0.9 * 300


def _body_without_code(text: str, c: Counter[str]) -> str:
    """Counts a note's frontmatter and code into ``c``; its body with the code taken out."""
    assert text.isascii() and "\r" not in text
    if text.startswith("---\n"):
        fm, text = text[4:].split("\n---\n", 1)
        c["frontmatter_notes"] += 1
        c["property_links"] += len(RELATED.findall(fm))
        c["frontmatter_tags"] += len(_fm_tags(fm))
    for body in FENCE.findall(text):
        c["code_blocks"] += 1
        c["code_decoys"] += len(DECOY.findall(body))
    text = FENCE.sub("", text)
    for code in INLINE.findall(text):
        c["inline_code"] += 1
        c["code_decoys"] += len(DECOY.findall(code))
    return INLINE.sub("", text)


def test_counts_match_regex_outside_code(vault: tuple[Path, Any]) -> None:
    root, stats = vault
    notes = sorted(root.rglob("*.md"))
    paths = {p.relative_to(root).with_suffix("").as_posix().lower(): p for p in notes}
    stems = Counter(p.stem.lower() for p in notes)
    images = {p.name for p in (root / "attachments").iterdir()}
    headings: dict[Path, set[str]] = {}
    blocks: dict[Path, set[str]] = {}
    bodies: dict[Path, str] = {}
    c: Counter[str] = Counter()
    for p in notes:
        text = _body_without_code(p.read_text(encoding="utf-8"), c)
        bodies[p] = text
        headings[p] = {h for _, h in HEADING.findall(text)}
        blocks[p] = set(BLOCK.findall(text))
        c["headings"] += len(HEADING.findall(text))
        c["block_ids"] += len(BLOCK.findall(text))

    def resolve(target: str) -> Path | None:
        name, _, sub = target.split("|", maxsplit=1)[0].partition("#")
        key = name.lower()
        note = paths.get(key)
        if note is None and stems[key] == 1:
            note = next(p for p in notes if p.stem.lower() == key)
        assert stems[key] <= 1 or "/" in name, f"ambiguous link {target!r}"
        if note is not None and sub:
            ok = sub[1:] in blocks[note] if sub.startswith("^") else sub in headings[note]
            assert ok, f"{target!r}: missing heading/block in {note}"
        return note

    for p, text in bodies.items():
        if p.read_text(encoding="utf-8").startswith("---\n"):
            fm = p.read_text(encoding="utf-8")[4:].split("\n---\n", 1)[0]
            c["unresolved_links"] += sum(resolve(t) is None for t in RELATED.findall(fm))
        for target in EMBED.findall(text):
            c["embeds"] += 1
            name = target.split("|")[0]
            assert name in images if name.endswith(".png") else resolve(name) is not None
        text = EMBED.sub(" ", text)
        for target in WIKI.findall(text):
            c["wikilinks"] += 1
            c["unresolved_links"] += resolve(target) is None
        text = WIKI.sub(" ", text)
        for _, href in MDLINK.findall(text):
            c["markdown_links"] += 1
            c["unresolved_links"] += unquote(href)[:-3].lower() not in paths
        text = MDLINK.sub(" ", text)
        c["inline_tags"] += len(TAG.findall(text))
    assert len(c) == 13
    for key, value in c.items():
        assert getattr(stats, key) == value, key
    assert stats.wikilinks > 3 * 300 and stats.code_decoys > 0 and stats.embeds > 0
    links = stats.wikilinks + stats.markdown_links + stats.property_links
    assert 0.01 <= stats.unresolved_links / links <= 0.06


def test_frontmatter_is_valid_yaml(vault: tuple[Path, Any]) -> None:
    yaml = pytest.importorskip("yaml")
    root, _ = vault
    seen = 0
    for p in sorted(root.rglob("*.md")):
        text = p.read_text(encoding="utf-8")
        if not text.startswith("---\n"):
            continue
        seen += 1
        data = yaml.safe_load(text[4:].split("\n---\n", 1)[0])
        assert isinstance(data["tags"], list) and data["tags"]
        assert str(data["created"]) <= str(data["updated"])
        assert isinstance(data["priority"], int) and isinstance(data["status"], str)
        assert all(isinstance(a, str) for a in data.get("aliases", []))
        assert str(data.get("related", "[[x]]")).startswith("[[")
        assert _fm_tags(text[4:]) == data["tags"]
    assert seen > 50


def test_link_targets_follow_a_power_law(vault: tuple[Path, Any]) -> None:
    root, _ = vault
    text = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.md"))
    counts = Counter(t.split("|")[0].split("#")[0] for t in WIKI.findall(FENCE.sub("", text)))
    top = [n for _, n in counts.most_common()]
    assert top[0] >= 10 * statistics.median(top)


def test_vocabulary_and_queries() -> None:
    vocab = sv.vocabulary()
    assert len(vocab) == len(set(vocab)) == 2000
    assert all(w.isascii() and w.isalpha() and w.islower() for w in vocab)
    queries = sv.sample_queries(200, seed=1)
    assert queries == sv.sample_queries(200, seed=1) != sv.sample_queries(200, seed=2)
    assert len(queries) == 200
    lengths = Counter(len(q.split()) for q in queries)
    assert lengths[1] == lengths[2] == 100
    rank = {w: i for i, w in enumerate(vocab)}
    ranks = [rank[w] for q in queries for w in q.split()]
    assert min(ranks) < 300 and max(ranks) >= 1000


def test_cli_prints_one_line_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sv.main([str(tmp_path / "v"), "--notes", "25", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "25 notes" in out and "median" in out
    assert sv.main([str(tmp_path / "v"), "--notes", "25"]) == 2
