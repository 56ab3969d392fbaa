"""The Agent Communication Server: authenticated local REST and WebSocket RPC over the vaults.

    settings = load_settings(vaults=["notes=~/Notes"])
    app = create_app(settings)          # FastAPI; serve it with uvicorn on settings.host:port

See ``app`` for the routes, ``auth`` for what every request must carry, ``rpc`` for the
commands, ``ws`` for the WebSocket protocol and ``envelope`` for the replies and error codes.
"""

from __future__ import annotations

from vaultpilot.server.app import create_app
from vaultpilot.server.settings import ServerSettings, load_settings

__all__ = ["ServerSettings", "create_app", "load_settings"]
