"""The OpenAPI document's prose and security scheme (the shapes come from the pydantic models)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from vaultpilot.server.envelope import ERROR_TABLE

__all__ = ["DESCRIPTION", "describe"]

_CODES = "\n".join(f"| `{code}` | {status} | {cls.__name__} |" for cls, code, status in ERROR_TABLE)

DESCRIPTION = f"""\
The local server through which agents and the agent view call the vault: the tools of the
Agent Communication specification, the three vault tools, and the UI commands that start,
interrupt and steer an agent run.

**Authentication.** Every request needs `Authorization: Bearer <key>`. The key is in the
server's key file (`vaultpilot serve` prints where; `vaultpilot key rotate` replaces it). The
server answers only to loopback host names, and refuses requests from web pages of other
origins. A key in the URL is refused.

**Envelope.** Every reply is `{{id, commandName, success, result, error}}`; `error` is
`{{code, message}}` or null. `POST /rpc` answers 200 whether the command succeeded or not (read
`success`); the per-command routes answer with the status of the error code:

| code | HTTP | error |
|---|---|---|
{_CODES}
| `unauthorized` | 401 | missing or wrong key |
| `forbidden` | 403 | foreign Host or Origin |

**VaultID** names a configured vault (`GET /vaults`); it may be left out when the server serves
one vault. An unknown one is a `not_found` error listing the known IDs.

**UpdateNote `Changes`** is either a string (the note's whole new content; a note whose new
content has no frontmatter keeps its own) or an object: `content` (the whole new content) or
`append` (text added at the end), and/or `frontmatter` (properties to set; null removes one),
with an optional `expectedVersion` (refuse the change if the note changed since it was read).

**ExecuteShell** is off unless enabled in `[server.shell]`; then it runs the command in the
vault's root as an argument list (through `/bin/sh` only with `allow_shell`), with a timeout,
an output cap and a scrubbed environment, after approval over the WebSocket unless the command
starts with an allowlisted prefix.

**WebSocket `/ws`.** Send the same IToolCommand frames; replies come back as
`{{type: "reply", ...envelope}}`. Every socket also receives `event` frames (agent events,
approval requests), `status` frames (ReportStatus) and, after `Subscribe {{role: "agent"}}`,
`command` frames (StartAgent, InterruptAgent, ToolOverride for an external agent). A socket
without an `Authorization` header authenticates with the subprotocols `vaultpilot` and
`vaultpilot.key.<key>`, or with `Authenticate {{key}}` as its first frame.
"""


def describe(app: FastAPI) -> None:
    """Give ``app`` the description and the bearer security scheme, applied to every route."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=DESCRIPTION,
                routes=app.routes,
            )
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {})["bearer"] = {
                "type": "http",
                "scheme": "bearer",
                "description": "The key in the server's key file.",
            }
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
