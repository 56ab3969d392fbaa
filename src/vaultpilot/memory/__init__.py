"""memory.db: vaultpilot's durable database (tool registry; later conversations, change journal).

``db.connect(path)`` opens it and applies ``db.MIGRATIONS``; ``registry`` reads and writes the
``tool_registry`` table through a connection it is given.
"""

__all__: list[str] = []
