"""Hypothesis strategies for requests: random bytes, random JSON, and near-valid requests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from .conftest import IDS

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)

uuid_forms = st.uuids().flatmap(
    lambda u: st.sampled_from(
        [str(u), str(u).upper(), u.hex, "{" + str(u) + "}", "urn:uuid:" + str(u)]
    )
)
bad_uuids = st.uuids().flatmap(
    lambda u: st.sampled_from(
        [
            str(u)[:-1],
            " " + str(u),
            str(u) + "\n",
            "URN:UUID:" + str(u),
            "{" + u.hex + "}",
            str(u).replace("-", "", 1),
            "urn:uuid:" + u.hex,
            "",
        ]
    )
)
ids = st.one_of(uuid_forms, bad_uuids, json_values)
optional_ids = st.one_of(st.none(), uuid_forms, bad_uuids, json_values)

# Plausible names first: hypothesis favours the start of a list.
segments = st.sampled_from(
    [
        "Plan",
        "a",
        "Projects",
        "x.md",
        "é ü",
        "-rf",
        "..",
        ".",
        "",
        "link",
        ".obsidian",
        ".git",
        "evil",
        "secret",
    ]
)
paths = st.one_of(
    st.lists(segments, min_size=1, max_size=4).map("/".join),
    st.lists(segments, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p)),
    st.text(max_size=15),
)


def requests(
    tool: str, actions: Sequence[str], payload: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """Well-formed ActionRequests for ``tool``: any of its actions, ids present or not."""
    return st.fixed_dictionaries(
        {
            "request_id": uuid_forms,
            "tool": st.just(tool),
            "action": st.sampled_from(actions),
            "payload": payload,
        },
        optional={
            "api_version": st.sampled_from(["V1", "v1", None]),
            "context": st.text(max_size=10),
            "plan_id": st.none() | uuid_forms,
            "task_id": st.none() | uuid_forms,
            "correlation_id": st.none() | uuid_forms,
        },
    )


def broken_requests(
    tool: str, actions: Sequence[str], payload: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """ActionRequest-shaped dicts with fields missing, wrong, or right."""
    names = st.one_of(
        st.sampled_from([tool, *actions, "git_agent", "obsidian_agent"]), st.text(max_size=8)
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "request_id": st.one_of(st.just(IDS["request_id"]), ids),
            "tool": st.one_of(names, json_values),
            "action": st.one_of(names, json_values),
            "payload": st.one_of(payload, json_values),
            "api_version": st.one_of(st.sampled_from(["V1", "v1", "V2", None]), json_values),
            "context": st.one_of(st.text(max_size=10), json_values),
            "plan_id": optional_ids,
            "task_id": optional_ids,
            "correlation_id": optional_ids,
            "unknown_field": json_values,
        },
    )


def note_payloads(vault: str) -> st.SearchStrategy[Any]:
    vaults = st.sampled_from([vault, "vault"])
    return st.one_of(
        st.fixed_dictionaries(
            {"vault_path": vaults, "note_name": paths, "content": st.text(max_size=30)}
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "vault_path": st.one_of(vaults, st.sampled_from(["missing", ""]), json_values),
                "note_name": st.one_of(paths, json_values),
                "content": st.one_of(st.text(max_size=30), json_values),
                "extra": json_values,
            },
        ),
        json_values,
    )


def git_payloads() -> st.SearchStrategy[Any]:
    names = st.lists(paths, max_size=3)
    return st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "files": names,
                "limit": st.integers(0, 30) | st.integers(0, 30).map(str),
                "message": st.text(max_size=30),
            },
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "files": st.one_of(names, st.lists(json_values, max_size=2), json_values),
                "limit": st.one_of(st.integers(-3, 30), st.text(max_size=4), json_values),
                "message": st.one_of(st.text(max_size=30), json_values),
                # Only safe repositories: the test's own, a missing one, or a wrong type.
                "repo_path": st.sampled_from([".", "nope", 3, None]),
            },
        ),
        json_values,
    )


def stdin_bytes(requests: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """Anything a broken or hostile orchestrator might send."""
    encoded = requests.map(lambda r: json.dumps(r).encode())
    truncated = st.tuples(encoded, st.integers(0, 400)).map(lambda t: t[0][: t[1]])
    return st.one_of(
        encoded,
        truncated,
        st.binary(max_size=64),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.text(max_size=40).map(lambda t: t.encode("utf-8", errors="surrogatepass")),
    )
