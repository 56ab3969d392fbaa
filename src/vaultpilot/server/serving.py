"""How the application is served under uvicorn: its settings (``uvicorn_config``), and an HTTP
protocol that closes a connection whose request head does not arrive in time.

Contract:

* ``uvicorn_config(app, ws_max_size=...)`` is the one ``uvicorn.Config`` that ``vaultpilot
  serve`` (and the tests' live server) runs the application with.
* ``HeaderTimeoutProtocol`` is uvicorn's httptools protocol (the parser uvicorn picks when
  ``httptools`` is installed, a dependency of this package) plus one rule: the request line and
  headers of a request must be complete within ``HEADER_TIMEOUT_S`` seconds of the connection
  being ready for it (accepted, or the previous response sent on a kept-alive connection), or the
  connection is closed, with a 408 reply saying why when any byte of the awaited request had
  arrived (even while the previous response was being sent).
  uvicorn has no such bound: its keep-alive timer stops at the first byte received, so a client
  sending its headers a byte at a time (slowloris) held a connection, and a file descriptor,
  forever, and enough of them refuse every other client. Once the headers are complete the timer
  is off: a slow body upload (bounded by ``limits``) and a WebSocket are not timed by it.

The hook, written against uvicorn 0.54 (``uvicorn.protocols.http.httptools_impl``): uvicorn
builds one protocol object per connection from ``Config(http=<class>)``; the class arms a timer
in ``connection_made``, again in ``on_response_complete`` when uvicorn arms its keep-alive timer
(it is then waiting for the next request), and disarms it in ``on_headers_complete`` (httptools'
callback when a request's head is parsed, before a WebSocket upgrade is handed over) and in
``connection_lost``. ``on_message_begin`` (a request's first byte) marks the awaited head as
started and ``on_headers_complete`` clears the mark. When part of the next request came during a
response, uvicorn's keep-alive timer (which only data arriving later cancels) is cancelled as the
response completes, so that the head is timed by this rule, with its 408, not closed silently at
the keep-alive. ``tests/server/test_slow_headers.py`` checks that uvicorn still calls them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEADER_TIMEOUT_S", "HeaderTimeoutProtocol", "header_timeout_protocol", "uvicorn_config"]

# Every client of this server (the agent view, the Obsidian plugin, the CLI, MCP clients, scripts
# using httpx) writes a request head, under a few KB, in one write: it arrives within a
# millisecond on loopback, and within a second even on a slow link to a server started with
# --allow-remote. 10 s leaves room for a machine stalled by load or swap; it is longer than
# uvicorn's 5 s keep-alive, so an idle kept-alive connection is still closed by that, silently;
# and it bounds what a slow client holds: a socket for 10 s, not forever.
HEADER_TIMEOUT_S = 10.0


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol that closes a connection whose request head is late (see
    the module)."""

    header_timeout: float = HEADER_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None
    _head_started = False  # a byte of the awaited request has arrived

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self._head_started:
            message = (
                f"The request line and headers did not arrive within {self.header_timeout:g} s, "
                "so the connection was closed. Send the whole request head at once."
            ).encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(message), message)
            )
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_started = True

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        self._head_started = False  # the next request's first byte is still to come
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # waiting for the next request
            if self._head_started:  # which began during the response: not idle
                self.timeout_keep_alive_task.cancel()
                self.timeout_keep_alive_task = None
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol with another timeout (the tests' live server uses a short one)."""
    if seconds == HEADER_TIMEOUT_S:
        return HeaderTimeoutProtocol
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})


def uvicorn_config(
    app: Any, *, ws_max_size: int, header_timeout: float = HEADER_TIMEOUT_S
) -> uvicorn.Config:
    """How the application is served (see the module)."""
    return uvicorn.Config(
        app,
        http=header_timeout_protocol(header_timeout),
        log_level="warning",
        ws="websockets-sansio",
        lifespan="on",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        # A larger WebSocket message is refused (close 1009) before it is buffered; HTTP bodies
        # are bounded by the application itself (server.limits).
        ws_max_size=ws_max_size,
    )
