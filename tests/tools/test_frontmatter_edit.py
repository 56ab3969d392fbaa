"""``vault.frontmatter_edit``: only the keys that change are rewritten; the body never changes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.vault.frontmatter import split_frontmatter
from vaultpilot.vault.frontmatter_edit import edit_frontmatter

NOTE = """---
# kept comment
title: 'Quoted'   # trailing
tags:
  - alpha
  - "beta"
due: 2025-01-15
flow: [a, b]
nested:
  k: v
---
Body with --- and [[links]].
"""


def test_untouched_keys_stay_byte_for_byte() -> None:
    out = edit_frontmatter(NOTE, set_values={"status": "done"}).text
    assert out == NOTE.replace("  k: v\n---", "  k: v\nstatus: done\n---")


def test_changed_value_keeps_quote_style_and_comment() -> None:
    out = edit_frontmatter(NOTE, set_values={"title": "New"}).text
    assert "title: 'New'   # trailing\n" in out
    assert out.replace("title: 'New'", "title: 'Quoted'") == NOTE


def test_dates_are_written_plain_and_keys_match_case_insensitively() -> None:
    out = edit_frontmatter(NOTE, set_values={"Due": "2025-02-01", "at": "2025-02-01T08:30:00"})
    assert "due: 2025-02-01\n" in out.text and "at: 2025-02-01T08:30:00\n" in out.text
    assert out.changed == ("due", "at")


def test_remove_key_and_noop() -> None:
    out = edit_frontmatter(NOTE, remove_keys=["flow", "missing"])
    assert out.text == NOTE.replace("flow: [a, b]\n", "") and out.changed == ("flow",)
    same = edit_frontmatter(NOTE, set_values={"due": "2025-01-15"}, remove_keys=["missing"])
    assert same.text is NOTE and same.changed == ()


def test_tags_keep_block_style() -> None:
    out = edit_frontmatter(NOTE, add_tags=["#gamma", "ALPHA"], remove_tags=["beta"]).text
    assert "  - alpha\n  - gamma\ndue:" in out and '"beta"' not in out


def test_tags_keep_flow_and_scalar_styles() -> None:
    flow = edit_frontmatter("---\ntags: [a, b]  # c\n---\nx", add_tags=["d"], remove_tags=["a"])
    assert flow.text == "---\ntags: [b, d]  # c\n---\nx"
    scalar = edit_frontmatter("---\ntags: recipe\n---\nx", add_tags=["quick"])
    assert scalar.text == "---\ntags:\n  - recipe\n  - quick\n---\nx"
    last = edit_frontmatter("---\ntags:\n- a\nk: 1\n---\nx", remove_tags=["a"])
    assert last.text == "---\nk: 1\n---\nx"


def test_list_indentation_follows_the_note() -> None:
    out = edit_frontmatter("---\ntags:\n- a\n---\n", set_values={"aliases": ["X", "Y"]}).text
    assert out == "---\ntags:\n- a\naliases:\n- X\n- Y\n---\n"


def test_new_block_when_absent_and_links_quoted() -> None:
    out = edit_frontmatter("# Title\n", set_values={"up": "[[Home]]", "n": 3}, add_tags=["t"])
    assert out.text == "---\nup: '[[Home]]'\nn: 3\ntags:\n  - t\n---\n# Title\n"
    empty = edit_frontmatter("---\n---\nbody", set_values={"a": True})
    assert empty.text == "---\na: true\n---\nbody"


def test_invalid_yaml_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="invalid"):
        edit_frontmatter('---\ntitle: "open\n---\nbody', set_values={"a": 1})
    with pytest.raises(InvalidArgumentError, match="both set and removed"):
        edit_frontmatter("x", set_values={"a": 1}, remove_keys=["A"])


# --- property: whatever the frontmatter and body, only the frontmatter can change ---------------

_KEY = st.sampled_from(["status", "tags", "Tags", "due", "title", "aliases", "note", "x-y"])
_SCALAR = st.one_of(
    st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=12),
    st.integers(-5, 5000),
    st.booleans(),
    st.none(),
    st.sampled_from(["2025-01-15", "no", "12:30", "[[Link]]", "#x", "a: b", "-", "'q'"]),
)
_VALUE = st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3))
_LINE = st.sampled_from(
    [
        "status: draft",
        "tags:\n  - a\n  - b",
        "tags: [x, y]",
        "tags: single",
        "# a comment",
        "due: 2025-01-01  # eol",
        "title: 'It''s'",
        'quoted: "x"',
        "",
        "list:\n- one\n- two",
        "nested:\n  a: 1",
        "empty:",
    ]
)
_BODY = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\x85\u2028\u2029"),
    max_size=80,
)


@st.composite
def notes(draw: st.DrawFn) -> str:
    body = draw(st.one_of(_BODY, st.sampled_from(["---\nfake: fm\n---\n", "\n---\n", "# T\n"])))
    if draw(st.booleans()):
        return body
    lines = draw(st.lists(_LINE, max_size=5, unique=True))
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    note=notes(),
    sets=st.dictionaries(_KEY, _VALUE, max_size=3),
    removes=st.lists(_KEY, max_size=2),
    add=st.lists(st.sampled_from(["new", "a", "B", "x/y", "#z"]), max_size=3),
    drop=st.lists(st.sampled_from(["a", "x", "single", "b"]), max_size=2),
)
def test_body_never_changes(
    note: str, sets: dict[str, object], removes: list[str], add: list[str], drop: list[str]
) -> None:
    removes = [r for r in removes if r.lower() not in {k.lower() for k in sets}]
    if add or drop:
        sets = {k: v for k, v in sets.items() if k.lower() != "tags"}
        removes = [r for r in removes if r.lower() != "tags"]
    fm = split_frontmatter(note)
    body = note[fm.end :] if fm.end else note
    try:
        out = edit_frontmatter(
            note, set_values=sets, remove_keys=removes, add_tags=add, remove_tags=drop
        ).text
    except InvalidArgumentError:
        return  # refused (invalid YAML, or a value that can't round-trip): nothing changed
    new = split_frontmatter(out)
    assert out[new.end :] == body
    assert new.error is None
