"""One-time login links and browser sessions: how the agent view signs in without a key in a URL.

Contract:

* ``Sessions.issue_link()`` makes a login token (``secrets.token_urlsafe(32)``, 256 random bits)
  valid for ``link_ttl`` seconds (default ``LINK_TTL_S``) and for one use; the server keeps
  only its SHA-256. The CLI
  asks a running server for one over an authenticated call (``POST /login-link`` with the API
  key: ``vaultpilot open``), or ``vaultpilot serve`` makes one at start-up for its banner.
* ``Sessions.redeem(token)`` spends a token: it returns a new session id when the token is
  known, unused and unexpired, else None (a second use, an expired or an unknown token are all
  refused, and told apart only in the message of ``refusal``). The session id is what the page
  holds, in an ``HttpOnly; SameSite=Strict; Path=/`` cookie named ``COOKIE``.
* ``Sessions.check(session_id)`` says whether a cookie names a live session (sessions last
  ``SESSION_TTL_S`` and end with the server; they are kept as hashes too).

Tokens and sessions live in memory only: a restarted server forgets them, and a person runs
``vaultpilot open`` again. At most ``MAX_LINKS`` unused links and ``MAX_SESSIONS`` sessions are
kept (the oldest go first), so nothing grows without bound. Lookups go through the hash, so
comparing a guess never depends on how much of a real token it matches.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Literal

__all__ = [
    "COOKIE",
    "LINK_TTL_S",
    "MAX_LINKS",
    "MAX_SESSIONS",
    "SESSION_TTL_S",
    "Refusal",
    "Sessions",
    "cookie_header",
    "session_cookie",
]

COOKIE = "vaultpilot_session"
LINK_TTL_S = 300.0
SESSION_TTL_S = 7 * 24 * 3600.0
MAX_LINKS = 64
MAX_SESSIONS = 256
Refusal = Literal["used", "expired", "unknown"]


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class Sessions:
    """The login links and sessions of one server (see the module)."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, link_ttl: float = LINK_TTL_S
    ) -> None:
        self._clock = clock
        self.link_ttl = link_ttl  # seconds a new link stays valid
        self._links: OrderedDict[bytes, float] = OrderedDict()  # hash -> expiry
        self._spent: OrderedDict[bytes, float] = OrderedDict()  # used links, for the message
        self._sessions: OrderedDict[bytes, float] = OrderedDict()  # hash -> expiry

    def issue_link(self) -> tuple[str, float]:
        """A new one-time login token and the seconds it stays valid."""
        token = secrets.token_urlsafe(32)
        self._links[_digest(token)] = self._clock() + self.link_ttl
        while len(self._links) > MAX_LINKS:
            self._links.popitem(last=False)
        return token, self.link_ttl

    def redeem(self, token: str) -> str | None:
        """Spend ``token``: a new session id, or None when it may not be used (see ``refusal``)."""
        key = _digest(token)
        expiry = self._links.pop(key, None)
        now = self._clock()
        if expiry is None:
            return None
        self._spent[key] = expiry
        while len(self._spent) > MAX_LINKS:
            self._spent.popitem(last=False)
        if expiry < now:
            return None
        session = secrets.token_urlsafe(32)
        self._sessions[_digest(session)] = now + SESSION_TTL_S
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def refusal(self, token: str) -> Refusal:
        """Why ``redeem(token)`` returned None."""
        expiry = self._spent.get(_digest(token))
        if expiry is None:
            return "unknown"
        return "expired" if expiry < self._clock() else "used"

    def check(self, session_id: str | None) -> bool:
        if not session_id:
            return False
        key = _digest(session_id)
        expiry = self._sessions.get(key)
        if expiry is None:
            return False
        if expiry < self._clock():
            del self._sessions[key]
            return False
        return True


def session_cookie(raw_cookie_header: str | None) -> str | None:
    """The session id in a ``Cookie`` header, else None."""
    if not raw_cookie_header:
        return None
    for part in raw_cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None


def cookie_header(session_id: str) -> str:
    """The ``Set-Cookie`` value for a new session: script cannot read it, no other site sends
    it, and it lasts until the browser closes (the server forgets it sooner if it restarts)."""
    return f"{COOKIE}={session_id}; HttpOnly; SameSite=Strict; Path=/"
