"""Frontmatter: rules 12 (properties) and 13 (invalid YAML) of obsidian-semantics.md."""

from __future__ import annotations

from tests.vault.helpers import parse, source_of
from vaultpilot.vault.frontmatter import (
    frontmatter_aliases,
    load_yaml,
    split_frontmatter,
)

# --- Rule 12: properties --------------------------------------------------------------------------


def test_rule_12_yaml_between_fences_at_the_very_top() -> None:
    text = "---\nstatus: draft\n---\n# Body\n"
    fm = split_frontmatter(text)
    assert fm.properties == {"status": "draft"}
    assert fm.yaml_text == "status: draft\n"
    assert (fm.start, fm.end, fm.body_line) == (4, 22, 3)
    note = parse(text)
    assert note.body == "# Body\n"
    assert note.body_offset == 22


def test_rule_12_fence_not_at_top_is_not_frontmatter() -> None:
    text = "\n---\nstatus: draft\n---\n"
    assert split_frontmatter(text).properties == {}
    assert parse(text).body == text


def test_rule_12_unclosed_fence_is_not_frontmatter() -> None:
    text = "---\nstatus: draft\nno closing fence\n"
    note = parse(text)
    assert note.properties == {}
    assert note.frontmatter_error is None
    assert note.body_offset == 0


def test_rule_12_json_frontmatter_is_read() -> None:
    note = parse('---\n{"tags": ["a"], "rating": 4.5, "done": true}\n---\n')
    assert note.properties == {"tags": ["a"], "rating": 4.5, "done": True}
    assert [t.name for t in note.tags] == ["a"]


def test_rule_12_property_types_follow_yaml_1_2() -> None:
    props, error = load_yaml(
        "title: Plan\n"
        "count: 14500\n"
        "rating: 4.5\n"
        "exp: 1e3\n"
        "done: false\n"
        "yes_word: yes\n"
        "country: NO\n"
        "date: 2020-08-21\n"
        "when: 2020-08-21T10:30:00\n"
        "ferry_time: 12:30\n"
        "sexagesimal: 190:20:30\n"
        "leading_zero: 017\n"
        "octal: 0o17\n"
        "hex: 0x1F\n"
        "version: 1.2.3\n"
        "equals: =\n"
        "empty:\n"
        "list: []\n"
        "items: [a, 2]\n"
    )
    assert error is None
    assert props == {
        "title": "Plan",
        "count": 14500,
        "rating": 4.5,
        "exp": 1000.0,
        "done": False,
        "yes_word": "yes",
        "country": "NO",
        "date": "2020-08-21",
        "when": "2020-08-21T10:30:00",
        "ferry_time": "12:30",
        "sexagesimal": "190:20:30",
        "leading_zero": 17,
        "octal": 15,
        "hex": 31,
        "version": "1.2.3",
        "equals": "=",
        "empty": None,
        "list": [],
        "items": ["a", 2],
    }
    assert type(props["count"]) is int
    assert type(props["done"]) is bool


def test_rule_12_quoted_links_in_properties_are_links() -> None:
    text = (
        "---\n"
        'project: "[[Database Migration]]"\n'
        "attendees:\n"
        '  - "[[Priya Raman|Priya]]"\n'
        '  - "[[Marcus Feld#Role]]"\n'
        'source: "[site](Notes/Site%20Map.md)"\n'
        "unquoted: [[Not A Link]]\n"
        "---\n"
        "body [[Body Link]]\n"
    )
    note = parse(text)
    props = [
        (lk.prop, lk.target, lk.subpath, lk.alias, lk.syntax, lk.line)
        for lk in note.links
        if lk.kind == "property"
    ]
    assert props == [
        ("project", "Database Migration", "", None, "wiki", 2),
        ("attendees", "Priya Raman", "", "Priya", "wiki", 4),
        ("attendees", "Marcus Feld", "#Role", None, "wiki", 5),
        ("source", "Notes/Site Map.md", "", "site", "markdown", 6),
    ]
    assert [source_of(text, lk) for lk in note.links] == [
        "[[Database Migration]]",
        "[[Priya Raman|Priya]]",
        "[[Marcus Feld#Role]]",
        "[site](Notes/Site%20Map.md)",
        "[[Body Link]]",
    ]
    # Unquoted, YAML reads a nested list: not a link (the help says links must be quoted).
    assert note.properties["unquoted"] == [["Not A Link"]]


def test_rule_12_nested_properties_are_loaded() -> None:
    assert parse("---\nmeta:\n  a: 1\n  b: [x]\n---\n").properties == {"meta": {"a": 1, "b": ["x"]}}


def test_rule_12_default_properties_aliases() -> None:
    assert parse("---\naliases: [DB Migration, Postgres move]\n---\n").aliases == (
        "DB Migration",
        "Postgres move",
    )
    assert parse("---\naliases: Single\n---\n").aliases == ("Single",)
    assert frontmatter_aliases({"alias": "Old", "aliases": ["New", "Old"]}) == ["New", "Old"]
    quoted = parse('---\naliases:\n  - "Peak: Secrets of Expertise"\n  - 日本旅行\n---\n')
    assert quoted.aliases == ("Peak: Secrets of Expertise", "日本旅行")


def test_rule_12_empty_frontmatter_is_present_with_no_properties() -> None:
    note = parse("---\n---\n# Body\n")
    assert note.properties == {}
    assert note.frontmatter_error is None
    assert note.body == "# Body\n"


def test_rule_12_each_key_once() -> None:
    """A repeated key makes Obsidian's parser reject the frontmatter (so rule 13 applies)."""
    props, error = load_yaml("status: a\nstatus: b\n")
    assert props == {}
    assert error == "invalid YAML frontmatter (line 3): found duplicate key 'status'"


# --- Rule 13: invalid YAML ------------------------------------------------------------------------


def test_rule_13_invalid_yaml_gives_no_frontmatter_but_body_counts() -> None:
    text = (
        "---\n"
        'title: "Blameless Postmortems\n'
        "tags: [reading]\n"
        'related: "[[Hidden]]"\n'
        "---\n"
        "Body #incidents and [[Sprint Retro]]\n"
    )
    note = parse(text)
    assert note.properties == {}
    assert note.frontmatter_error is not None
    assert note.frontmatter_error.startswith("invalid YAML frontmatter (line ")
    assert [(t.name, t.source) for t in note.tags] == [("incidents", "inline")]
    assert [lk.target for lk in note.links] == ["Sprint Retro"]
    assert note.body == "Body #incidents and [[Sprint Retro]]\n"


def test_rule_13_bare_scalar_or_list_gives_no_frontmatter() -> None:
    assert load_yaml("just text") == ({}, "frontmatter is a single value, not a set of properties")
    assert load_yaml("- a\n- b") == ({}, "frontmatter is a list, not a set of properties")


def test_rule_13_error_is_recorded_never_raised() -> None:
    for bad in ("a: [unclosed", "a: b: c", "? [a, b]\n: c", "x: !python/object:os.system y"):
        props, error = load_yaml(bad)
        assert props == {}
        assert error is not None and error.startswith("invalid YAML frontmatter")


def _laughs(levels: int) -> str:
    """``levels`` lines of aliases, each nine of the one before: 9**levels values in 8 lines."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_rule_13_aliases_that_explode_are_invalid() -> None:
    # Eight lines standing for 43 million values: refused before anything is built.
    props, error = load_yaml(_laughs(8))
    assert props == {}
    assert error is not None and "expand it to more than 10,000 values" in error
    props, error = load_yaml("a: &a [1, *a]\n")  # a value that contains itself
    assert props == {} and error is not None and "refers to the value that contains it" in error
    # Aliases in reason are read as the values they stand for.
    assert load_yaml(_laughs(3)) == (
        {"l0": [1] * 9, "l1": [[1] * 9] * 9, "l2": [[[1] * 9] * 9] * 9},
        None,
    )
    assert load_yaml("base: &b {x: 1}\nother: *b\n") == (
        {"base": {"x": 1}, "other": {"x": 1}},
        None,
    )
