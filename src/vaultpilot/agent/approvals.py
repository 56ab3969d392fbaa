"""Which tool calls run at once, which wait for the person, and which are refused.

A rule maps ``"tool"`` or ``"tool.operation"`` to ``"allow"``, ``"ask"`` or ``"deny"``. The
operation of a call is the argument its tool selects operations by (``operation``,
``queryType``, ``contextType``) or its ``type``/``action`` (process tools).

Rules come in layers: ``rules`` (by default ``DEFAULT_RULES``) at the bottom, and each
``with_rules`` (the configuration's ``[approvals]`` table) laid over them. The top layer that has
a rule for the call decides; within a layer the more specific rule wins, then the tool's rule.
So ``git_agent = "deny"`` in the configuration refuses ``git_commit`` too, although the default
layer asks for it; when no layer has a rule, the policy's ``default`` (``"allow"``) decides.
``auto_approve`` (``vaultpilot ask --yes``) turns every "ask" into "allow" but keeps "deny".
``ruling`` says which rule decided (its key), so a refusal can name it; ``configured`` is the
policy without the default layer: only what the configuration says (the server's ``/rpc``
clients are held to that, see ``server.approvals``).

``Approvals`` is the one reader of the ``[approvals]`` table for a long-running program (the
server, ``vaultpilot mcp``): the policy and the file it came from, read again when that file
changes, so a person who changes a rule need not restart the server.

``DEFAULT_RULES`` asks before every destructive step: each vault-tool operation whose facts
(``tools.operations``) say ``destructive`` (deletes, moves, bulk operations), any shell tool, and
the writes of git_agent (``git_add`` and ``git_commit`` change the vault's repository).
``reason`` says what the call does, from the same facts ("obsidian_vault_manager delete_note
deletes a note (to the trash)").

A write that can remove text (``drops_text``: ``update_note``, ``edit_note``) is not destructive
by its operation, but one call can still lose a person's words. When no rule decides it (the
policy's default lets it run), ``drops_words(policy, tool, operation, lost)`` gives the reason
to ask when its dry run's diffs (``dropped_words``) would remove ``DROP_ASK_WORDS`` words or
more: words a person reads before the change and not after, or pairs of neighbouring words
(the same words scrambled are lost; a paragraph moved nearby or a reworded phrase costs only
its edges), words put into a comment are hidden, so lost, and a change that opens or closes a
comment without its other end asks. The agent counts what a run's earlier calls removed from
the same note too, so many small cuts ask like one large one. A rule the person wrote
(``"obsidian_vault_manager.update_note" = "allow"``, or the tool's) lets such calls run without
asking.

A few operations of a process tool do what an operation of obsidian_vault_manager does
(``SAME_AS``: obsidian_agent's ``create_note`` and ``update_note``). In a layer without a rule
naming the process tool, such a call is decided by that layer's rules for the manager's
operation, so ``"obsidian_vault_manager.update_note" = "ask"`` covers obsidian_agent as well and
the model cannot step around a rule by choosing the other tool.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from vaultpilot.configfile import file_stamp
from vaultpilot.contract import obsidian_agent
from vaultpilot.contract.catalog import GIT_ACTIONS
from vaultpilot.errors import VaultpilotError
from vaultpilot.tools import TOOLS, get_tool
from vaultpilot.tools.operations import Operation

__all__ = [
    "DEFAULT_RULES",
    "DROP_ASK_WORDS",
    "SAME_AS",
    "ApprovalPolicy",
    "Approvals",
    "Decision",
    "check_rule_names",
    "dropped_words",
    "drops_words",
    "operation_of",
    "words_question",
]

log = logging.getLogger(__name__)
Decision = Literal["allow", "ask", "deny"]
_MANAGER = "obsidian_vault_manager"
DEFAULT_RULES: Mapping[str, Decision] = MappingProxyType(
    {
        **{
            f"{tool.name}.{op.name}": "ask"
            for tool in TOOLS
            for op in tool.operations.values()
            if op.destructive
        },
        "shell": "ask",
        "execute_shell": "ask",
        **{f"git_agent.{a.name}": "ask" for a in GIT_ACTIONS.values() if a.writes},
    }
)
_VAULT_TOOLS = {tool.name for tool in TOOLS}
# "tool.operation" -> the obsidian_vault_manager operation it is decided as (see above).
SAME_AS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        f"{obsidian_agent.TOOL}.{action}": (_MANAGER, action)
        for action in obsidian_agent.ACTIONS
        if action in get_tool(_MANAGER).operations
    }
)


def _known_names() -> dict[str, set[str]]:
    """Tool -> its operations, for every tool the built-in agents offer."""
    known = {tool.name: set(tool.operations) for tool in TOOLS}
    known["git_agent"] = {a.name for a in GIT_ACTIONS.values()}
    known[obsidian_agent.TOOL] = set(obsidian_agent.ACTIONS)
    known["shell"] = known["execute_shell"] = set()
    return known


def check_rule_names(rules: Mapping[str, Any]) -> None:
    """Refuse an ``[approvals]`` key that is almost surely a typo, which would otherwise leave
    the rule it meant silently unapplied: an operation a known tool does not have, or a tool
    name close to a known one. Another name is taken for a process tool of one's own."""
    import difflib

    known = _known_names()
    for key in rules:
        tool, _, op = str(key).partition(".")
        if tool in known:
            if op and known[tool] and op not in known[tool]:
                ops = ", ".join(sorted(known[tool]))
                raise ValueError(f"'{key}': {tool} has no operation '{op}' (it has: {ops})")
            continue
        close = difflib.get_close_matches(tool, list(known), n=1, cutoff=0.6)
        if close:
            raise ValueError(
                f"'{key}': there is no tool '{tool}'; did you mean '{close[0]}'? (tools: "
                f"{', '.join(sorted(known))}, or a process tool as `vaultpilot agents list` "
                "names it)"
            )


# The arguments that name a call's operation: each vault tool's selector (``queryType``,
# ``contextType``, ``operation``), and a process tool's ``type`` or ``action``.
_SELECTORS = tuple(dict.fromkeys(("operation", "type", "action", *(t.selector for t in TOOLS))))


def operation_of(arguments: Mapping[str, Any] | None) -> str | None:
    """The operation a call asks for, if its arguments name one."""
    for key in _SELECTORS:
        value = (arguments or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    rules: Mapping[str, Decision] = field(default_factory=lambda: DEFAULT_RULES)
    default: Decision = "allow"
    auto_approve: bool = False
    # Layers laid over ``rules`` by ``with_rules``, the last one on top.
    over: tuple[Mapping[str, Decision], ...] = ()

    def with_rules(self, rules: Mapping[str, Decision]) -> ApprovalPolicy:
        return replace(self, over=(*self.over, MappingProxyType(dict(rules))))

    def configured(self) -> ApprovalPolicy:
        """This policy without the default layer: only the rules the configuration sets."""
        return replace(self, rules=MappingProxyType({}))

    def decide(self, tool: str, operation: str | None, *, dry_run: bool = False) -> Decision:
        """``dry_run``: the call only previews (``dryRun``), which writes nothing, so an
        operation that has a dry run is not asked about (a denied one stays denied)."""
        return self.ruling(tool, operation, dry_run=dry_run)[0]

    def ruling(
        self, tool: str, operation: str | None, *, dry_run: bool = False
    ) -> tuple[Decision, str | None]:
        """The decision (as ``decide``) and the key of the rule that made it (None: no rule,
        the policy's ``default``)."""
        decision, key = self._rule(tool, operation)
        if decision == "ask" and self.auto_approve:
            return "allow", key
        if decision == "ask" and dry_run:
            facts = _facts(tool, operation)
            if facts is not None and facts.dry_run:
                return "allow", key
        return decision, key

    def _rule(self, tool: str, operation: str | None) -> tuple[Decision, str | None]:
        key = f"{tool}.{operation}"
        alias = SAME_AS.get(key) if operation is not None else None
        for layer in (*reversed(self.over), self.rules):
            found = _in_layer(layer, tool, operation)
            if found is None and alias is not None:
                found = _in_layer(layer, *alias)
            if found is not None:
                return layer[found], found
        return self.default, None

    def reason(self, tool: str, operation: str | None) -> str:
        """What the call does, in one sentence for the person asked ("Deletes a note (to the
        trash)."); what it acts on is the step's label (``agent.steps.describe``), which every
        view shows beside it."""
        facts = _facts(tool, operation)
        if facts is not None:
            return f"{facts.effect[:1].upper()}{facts.effect[1:]}."
        what = f"{tool} {operation}" if operation else tool
        return f"{what} changes things outside the vault tools, so it asks first."


# A call that would remove this many of a note's words asks first (see the module): about two
# sentences, more than any fix of a typo or a line, less than a paragraph.
DROP_ASK_WORDS = 25
# A word: a run of letters and digits, or one character of a script written without spaces
# (Chinese, Japanese), so a removed paragraph of Chinese counts as many words, not one.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_UNSPACED}]|[^\\W{_UNSPACED}]+")


# Text Obsidian does not show: words moved into a comment are not kept, they are hidden.
_HIDDEN = re.compile(r"<!--.*?(?:-->|\Z)|%%.*?(?:%%|\Z)", re.S)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _hunks(diff: str) -> list[tuple[str, str, str]]:
    """Each hunk of a unified diff as its text before and after (context lines in both), and
    its changed lines alone (removed and added)."""
    hunks: list[tuple[list[str], list[str], list[str]]] = []
    for line in diff.splitlines():
        if line.startswith("@@"):
            hunks.append(([], [], []))
        elif hunks and line[:1] in (" ", "-", "+"):
            before, after, changed = hunks[-1]
            if line[0] != "+":
                before.append(line[1:])
            if line[0] != "-":
                after.append(line[1:])
            if line[0] != " ":
                changed.append(line[1:])
    return [("\n".join(b), "\n".join(a), "\n".join(c)) for b, a, c in hunks]


def _moves_a_comment_edge(changed: str) -> bool:
    """Whether the changed lines open or close a comment they do not also close or open: what
    lies beyond the hunk, which the diff does not show, may become hidden."""
    return changed.count("%%") % 2 == 1 or changed.count("<!--") != changed.count("-->")


def _dropped(diff: str) -> int:
    """How many words a unified diff takes out of what a person reads: in each hunk, the words
    shown before that are not shown after, or, when more, the pairs of neighbouring words (the
    same words scrambled into another order count as lost, a paragraph moved nearby or a
    reworded phrase only at its edges). Text put into a comment (``<!-- -->``, ``%% %%``) is
    not shown; a change that opens or closes a comment without its other end may hide more than
    the diff shows, so it counts as at least ``DROP_ASK_WORDS``."""
    total = 0
    for before, after, changed in _hunks(diff):
        shown, kept = _words(_HIDDEN.sub(" ", before)), _words(_HIDDEN.sub(" ", after))
        words = Counter(shown) - Counter(kept)
        pairs = Counter(itertools.pairwise(shown)) - Counter(itertools.pairwise(kept))
        lost = max(sum(words.values()), sum(pairs.values()))
        if _moves_a_comment_edge(changed):
            lost = max(lost, DROP_ASK_WORDS)
        total += lost
    return total


def dropped_words(diffs: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Each changed file's path -> the words its diff removes (see ``_dropped``), for a dry
    run's diffs."""
    lost: dict[str, int] = {}
    for d in diffs:
        diff = d.get("diff")
        if isinstance(diff, str):
            path = str(d.get("path") or "")
            lost[path] = lost.get(path, 0) + _dropped(diff)
    return lost


def drops_words(
    policy: ApprovalPolicy, tool: str, operation: str | None, lost: Mapping[str, int]
) -> str | None:
    """Why a call the policy lets run by default should ask: ``lost``, the words it would
    remove from each note (with what earlier calls of the run removed from it), reaches
    ``DROP_ASK_WORDS`` (see the module); None when it stays under, or a rule decides it."""
    facts = _facts(tool, operation)
    if facts is None or not facts.drops_text or policy.auto_approve:
        return None
    decision, key = policy.ruling(tool, operation)
    total = sum(lost.values())
    if decision != "allow" or key is not None or total < DROP_ASK_WORDS:
        return None
    where = ", ".join(p for p, n in lost.items() if n) or "the note"
    return f"it would remove {total} words from {where}"


def words_question(
    policy: ApprovalPolicy,
    tool: str,
    operation: str | None,
    diffs: Iterable[Mapping[str, Any]],
    counted: Mapping[str, int],
) -> tuple[str | None, dict[str, int]]:
    """The words a call's dry-run ``diffs`` remove from each note added to what ``counted``
    says earlier calls removed, and why that asks (``drops_words``), or None."""
    lost = dropped_words(diffs)
    total = {path: counted.get(path, 0) + n for path, n in lost.items() if n}
    return drops_words(policy, tool, operation, total), total


def _facts(tool: str, operation: str | None) -> Operation | None:
    if tool in _VAULT_TOOLS:
        return get_tool(tool).operations.get(operation or "")
    alias = SAME_AS.get(f"{tool}.{operation}")
    return get_tool(alias[0]).operations.get(alias[1]) if alias else None


def _in_layer(layer: Mapping[str, Decision], tool: str, operation: str | None) -> str | None:
    """The key of the layer's rule for the call, if it has one."""
    if operation is not None and f"{tool}.{operation}" in layer:
        return f"{tool}.{operation}"
    return tool if tool in layer else None


@dataclass(slots=True)
class Approvals:
    """The approval policy and the config file it is set in (see the module). ``current()``
    reads the policy again when that file changed; a file being edited or wrong keeps the last
    good policy."""

    policy: ApprovalPolicy
    config_path: Path | None = None
    _stamp: tuple[int, int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._stamp = file_stamp(self.config_path)

    @classmethod
    def read(
        cls, config_path: Path | None, rules: Mapping[str, Decision] | None = None
    ) -> Approvals:
        """The policy of ``rules`` (an ``[approvals]`` table already read), else of the file at
        ``config_path`` (an unreadable file: the defaults; whoever reads it reports why)."""
        if rules is None:
            rules = _read_rules(config_path) or {}
        return cls(ApprovalPolicy().with_rules(rules), config_path)

    def current(self) -> ApprovalPolicy:
        stamp = file_stamp(self.config_path)
        if stamp is not None and stamp != self._stamp and self.config_path is not None:
            self._stamp = stamp
            found = _read_rules(self.config_path)
            if found is not None:
                self.policy = ApprovalPolicy().with_rules(found)
        return self.policy

    def where(self) -> str:
        """Where the rules are set, for a message: "the config file PATH"."""
        path = f" {self.config_path}" if self.config_path is not None else ""
        return f"the config file{path}"

    def how_to_allow(self, key: str) -> str:
        return (
            f'add `"{key}" = "allow"` under [approvals] in {self.where()} '
            "(`vaultpilot config` shows it)"
        )


def _read_rules(path: Path | None) -> Mapping[str, Decision] | None:
    """The ``[approvals]`` table of the config file at ``path``; None when it cannot be read."""
    from vaultpilot.agent.config import load_config  # it imports this module

    try:
        return load_config(path=path).config.approvals
    except VaultpilotError as err:  # being edited, or wrong
        log.warning("kept the approval policy: %s", err.message)
        return None
