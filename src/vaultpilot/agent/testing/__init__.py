"""A scripted, OpenAI-compatible model server, for tests and for checking a setup by hand.

    from vaultpilot.agent.testing import ScriptedModelServer, ScriptedTurn, ScriptedCall

    turns = [ScriptedTurn(tool_calls=[ScriptedCall(name="obsidian_query_vault",
                                                   arguments={"queryType": "recent_changes"})]),
             ScriptedTurn(text="Your latest note is ...")]
    with ScriptedModelServer(turns) as server:
        ...  # point the client at server.base_url; inspect server.requests afterwards

From a shell: ``python -m vaultpilot.agent.testing script.json`` prints the base URL and serves
until interrupted (``--record FILE`` writes the requests it received when it stops).
"""

from vaultpilot.agent.testing.script import Script, ScriptedCall, ScriptedTurn
from vaultpilot.agent.testing.server import RecordedRequest, ScriptedModelServer

__all__ = ["RecordedRequest", "Script", "ScriptedCall", "ScriptedModelServer", "ScriptedTurn"]
