"""The frontmatter fast path reads exactly what the full YAML loader reads, or declines."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultpilot.vault.frontmatter import _ObsidianLoader, _simple_yaml, load_yaml

SCALARS = st.sampled_from(
    [
        "", "a", "Music Analysis", "yes", "no", "on", "true", "False", "TRUE", "null", "Null",
        "~", "017", "0o17", "0x1F", "1_000", "-3", "+4", "1.5", "1.", ".5", "1e5", "1._5",
        "2023-02-19", "12:30", "a # b", "a#b", "#tag", "[[Note]]", '"[[Other Note]]"', "'q'",
        "'it''s'", '"esc \\" q"', "x ", " x", "a: b", "[a, b]", "{{date}}", "é", "- x", "1 2",
        ".inf", "v1.2.3", "a/b", "t-1", "@x", "*ref", "&a x", "!!str 5", "|", ">", "%x",
        "Tracker (old)", "(x)", "a, b", "it's", "[]", "[ ]", "[a, b]", "[a,b]", "[ a , b ]",
        "[a, ]", "[, a]", "[a, [b]]", "[1, true, null]", "[x (y)]", "[a b, 0x1F]", '["q", r]',
        "[a]x", "[a, 'b']", "[{a}]",
    ]
)  # fmt: skip
KEYS = st.sampled_from(
    ["tags", "aliases", "status", "priority", "true", "Yes", "a-b", "x_1", "1", "tags", "k y"]
)
INDENT = st.sampled_from(["", "  ", "    ", " "])
LINE = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}" if v else f"{k}:", KEYS, SCALARS),
    st.builds(lambda k: f"{k}:", KEYS),
    st.builds(lambda i, v: f"{i}- {v}", INDENT, SCALARS),
    st.sampled_from(["", "# comment", "  nested: 1", "...", "\t- x", "-", "key:  two"]),
)


def _loader(text: str) -> tuple[dict[str, object], str | None]:
    import yaml

    try:
        data = yaml.load(text, Loader=_ObsidianLoader)
    except Exception as exc:
        return {}, f"error {exc}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, "not a mapping"
    return {str(k): v for k, v in data.items()}, None


@settings(max_examples=3000, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=8))
def test_fast_path_equals_the_loader(lines: list[str]) -> None:
    text = "\n".join(lines)
    fast = _simple_yaml(text)
    if fast is None:
        return  # declined: the loader decides
    want, error = _loader(text)
    assert error is None, (text, fast, error)
    assert fast == want and [type(v) for v in fast.values()] == [type(v) for v in want.values()]
    assert load_yaml(text) == (want, None)


def test_common_shapes_take_the_fast_path() -> None:
    text = 'tags:\n  - a\n  - type/meeting\ncreated: 2023-02-19\npriority: 1\nrelated: "[[X]]"'
    assert _simple_yaml(text) == {
        "tags": ["a", "type/meeting"],
        "created": "2023-02-19",
        "priority": 1,
        "related": "[[X]]",
    }
    assert _simple_yaml("a: 1\na: 2") is None  # a repeated key: the loader reports the error


def test_synthetic_vault_frontmatter_is_read_identically(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from synth_vault import generate

    generate(tmp_path / "v", 300, seed=5)
    fast = 0
    for note in (tmp_path / "v").rglob("*.md"):
        text = note.read_text(encoding="utf-8")
        if not text.startswith("---\n"):
            continue
        block = text[4 : text.index("\n---", 4)]
        got = _simple_yaml(block)
        if got is not None:
            fast += 1
            assert (got, None) == _loader(block)
    assert fast > 150
