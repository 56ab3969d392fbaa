"""vaultpilot: agent mode for an Obsidian vault.

Layers, each importing only those to its left: ``vault`` ← ``index`` ← ``tools`` ← ``agent`` ←
transports (``cli``, ``server``, ``mcp``, ``contract``, ``web``). ``errors`` and ``locations`` are
shared by all of them.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
