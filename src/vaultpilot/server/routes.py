"""REST routes of the change journal, beside ``/rpc`` and the per-command routes:

* ``GET /history?vaultId=&limit=``: ``ChangeHistory``;
* ``GET /history/{id}?vaultId=``: ``ShowChangeSet`` (the unified diffs of one change set);
* ``POST /history/{id}/undo`` with an optional body ``{vaultId, skipChanged}``: ``UndoChangeSet``;
* ``GET /conversations/{id}?vaultId=``: a stored conversation's transcript, each run with its
  events and change set (``history.conversation_transcript``; read-only);
* ``GET /model-setup``: the built-in agent's model (null: none) and the config file the server
  reads (the agent view's no-model panel names it).

The journal's routes answer with the same envelope and HTTP status as the command's other
routes (they run through ``rpc.execute``); the two others answer their model, or the error
envelope. All are behind the same security middleware (key, session cookie, Host and Origin
checks). ``add_history_routes(app, state)`` adds them to the application.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from vaultpilot.configfile import config_path
from vaultpilot.errors import VaultpilotError
from vaultpilot.server import models as m
from vaultpilot.server.envelope import (
    Envelope,
    error_reply,
    failure,
    internal_failure,
    retry_headers,
    success,
)
from vaultpilot.server.history import conversation_transcript
from vaultpilot.server.rpc import execute
from vaultpilot.server.state import ServerState
from vaultpilot.server.validation import explain
from vaultpilot.tools.context import ToolContext

__all__ = ["UndoBody", "add_history_routes"]

log = logging.getLogger(__name__)


class UndoBody(BaseModel):
    """Options of ``POST /history/{id}/undo`` (the body may be left out)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    vaultId: str | None = Field(None, max_length=64)
    skipChanged: bool = False


class _UndoRoute(APIRoute):
    """``POST /history/{id}/undo``: a body that fails validation is answered in the words of
    the command the route runs (``UndoChangeSet``), as every other answer of the route is, not
    with the name of the path's last segment."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except RequestValidationError as exc:
                errors = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in exc.errors()]
                if any(e.get("type") == "json_invalid" for e in errors):
                    message = "The body is not valid JSON; send a JSON object."
                else:
                    message = explain("arguments for UndoChangeSet", UndoBody, errors)
                reply = failure(None, "UndoChangeSet", "invalid_argument", message)
                return JSONResponse(reply, status_code=400)
            return response

        return run


async def _run(state: ServerState, name: str, arguments: dict[str, Any]) -> JSONResponse:
    try:
        result = await execute(state, name, arguments, None)
    except VaultpilotError as err:
        envelope, status = error_reply(None, name, err)
        headers = retry_headers(envelope["error"]["code"])
        return JSONResponse(envelope, status_code=status, headers=headers)
    except Exception as exc:  # a bug: logged with its traceback, answered without it
        log.exception("command %s failed", name)
        return JSONResponse(internal_failure(None, name, exc), status_code=500)
    return JSONResponse(success(None, name, result))


async def _read(
    state: ServerState, vault_id: str | None, read: Callable[[ToolContext], dict[str, Any]]
) -> JSONResponse:
    try:
        vault = state.vaults.get(vault_id)
        result = await vault.run(read)
    except VaultpilotError as err:
        envelope, status = error_reply(None, None, err)
        return JSONResponse(envelope, status_code=status)
    except Exception as exc:  # a bug: logged with its traceback, answered without it
        log.exception("reading a conversation failed")
        return JSONResponse(internal_failure(None, None, exc), status_code=500)
    return JSONResponse(result)


def _model_setup(state: ServerState) -> m.ModelSetup:
    # The file the server read its settings from, or (none there) where it looks for one.
    path = state.settings.config_path or config_path()
    return m.ModelSetup(model=state.runs.model_name, configPath=str(path))


def _vault(vault_id: str | None) -> dict[str, Any]:
    return {"vaultId": vault_id} if vault_id is not None else {}


def add_history_routes(app: FastAPI, state: ServerState) -> None:
    """Add the journal's REST routes (see the module) to ``app``."""
    refused: dict[int | str, dict[str, Any]] = {
        s: {"model": Envelope[None], "description": "The command failed; see error.code."}
        for s in (400, 401, 403, 404, 409, 500, 503)
    }

    @app.get(
        "/history",
        response_model=Envelope[m.ChangeHistoryResult],
        responses=refused,
        operation_id="changeHistory",
    )
    async def history(vaultId: str | None = None, limit: int = 20) -> JSONResponse:
        """A vault's change sets, the latest first (ChangeHistory)."""
        return await _run(state, "ChangeHistory", {**_vault(vaultId), "limit": limit})

    @app.get(
        "/history/{set_id}",
        response_model=Envelope[m.ShowChangeSetResult],
        responses=refused,
        operation_id="showChangeSet",
    )
    async def show(set_id: str, vaultId: str | None = None) -> JSONResponse:
        """One change set with the unified diff of each file change (ShowChangeSet)."""
        return await _run(state, "ShowChangeSet", {**_vault(vaultId), "id": set_id})

    async def undo(set_id: str, body: UndoBody | None = None) -> JSONResponse:
        """Undo one change set as a new change set (UndoChangeSet)."""
        options = body or UndoBody()
        arguments = {**_vault(options.vaultId), "id": set_id, "skipChanged": options.skipChanged}
        return await _run(state, "UndoChangeSet", arguments)

    app.router.add_api_route(
        "/history/{set_id}/undo",
        undo,
        methods=["POST"],
        response_model=Envelope[m.UndoChangeSetResult],
        responses=refused,
        operation_id="undoChangeSet",
        route_class_override=_UndoRoute,
    )

    @app.get(
        "/conversations/{conversation_id}",
        response_model=m.ConversationTranscript,
        responses={s: refused[s] for s in (400, 401, 403, 404, 500, 503)},
        operation_id="conversationTranscript",
    )
    async def transcript(conversation_id: str, vaultId: str | None = None) -> JSONResponse:
        """A stored conversation of the vault: each run's message, events and change set."""
        return await _read(
            state, vaultId, lambda ctx: conversation_transcript(ctx, conversation_id)
        )

    @app.get("/model-setup", response_model=m.ModelSetup, operation_id="modelSetup")
    async def model_setup() -> m.ModelSetup:
        """The built-in agent's model (null: none configured) and the config file it reads."""
        return _model_setup(state)
