"""Where an agent program acts: the vault a folder lies in, and that vault's rules.

``VaultScope.of(folder)`` is what ``obsidian_agent`` (its ``vault_path``) and ``git_agent`` (its
``repo_path``) keep to: ``vault`` is the vault ``folder`` lies in (``locations.enclosing_vault``:
a sub-folder of a vault is that vault's, for its rules, write lock and journal), ``inside`` is
where ``folder`` is in it ("." at its root), and ``rules`` are the vault's ``[rules]`` from the
config file, or None when the file sets none. ``tools.rules`` (and its pydantic validation) is
imported only in that case, so a round trip of ``obsidian_agent`` stays light.
``in_vault(name)`` and ``in_folder(entry)`` turn a name between the two.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vaultpilot.configfile import config_path, read_config
from vaultpilot.locations import enclosing_vault

if TYPE_CHECKING:
    from vaultpilot.tools.rules import VaultRules

__all__ = ["VaultScope"]


@dataclass(frozen=True, slots=True)
class VaultScope:
    vault: Path
    inside: str
    rules: VaultRules | None

    @classmethod
    def of(cls, folder: Path) -> VaultScope:
        vault = enclosing_vault(folder)
        inside = Path(os.path.realpath(folder)).relative_to(vault).as_posix()
        path = config_path()
        config = read_config(path) if path.is_file() else {}
        if "rules" not in config:
            return cls(vault, inside, None)
        from vaultpilot.tools.rules import load_rules

        return cls(vault, inside, load_rules(config, vault, where=str(path)))

    def in_vault(self, name: str) -> str:
        """A name given relative to the folder, as the vault names it."""
        return os.path.normpath(os.path.join(self.inside, name)).replace(os.sep, "/")

    def in_folder(self, entry: str) -> str:
        """A vault-relative name (a rules entry) as a path from the folder."""
        return os.path.relpath(os.path.join(".", entry), self.inside).replace(os.sep, "/")
