"""The vault's rules: what tools may read and change, set by the person, never by a tool argument.

``VaultRules`` comes from the ``[rules]`` table of config.toml (``load_rules``), with per-vault
tables under ``[rules.vault."<vault folder name or path>"]`` that replace the keys they name:

    [rules]
    mode = "auto"             # "read-only": no writes at all; "ask": every write asks; "auto"
    max_notes_per_run = 50    # an agent run changing more notes than this asks first
    deny = ["Secrets"]        # never read, listed or changed
    read_only = ["Archive"]   # read, never changed
    ask = ["Projects"]        # changes ask first
    private = ["Journal"]     # listed as existing, but their text is never sent to a model
    untrusted = ["Clippings"] # after an agent run reads these, every write of the run asks

Entries are vault-relative folders or notes (``Journal`` covers ``Journal/**``; case is ignored,
as on the file systems Obsidian runs on most). When two entries cover a path, the longer one
wins, so ``read_only = ["Archive"]`` with ``ask = ["Archive/2025"]`` asks for the 2025 folder.

The tools enforce ``deny``, ``read_only``, ``private`` and ``mode = "read-only"`` themselves
(``tools.registry.run_tool``): a refused call changes nothing and says which rule refused it;
results drop denied notes and carry ``private: true`` with no text for private ones. ``ask``,
``max_notes_per_run``, ``untrusted`` and ``mode = "ask"`` are approvals, decided per run by the
agent (``agent.guard``). ``describe()`` is the text the model is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vaultpilot.errors import PathRefusedError, SetupError

__all__ = [
    "PATH_KEYS",
    "PRIVATE_TEXT",
    "Access",
    "RulesFile",
    "RunMode",
    "VaultRules",
    "load_rules",
]

RunMode = Literal["read-only", "ask", "auto"]
Access = Literal["deny", "read_only", "ask", "private", "untrusted", "open"]
PRIVATE_TEXT = "(private: the vault's rules keep this note's text from the model)"

_ACCESS_KEYS: tuple[Access, ...] = ("deny", "read_only", "ask", "private", "untrusted")
# What the tools refuse to change.
_PROTECTED: frozenset[Access] = frozenset({"deny", "read_only", "private"})


def _norm(entry: str) -> str:
    """A path or entry as rules compare it: '/' separators, no empty or '.' segments (so
    './Reference//x' is 'Reference/x'), no '.md', case folded."""
    parts = entry.replace("\\", "/").strip().split("/")
    return "/".join(p for p in parts if p not in ("", ".")).casefold().removesuffix(".md")


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: RunMode | None = None
    max_notes_per_run: int | None = Field(None, ge=1, le=100_000)
    deny: list[str] | None = None
    read_only: list[str] | None = None
    ask: list[str] | None = None
    private: list[str] | None = None
    untrusted: list[str] | None = None


class RulesFile(_Table):
    """The ``[rules]`` table: defaults for every vault, and per-vault tables under ``vault``."""

    vault: dict[str, _Table] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VaultRules:
    mode: RunMode = "auto"
    max_notes_per_run: int = 50
    deny: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    untrusted: tuple[str, ...] = ("Clippings",)
    # (compared form, as written, access), the longest first: the longest entry wins.
    _entries: tuple[tuple[str, str, Access], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        entries = [
            (_norm(e), e.strip().strip("/"), key)
            for key in _ACCESS_KEYS
            for e in getattr(self, key)
            if _norm(e)
        ]
        entries.sort(key=lambda entry: len(entry[0]), reverse=True)
        object.__setattr__(self, "_entries", tuple(entries))

    # ----- what a path is
    def _rule(self, path: str) -> tuple[str, Access] | None:
        rel = _norm(path)
        for entry, written, access in self._entries:
            if rel == entry or rel.startswith(entry + "/"):
                return written, access
        return None

    def access(self, path: str) -> Access:
        """The rule that governs ``path`` (``open`` when none does)."""
        found = self._rule(path)
        return "open" if found is None else found[1]

    def hidden(self, path: str) -> bool:
        return self.access(path) == "deny"

    def hidden_entries(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the deny entries, the other entries inside one of them, which a longer rule opens
        again), lower-cased without '.md': what a query leaves out before it counts."""
        lower = {e: w.replace("\\", "/").strip().strip("/").lower().removesuffix(".md")
                 for e, w, _ in self._entries}  # fmt: skip
        deny = tuple(lower[e] for e, _, access in self._entries if access == "deny")
        inside = tuple(
            lower[e]
            for e, _, access in self._entries
            if access != "deny"
            and any(e.startswith(d + "/") for d, _, a in self._entries if a == "deny")
        )
        return deny, inside

    def private_note(self, path: str) -> bool:
        return self.access(path) == "private"

    @property
    def active(self) -> bool:
        """Any rule the tools enforce (else results pass through untouched)."""
        return self.mode == "read-only" or any(a in _PROTECTED for _, _, a in self._entries)

    # ----- checks the tools run
    def check_read(self, paths: Iterable[str], *, named: str | None = None) -> None:
        """Refuse a denied path, naming it as the caller did (``named``: the name given, when
        ``paths`` are what it resolved to), never the rule's entry or where a guess led."""
        for path in paths:
            if self.hidden(path):
                raise PathRefusedError(
                    f"'{named or path}' is kept from the agent by the vault's rules (deny). Work "
                    "with other notes; only the person can change the rules (the [rules] table "
                    "of config.toml)."
                )

    def check_write(self, operation: str, paths: Iterable[str], *, preview: bool = False) -> None:
        """Refuse a change the rules forbid (``preview``: a dry run, allowed in read-only mode)."""
        if self.mode == "read-only" and not preview:
            raise PathRefusedError(
                f"{operation} was not run: this vault's rules make agents read-only (mode = "
                '"read-only"). Say what you would change instead; only the person can change '
                "the mode."
            )
        for path in paths:
            found = self._rule(path)
            if found is None:
                continue
            entry, access = found
            if access == "deny":  # neither the entry nor where a name led is said
                raise PathRefusedError(
                    f"{operation} was not run: '{path}' is kept from the agent by the vault's "
                    "rules. Nothing was changed; leave it alone or ask the person."
                )
            if access in _PROTECTED:
                what = {"deny": "keep from the agent", "read_only": "make read-only",
                        "private": "keep private"}[access]  # fmt: skip
                raise PathRefusedError(
                    f"{operation} was not run: '{path}' is in '{entry}', which the vault's rules "
                    f"{what}. Nothing was changed; leave notes there alone or ask the person."
                )

    def protected(self, path: str) -> bool:
        """Whether the rules keep ``path`` from being changed (deny, read-only, private)."""
        found = self._rule(path)
        return found is not None and found[1] in _PROTECTED

    def check_link_rewrites(self, operation: str, moved: str, paths: Iterable[str]) -> None:
        """Refuse a move whose link rewrites would change a note the rules protect (``paths``:
        the notes, other than the moved ones, whose links the move would rewrite; ``moved``: what
        moves, as the message names it). A denied
        note is not named: the agent may not learn it exists."""
        for path in paths:
            found = self._rule(path)
            if found is None or found[1] not in _PROTECTED:
                continue
            entry, access = found
            which = (
                "a note the vault's rules keep from the agent"
                if access == "deny"
                else f"'{path}' (in '{entry}', which the vault's rules "
                + ("make read-only)" if access == "read_only" else "keep private)")
            )
            raise PathRefusedError(
                f"{operation} was not run: moving {moved} would rewrite the links in {which} "
                "so that they keep leading to it. Nothing was moved; leave it where it is, or "
                "ask the person to move it in Obsidian or to change the rules."
            )

    def asks(self, path: str) -> str | None:
        """Why a change to ``path`` needs approval by the folder rules, or None."""
        found = self._rule(path)
        if found is not None and found[1] == "ask":
            return f"'{path}' is in '{found[0]}', where the vault's rules ask before changes"
        return None

    @property
    def has_asks(self) -> bool:
        """Whether any entry asks (``ask``): only then are a call's notes looked up for it."""
        return any(access == "ask" for _, _, access in self._entries)

    def asks_inside(self, folder: str) -> str | None:
        """Why a change to the whole of ``folder`` needs approval: an ``ask`` entry inside it
        (a folder moved or deleted takes its notes along), or None."""
        base = _norm(folder)
        for entry, written, access in self._entries:
            if access == "ask" and base and entry.startswith(base + "/"):
                return f"'{folder}' holds '{written}', where the vault's rules ask before changes"
        return None

    def untrusted_source(self, path: str) -> bool:
        return self.access(path) == "untrusted"

    def covers_inside(self, folder: str) -> str | None:
        """A deny, read-only or private entry inside ``folder`` (a folder-wide change touches
        it), or None."""
        base = _norm(folder)
        for entry, written, access in self._entries:
            if access in _PROTECTED and (not base or entry.startswith(base + "/")):
                return written
        return None

    # ----- results
    def redact(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` without denied notes, and with private notes' text withheld."""
        if not self.active:
            return result
        out = _redact(self, result)
        primary = result.get("primaryNote")
        if isinstance(primary, Mapping) and self.private_note(str(primary.get("path", ""))):
            out.pop("metadataSummary", None)
        return out if isinstance(out, dict) else result

    # ----- shown to the model
    def describe(self) -> str:
        """The rules in a few lines for the system prompt (empty when there are none to say)."""
        lines = []
        if self.mode == "read-only":
            lines.append("- Read-only: no tool may change the vault in this session.")
        elif self.mode == "ask":
            lines.append("- Every change asks the person first.")
        if self.deny:  # not named: the agent may not learn what they are
            lines.append(
                "- Some notes and folders are hidden from you: no tool shows, counts or changes "
                "them, and you cannot name your way to them."
            )
        names = {"read_only": "read-only", "ask": "changes ask first",
                 "private": "private (listed, text withheld)",
                 "untrusted": "untrusted (reading them makes every later change ask)"}  # fmt: skip
        for key in _ACCESS_KEYS:
            entries = getattr(self, key) if key != "deny" else ()
            if entries:
                lines.append(f"- {', '.join(entries)}: {names[key]}.")
        if not lines:
            return ""
        return (
            "The person set these rules for the vault; the tools enforce them and no argument "
            "changes them:\n" + "\n".join(lines)
        )


PATH_KEYS = ("path", "notePath")  # the keys under which results name a note
# What a private note keeps in a result: that it exists, where, and when it changed.
_PRIVATE_KEEP = frozenset(
    {"path", "notePath", "title", "noteTitle", "relevance", "relation", "created", "modified",
     "exists", "version", "dateSource"}
)  # fmt: skip


def _note_path(item: Mapping[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = item.get(key)
        if isinstance(value, str):
            return value
    return None


def _redact(rules: VaultRules, value: Any) -> Any:
    if isinstance(value, list):
        kept = []
        for item in value:
            path = _note_path(item) if isinstance(item, Mapping) else item
            if isinstance(path, str) and rules.hidden(path):
                continue
            kept.append(_redact(rules, item))
        return kept
    if not isinstance(value, Mapping):
        return value
    path = _note_path(value)
    if path is not None and rules.private_note(path):
        private = {k: v for k, v in value.items() if k in _PRIVATE_KEEP}
        private["private"] = True
        if "content" in value or "excerpt" in value or "context" in value:
            private["content" if "content" in value else "excerpt"] = PRIVATE_TEXT
        return private
    return {k: _redact(rules, v) for k, v in value.items()}


def _merge(base: _Table, over: _Table | None) -> dict[str, Any]:
    values = base.model_dump(exclude_none=True, exclude={"vault"})
    if over is not None:
        values.update(over.model_dump(exclude_none=True))
    return values


def load_rules(config: Mapping[str, Any], vault: Path, *, where: str = "config.toml") -> VaultRules:
    """The rules of ``vault`` from a config file's tables (``configfile.read_config``)."""
    raw = config.get("rules", {})
    try:
        table = RulesFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in first["loc"])
        raise SetupError(
            f"The [rules] table of {where} has a bad setting '{key}': {first['msg']}. "
            "Keys: mode, max_notes_per_run, deny, read_only, ask, private, untrusted, vault."
        ) from None
    chosen = None
    for name, over in table.vault.items():
        named = Path(name).expanduser()
        if name == vault.name or (named.is_absolute() and named.resolve() == vault.resolve()):
            chosen = over
    values = _merge(table, chosen)
    for key in _ACCESS_KEYS:
        if key in values:
            values[key] = tuple(values[key])
    return VaultRules(**values)
