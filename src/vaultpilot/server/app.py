"""``create_app(settings)``: the Agent Communication Server as a FastAPI application.

Routes (every one behind ``SecurityMiddleware``: loopback Host, own Origin, the API key):

* ``POST /rpc``: one ``IToolCommand``; the reply is the envelope, HTTP 200 whether the command
  succeeded or not (``success`` says), 400 when the body is not an ``IToolCommand``.
* ``POST /tools/<name>``: the five tools of the specification and the three vault tools, with
  the command's arguments as the body; ``POST /agent/<command>``: StartAgent, InterruptAgent,
  ToolOverride, ApproveToolCall. Same code as ``/rpc``; failures use the HTTP status of their
  error code (``envelope.ERROR_TABLE``).
* Every HTTP body is at most ``max_body_size`` bytes (413 ``payload_too_large``, refused while
  it is read) and must be UTF-8 text without lone surrogates (400); see ``limits``. A
  ``vault_busy`` failure carries ``Retry-After``; a bug is a 500 ``internal_error`` whose
  traceback goes to the log, never to the client (``envelope.error_reply``).
* ``GET /vaults``: the configured vaults, with their semantic-search coverage and the state of
  their background embedding.
* ``GET /openapi.json``: the OpenAPI document (key required; there is no docs page, since a
  browser page could not send the key).
* ``WS /ws``: see ``ws``.
* The agent view (``vaultpilot.web``): ``GET /`` (``/index.html``), ``/app.js``, ``/app.css``,
  served without a key (they hold no data; ``auth``), and ``HEAD`` of each (the same headers,
  no body). ``POST /login-link`` (key only) makes a one-time login link; ``GET /login?token=...``
  spends it for a session cookie and redirects to ``/#vaultpilot-page=<page secret>``: the
  fragment is never sent to a server, the page moves it into its origin's storage and out of
  the address bar, and sends it with the cookie (a used, expired or unknown link gets a page
  saying to run ``vaultpilot open``); see ``sessions``: sessions are kept in the data folder,
  so a restarted server still knows them. ``POST /logout`` ends the session of the cookie it
  carries (with its page secret, like any request signed in by the cookie) and makes the
  browser forget it.
  ``GET /conversations?vaultId=`` lists a vault's stored conversations.

The application owns no global state: everything lives in the ``ServerState`` made here. The
vaults' indexes are synced at start-up and, unless ``background_embedding`` is off, each gets a
background embedder (see ``vaults``); the built-in agent's model client (from the agent
configuration, unless ``model`` is passed) is made at start-up and closed at shutdown, with the
runs and the vaults.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, get_args

from fastapi import FastAPI, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import AliasChoices, BaseModel, Field, create_model
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

import vaultpilot
from vaultpilot.agent.config import AgentConfig, load_config, require_model
from vaultpilot.agent.model import ModelClient
from vaultpilot.agent.providers import make_model
from vaultpilot.errors import SetupError, VaultpilotError
from vaultpilot.index.embedding.base import Embedder
from vaultpilot.index.semantic import select_embedder
from vaultpilot.locations import memory_db_path
from vaultpilot.mcp import build_http_app
from vaultpilot.server import models as m
from vaultpilot.server.approvals import ApprovalBroker
from vaultpilot.server.auth import PAGE_FRAGMENT, SecurityMiddleware
from vaultpilot.server.envelope import (
    Envelope,
    ErrorCode,
    error_reply,
    failure,
    internal_failure,
    retry_headers,
    success,
)
from vaultpilot.server.fastrpc import ToolCallShortcut
from vaultpilot.server.keyfile import KeyStore, ensure_key
from vaultpilot.server.limits import BodyLimitMiddleware, too_large_message
from vaultpilot.server.openapi import describe
from vaultpilot.server.routes import add_history_routes
from vaultpilot.server.rpc import dispatch, dispatch_text, execute
from vaultpilot.server.runs import Runs
from vaultpilot.server.sessions import (
    Sessions,
    clear_cookie_header,
    cookie_header,
    scope_port,
    session_cookie,
)
from vaultpilot.server.settings import ServerSettings, is_loopback
from vaultpilot.server.state import ServerState
from vaultpilot.server.validation import explain
from vaultpilot.server.vaults import VaultHandle, Vaults
from vaultpilot.server.view import login_refused_page, static_files
from vaultpilot.server.ws import Hub, Subscriber, serve
from vaultpilot.tools import get_tool

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_TOOL_RESULTS: dict[str, type[BaseModel]] = {
    "GetVaultContext": m.VaultContext,
    "ExecuteShell": m.ShellResult,
    "CreateNote": m.CreateNoteResult,
    "UpdateNote": m.UpdateNoteResult,
    "ReportStatus": m.SuccessResult,
}
_AGENT_RESULTS: dict[str, type[BaseModel]] = {
    "StartAgent": m.StartAgentResult,
    "InterruptAgent": m.InterruptAgentResult,
    "ResumeAgent": m.ResumeAgentResult,
    "ToolOverride": m.ToolOverrideResult,
    "ApproveToolCall": m.ApproveToolCallResult,
}
_ERROR_STATUSES = (400, 401, 403, 404, 409, 413, 422, 500, 502, 503)


def _tool_request_model(name: str) -> type[BaseModel]:
    """A vault tool's parameters plus ``VaultID``: the body of ``POST /tools/<name>``."""
    params = get_tool(name).params
    model: type[BaseModel] = create_model(
        f"{params.__name__.removesuffix('Params')}Request",
        __base__=params,
        vault_id=(
            str | None,
            Field(None, validation_alias=AliasChoices("VaultID", "vaultId"), max_length=64),
        ),
    )
    return model


def _configured_model(settings: ServerSettings) -> tuple[ModelClient | None, AgentConfig, str]:
    """The built-in agent's model from the agent configuration, or why there is none."""
    try:
        loaded = load_config(path=settings.config_path)
        return make_model(require_model(loaded)), loaded.config, ""
    except SetupError as err:
        return None, AgentConfig(), err.message


async def _close_model(model: ModelClient | None) -> None:
    client = getattr(model, "client", None)
    close = getattr(client, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def _validation_reply(request: Request, exc: RequestValidationError) -> JSONResponse:
    path = request.url.path
    name = path.rsplit("/", 1)[-1] if path != "/rpc" else None
    errors = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in exc.errors()]
    body: Any = getattr(exc, "body", None)
    if any(e.get("type") == "json_invalid" for e in errors):
        message = "The body is not valid JSON; send a JSON object."
    elif any(e.get("type") == "missing" and not e["loc"] for e in errors):
        message = "The request needs a JSON object as its body."
    elif path == "/rpc" and not isinstance(body, dict):
        message = "A command must be a JSON object: {id, commandName, arguments, timestamp}."
    elif path == "/rpc":
        message = explain("IToolCommand", m.ToolCommand, errors)
    else:
        model = m.ARGUMENT_MODELS.get(name or "") or m.ToolCommand
        message = explain(f"arguments for {name}", model, errors)
    raw_id = body.get("id") if isinstance(body, dict) and path == "/rpc" else None
    raw_name = body.get("commandName") if isinstance(body, dict) and path == "/rpc" else name
    reply = failure(
        raw_id if isinstance(raw_id, str) else None,
        raw_name if isinstance(raw_name, str) else None,
        "invalid_argument",
        message,
    )
    return JSONResponse(reply, status_code=400)


def _install_error_handlers(app: FastAPI, *, max_body: int) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_reply(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code: ErrorCode = "invalid_argument"
        if exc.status_code == 404:
            code, message = "not_found", f"No route {request.method} {request.url.path}; see "
            message += "/openapi.json."
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}: {exc.detail}."
        elif exc.status_code == 413:
            code, message = "payload_too_large", too_large_message(max_body)
        else:  # FastAPI's own 400: a body it could not parse (e.g. nested too deeply)
            message = (
                f"The request to {request.url.path} could not be read ({exc.detail}); send one "
                "JSON object, nested at most a few levels."
            )
        return JSONResponse(
            failure(None, None, code, message),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s", request.url.path, exc_info=exc)
        return JSONResponse(internal_failure(None, None, exc), status_code=500)


def _reply(envelope: dict[str, Any], status: int = 200) -> JSONResponse:
    error = envelope.get("error")
    headers = retry_headers(error["code"]) if error else None
    return JSONResponse(envelope, status_code=status, headers=headers)


def _command_route(
    app: FastAPI,
    state: ServerState,
    path: str,
    name: str,
    body_model: type[BaseModel],
    result_model: Any,
    summary: str,
    description: str | None = None,
) -> None:
    async def endpoint(body: BaseModel) -> JSONResponse:
        try:
            result = await execute(state, name, body, None)
        except VaultpilotError as err:
            return _reply(*error_reply(None, name, err))
        except Exception as exc:  # a bug: logged with its traceback, answered without it
            log.exception("command %s failed", name)
            return _reply(internal_failure(None, name, exc), 500)
        return JSONResponse(success(None, name, result))

    # FastAPI reads the body's type from the signature; each route gets its own model.
    params = [inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=body_model)]
    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = f"command_{name}"
    errors: dict[int | str, dict[str, Any]] = {
        s: {"model": Envelope[None], "description": "The command failed; see error.code."}
        for s in _ERROR_STATUSES
    }
    app.post(
        path,
        response_model=Envelope[result_model],
        responses=errors,
        summary=summary,
        # The model's own docstring (not one inherited from pydantic's BaseModel).
        description=description or inspect.cleandoc(body_model.__dict__.get("__doc__") or summary),
        operation_id=name,
    )(endpoint)


async def _embedding_info(vault: VaultHandle) -> m.EmbeddingInfo:
    progress, status = await asyncio.to_thread(vault.embedding)
    return m.EmbeddingInfo(
        state=progress.state if progress else "off",
        chunksEmbedded=status.embedded,
        chunks=status.chunks,
        notesPending=status.notes_pending,
        model=status.model or (progress.model if progress else None),
        rate=round(progress.rate, 1) if progress else 0.0,
        problem=progress.problem if progress else None,
    )


_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def _static_route(app: FastAPI, name: str, body: bytes, media: str) -> None:
    async def serve_file() -> Response:
        # HEAD too: uvicorn sends the headers (Content-Length included) without the body.
        return Response(body, media_type=media, headers=_PAGE_HEADERS)

    paths = ["/", "/index.html"] if name == "index.html" else [f"/{name}"]
    for path in paths:
        app.api_route(path, methods=["GET", "HEAD"], include_in_schema=False)(serve_file)


def _routes(app: FastAPI, state: ServerState) -> None:
    """Every route, in the order the OpenAPI document lists them."""
    _command_routes(app, state)
    _listing_routes(app, state)
    _page_routes(app, state)
    _websocket_route(app, state)


def _command_routes(app: FastAPI, state: ServerState) -> None:
    """/rpc, and one route per command: the tools and the agent view's commands."""
    rpc_errors: dict[int | str, dict[str, Any]] = {
        s: {"model": Envelope[None], "description": "Refused; see error.code."}
        for s in (400, 401, 403, 413)
    }

    @app.post(
        "/rpc",
        response_model=Envelope[dict[str, Any]],
        responses=rpc_errors,
        summary="Run one IToolCommand",
        operation_id="rpc",
    )
    async def rpc(command: m.ToolCommand) -> JSONResponse:
        """Any command by name; the reply's ``success`` says whether it succeeded."""
        return _reply(await dispatch(state, command, None))

    for name in m.ACS_TOOLS:
        _command_route(
            app, state, f"/tools/{name}", name, m.ARGUMENT_MODELS[name], _TOOL_RESULTS[name], name
        )
    for name in m.AGENT_TOOLS:
        tool = get_tool(name)
        _command_route(
            app, state, f"/tools/{name}", name, _tool_request_model(name), dict[str, Any],
            tool.title, tool.description,
        )  # fmt: skip
    for name in m.UI_COMMANDS:
        _command_route(
            app, state, f"/agent/{name}", name, m.ARGUMENT_MODELS[name], _AGENT_RESULTS[name], name
        )


def _listing_routes(app: FastAPI, state: ServerState) -> None:
    """The vaults served and a vault's stored conversations."""

    @app.get("/vaults", response_model=list[m.VaultInfo], operation_id="vaults")
    async def vaults() -> list[m.VaultInfo]:
        """The vaults this server serves, by VaultID, with their semantic-search coverage."""
        return [
            m.VaultInfo(
                vaultId=v.vault_id,
                name=v.name,
                embedding=await _embedding_info(v),
                index=m.IndexInfo.model_validate(v.live()),
            )
            for v in state.vaults.handles()
        ]

    @app.get(
        "/conversations",
        response_model=list[m.ConversationInfo],
        responses={
            s: {"model": Envelope[None], "description": "Refused; see error.code."}
            for s in (400, 404, 500)
        },
        operation_id="conversations",
    )
    async def conversations(vaultId: str | None = None) -> Any:
        """A vault's stored conversations, the latest first (continue one with StartAgent's
        ``conversationId``)."""
        try:
            vault = state.vaults.get(vaultId)
            stored = state.runs.conversations(vault)
        except VaultpilotError as err:
            return _reply(*error_reply(None, None, err))
        running = state.runs.running_conversations()
        return [
            m.ConversationInfo(
                id=c.id,
                title=c.title,
                updated=round(c.updated_at * 1000),
                running=c.id in running,
            )
            for c in stored
        ]


def _page_routes(app: FastAPI, state: ServerState) -> None:
    """Signing a browser in, and the agent view's page and assets."""

    @app.post("/login-link", response_model=m.LoginLink, operation_id="loginLink")
    async def login_link(request: Request) -> m.LoginLink:
        """A one-time link that signs a browser in to the agent view (key required; the
        link works once, within ``expiresIn`` seconds)."""
        token, ttl = state.sessions.issue_link()
        path = f"/login?token={token}"
        host = request.headers.get("host", f"{state.settings.host}:{state.settings.port}")
        return m.LoginLink(url=f"http://{host}{path}", path=path, expiresIn=ttl)

    files = static_files()

    @app.get("/login", include_in_schema=False)
    async def login(request: Request, token: str = "") -> Response:
        signed_in = state.sessions.redeem(token) if token else None
        port = scope_port(request.scope)
        if signed_in is None:
            if state.sessions.check(session_cookie(request.headers.get("cookie"), port)):
                # This browser is signed in already (a link opened twice): on to the view.
                return RedirectResponse("/", status_code=303, headers=_NO_STORE)
            why = state.sessions.refusal(token) if token else "unknown"
            return HTMLResponse(login_refused_page(why), status_code=401, headers=_NO_STORE)
        # 303: the browser fetches / with GET, and the token leaves the address bar. The page
        # secret rides in the fragment, which no browser sends to any server (see sessions).
        headers = {**_NO_STORE, "Set-Cookie": cookie_header(signed_in.session, port)}
        where = f"/#{PAGE_FRAGMENT}={signed_in.page}"
        return RedirectResponse(where, status_code=303, headers=headers)

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        """End this browser's session (the cookie's) everywhere, and clear the cookie."""
        port = scope_port(request.scope)
        ended = state.sessions.sign_out(session_cookie(request.headers.get("cookie"), port))
        headers = {**_NO_STORE, "Set-Cookie": clear_cookie_header(port)}
        return JSONResponse({"signedOut": ended}, headers=headers)

    for name, (body, media) in files.items():
        _static_route(app, name, body, media)


def _websocket_route(app: FastAPI, state: ServerState) -> None:
    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        def hello(sub: Subscriber) -> dict[str, Any]:
            return {
                "server": "vaultpilot",
                "version": vaultpilot.__version__,
                "vaults": state.vaults.ids(),
                "role": sub.role,
                "model": state.runs.model_name,
                "commands": list(get_args(m.CommandName)),
                "server_id": state.server_id,
            }

        async def run_frame(text: str, sub: Subscriber) -> dict[str, Any]:
            return await dispatch_text(state, text, sub)

        await serve(
            ws,
            hub=state.hub,
            keys=state.keys,
            session_status=state.sessions.status,
            dispatch=run_frame,
            hello=hello,
            queue_size=state.settings.subscriber_queue,
            max_message=state.settings.max_body_size,
        )


def create_app(
    settings: ServerSettings,
    *,
    model: ModelClient | None = None,
    agent_config: AgentConfig | None = None,
    embedder: Callable[[], Embedder] = select_embedder,
) -> FastAPI:
    """The server for ``settings``.

    The built-in agent uses ``model`` and ``agent_config`` when given; else, at start-up, the
    model of the agent configuration (``vaultpilot config``), if one is configured. ``embedder``
    loads the embedding model (default: the one the settings choose, see
    ``index.semantic.select_embedder``); it is loaded once, on first use, for all the vaults.
    """
    key, _ = ensure_key(settings.key_path)
    keys = KeyStore(settings.key_path, key)
    hub = Hub()
    vaults = Vaults(
        settings.vaults,
        settings.index_db,
        embedder=functools.cache(embedder),
        lock_wait=settings.write_lock_wait,
        watch=settings.watch,
        config_file=settings.config_path,
        # The children load the default embedder themselves: another one stays in this process.
        read_workers=settings.read_workers if embedder is select_embedder else 0,
    )
    runs = Runs(
        settings=settings,
        hub=hub,
        key=keys.current,
        model=model,
        config=agent_config,
        memory_path=memory_db_path(settings.data_root),
    )
    sessions = Sessions(path=settings.sessions_path, key=keys.current)
    state = ServerState(settings, keys, hub, vaults, runs, ApprovalBroker(hub), sessions)
    # MCP over streamable HTTP at /mcp: the same vault sessions (locks, index, embedding), behind
    # the same key and Host/Origin checks, with the agent's approval rules.
    mcp_http = build_http_app(
        {h.vault_id: h for h in vaults.handles()},
        approvals=runs.approvals,  # one rule reader for /mcp, /rpc and /ws
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        built: ModelClient | None = None
        if model is None:
            built, config, problem = await asyncio.to_thread(_configured_model, settings)
            runs.set_model(built, config, problem)
        for handle in vaults.handles():
            await asyncio.to_thread(handle.open)
            if settings.background_embedding:
                handle.start_embedding(poll=settings.rescan_interval)
            await handle.start_readers()
        try:
            async with mcp_http.running():
                yield
        finally:
            await runs.shutdown()
            runs.close()
            for handle in vaults.handles():
                await handle.stop_readers()
                await asyncio.to_thread(handle.close)
            await _close_model(built)

    app = FastAPI(
        title="vaultpilot Agent Communication Server",
        version=vaultpilot.__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
    )
    _install_error_handlers(app, max_body=settings.max_body_size)
    _routes(app, state)
    add_history_routes(app, state)
    app.router.routes.append(Route("/mcp", endpoint=mcp_http.app))  # the exact path, no redirect
    describe(app)
    hosts = {settings.host.lower()}
    if settings.allow_remote and not is_loopback(settings.host):
        hosts.add("*" if settings.host in ("0.0.0.0", "::") else settings.host)  # noqa: S104
    # Innermost: vault tool calls on /rpc, answered past the router (``fastrpc``), once every
    # check below has passed.
    app.add_middleware(ToolCallShortcut, state=state)
    # Added before SecurityMiddleware, so it runs inside it: a request without the key is
    # refused before its body is read at all.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_size)
    app.add_middleware(
        SecurityMiddleware,
        keys=keys,
        allowed_origins=settings.allowed_origins,
        allowed_hosts=hosts,
        sessions=state.sessions,
    )
    app.state.vaultpilot = state
    return app
