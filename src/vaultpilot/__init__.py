"""vaultpilot: agent mode for an Obsidian vault.

Layers, each importing only those to its left: ``vault`` ← ``index``, ``memory`` ← ``tools``,
``contract`` ← ``agent`` ← transports (``cli``, ``server``, ``mcp``, ``web``). ``errors``,
``locations`` and ``configfile`` are shared by all of them. ARCHITECTURE.md has the
data flow and how to add an operation.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
