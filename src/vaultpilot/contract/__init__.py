"""The stdin/stdout agent contract: one ``ActionRequest`` JSON in, one ``ActionResponse`` JSON out.

Modules (import the one you need; this package imports nothing, so an agent's start stays fast):

* ``models``       pydantic models of the wire shapes and the JSON Schemas derived from them
* ``wire``         stdlib-only request parsing and reply building, used on the agents' hot path
* ``jsonlog``      JSON-lines logs on stderr carrying the ``correlation_id``
* ``obsidian_agent``, ``git_agent``   the two agent programs (console scripts)
* ``catalog``      the process tools vaultpilot ships, as registry entries
* ``orchestrator`` spawn a process tool, enforce a timeout, validate its reply
"""

__all__: list[str] = []
