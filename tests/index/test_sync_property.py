"""Property: after any sequence of creates, edits, renames and deletes, synced incrementally
at random moments, the index equals a fresh rebuild of the same vault."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.index.helpers import assert_equals_rebuild
from tests.index.vault_changes import apply_change, scratch_vault
from vaultpilot.index.sync import sync_vault

NAMES = ["Alpha", "beta", "Gamma", "alpha", "Delta 2"]
FOLDERS = ["", "One/", "One/Two/", "Three/"]

link = st.builds(
    lambda name, form, folder: {
        0: f"[[{name}]]",
        1: f"[[{folder}{name}|alias]]",
        2: f"[[{name}#Head]]",
        3: f"[x]({folder}{name.replace(' ', '%20')}.md)",
        4: f"![[{name}]]",
        5: f"`[[{name}]]`",
    }[form],
    st.sampled_from(NAMES),
    st.integers(0, 5),
    st.sampled_from(FOLDERS),
)
body = st.builds(
    lambda links, tag, fm: (
        (f"---\ntags: [{tag}]\naliases: [{tag}x]\n---\n" if fm else "")
        + "# Head\n"
        + " ".join(links)
        + f"\n#{tag} ^blk\n"
    ),
    st.lists(link, max_size=4),
    st.sampled_from(["t", "t/sub", "u"]),
    st.booleans(),
)
path = st.builds(lambda f, n: f"{f}{n}.md", st.sampled_from(FOLDERS), st.sampled_from(NAMES))
op = st.one_of(
    st.tuples(st.just("write"), path, body),
    st.tuples(st.just("rename"), path, path),
    st.tuples(st.just("delete"), path, st.just("")),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=14))
def test_incremental_sync_equals_rebuild(ops: list[tuple[str, str, str]]) -> None:
    with scratch_vault() as (tmp, root, conn):
        for kind, a, b in ops:
            if kind == "sync":
                sync_vault(conn, root, workers=1)
            else:
                apply_change(root, kind, a, b)
        sync_vault(conn, root, workers=1)
        assert_equals_rebuild(conn, root, tmp)
