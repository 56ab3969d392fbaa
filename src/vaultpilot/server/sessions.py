"""One-time login links and browser sessions: how the agent view signs in without a key in a URL.

Contract:

* ``Sessions.issue_link()`` makes a login token (``secrets.token_urlsafe(32)``, 256 random bits)
  valid for ``link_ttl`` seconds (default ``LINK_TTL_S``) and for one use; the server keeps
  only its SHA-256. The CLI asks a running server for one over an authenticated call
  (``POST /login-link`` with the API key: ``vaultpilot open``), or ``vaultpilot serve`` makes one
  at start-up for its banner. Links live in memory: a restart forgets the unused ones.
* ``Sessions.redeem(token)`` spends a token: it returns a new ``SignIn`` when the token is
  known, unused and unexpired, else None (a second use, an expired or an unknown token are all
  refused, and told apart only in the message of ``refusal``). A sign-in is two secrets of 256
  random bits each. The session id goes into an ``HttpOnly; SameSite=Strict; Path=/`` cookie
  named ``cookie_name(port)``; browsers send cookies of a host to every port of it, so a program
  listening on another port of this machine may see it, and it is not enough on its own. The
  page secret reaches the page only in the URL fragment of the redirect after ``/login``
  (browsers never send a fragment to any server); the page keeps it in its origin's storage
  (scheme, host and port: no other port can read it) and sends it beside the cookie on every
  request (``auth``).
* ``Sessions.status(session_id)`` says whether a cookie names a live session (``active``), one
  that ran out (``expired``: sessions last ``SESSION_TTL_S``), or none this server knows
  (``unknown``: never made, signed out, or made under a key since rotated); ``check`` is
  ``status == "active"``. ``page_status(session_id, page)`` also checks the page secret, in
  constant time: a live session with a missing or wrong one is ``no_page``. ``sign_out`` ends a
  session, and with it its page secret.

Sessions survive a restart: with a ``path`` (``<data root>/sessions.json``, see
``ServerSettings.sessions_path``), the store keeps there the SHA-256 of each session id and of
its page secret (never the secrets) with its expiry in wall-clock seconds, and a fingerprint of
the API key they were made under. A file of the format before page secrets (1) holds sessions
no page can complete: they are dropped (those browsers sign in again). The file is written 0600
in a 0700 folder, atomically (temporary file, fsync, rename), on every change; it is read again
when another process (a second server on the same data folder) changed it. Rotating the API key
(``vaultpilot key rotate``) signs every browser out: sessions of another key's fingerprint are
dropped, in a running server at the next request. A file that cannot be read is reported in the
log and treated as empty (browsers sign in again); one that cannot be written leaves the
sessions working until the server stops.

At most ``MAX_LINKS`` unused links and ``MAX_SESSIONS`` sessions are kept (the oldest go first),
and sessions expired for longer than ``SESSION_TTL_S`` are forgotten, so nothing grows without
bound. Lookups go through the hash, and page secrets are compared with ``hmac.compare_digest``,
so comparing a guess never depends on how much of a real secret it matches.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vaultpilot.server.keyfile import write_private

__all__ = [
    "COOKIE",
    "LINK_TTL_S",
    "MAX_LINKS",
    "MAX_SESSIONS",
    "SESSION_TTL_S",
    "PageStatus",
    "Refusal",
    "SessionStatus",
    "Sessions",
    "SignIn",
    "clear_cookie_header",
    "cookie_header",
    "cookie_name",
    "key_fingerprint",
    "scope_port",
    "session_cookie",
]

log = logging.getLogger(__name__)

COOKIE = "vaultpilot_session"
LINK_TTL_S = 300.0
SESSION_TTL_S = 7 * 24 * 3600.0
MAX_LINKS = 64
MAX_SESSIONS = 256
_FORMAT = 2  # 1: sessions without page secrets (dropped when read)
Refusal = Literal["used", "expired", "unknown"]
SessionStatus = Literal["active", "expired", "unknown"]
PageStatus = Literal["active", "expired", "unknown", "no_page"]
_Stamp = tuple[int, int, int]
_Entry = tuple[float, bytes]  # expiry, SHA-256 of the page secret
_NOT_A_PAGE = bytes(32)  # what a missing page secret is compared with (it never matches)


@dataclass(frozen=True, slots=True)
class SignIn:
    """What a redeemed login link gives a browser: the cookie's session id and the page's
    secret (see the module)."""

    session: str
    page: str


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def key_fingerprint(key: str) -> str:
    """What the sessions file records of the API key: 64 bits of a hash, enough to notice a
    rotation, nothing a reader could use."""
    return hashlib.sha256(b"vaultpilot sessions\0" + key.encode("utf-8")).hexdigest()[:16]


class Sessions:
    """The login links and sessions of one server (see the module)."""

    def __init__(
        self,
        *,
        path: Path | None = None,
        key: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.time,
        link_ttl: float = LINK_TTL_S,
    ) -> None:
        self._path = path  # None: in memory only
        self._key = key  # the API key in force; None: sessions outlive any rotation
        self._clock = clock
        self.link_ttl = link_ttl  # seconds a new link stays valid
        self._links: OrderedDict[bytes, float] = OrderedDict()  # hash -> expiry
        self._spent: OrderedDict[bytes, float] = OrderedDict()  # used links, for the message
        self._sessions: OrderedDict[bytes, _Entry] = OrderedDict()  # hash -> expiry, page hash
        self._fingerprint = key_fingerprint(key()) if key is not None else ""
        self._stamp: _Stamp | None = None
        self._load()

    # links

    def issue_link(self) -> tuple[str, float]:
        """A new one-time login token and the seconds it stays valid."""
        self._follow_key()
        token = secrets.token_urlsafe(32)
        self._links[_digest(token)] = self._clock() + self.link_ttl
        while len(self._links) > MAX_LINKS:
            self._links.popitem(last=False)
        return token, self.link_ttl

    def redeem(self, token: str) -> SignIn | None:
        """Spend ``token``: a new sign-in, or None when it may not be used (see ``refusal``)."""
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
        made = SignIn(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        self._refresh()
        self._follow_key()  # a session made now belongs to the key in force now
        self._sessions[_digest(made.session)] = (now + SESSION_TTL_S, _digest(made.page))
        self._prune(now)
        self._save()
        return made

    def refusal(self, token: str) -> Refusal:
        """Why ``redeem(token)`` returned None."""
        expiry = self._spent.get(_digest(token))
        if expiry is None:
            return "unknown"
        return "expired" if expiry < self._clock() else "used"

    # sessions

    def status(self, session_id: str | None) -> SessionStatus:
        """What ``session_id`` (a cookie's value) names: see the module."""
        entry = self._entry(session_id)
        if entry is None:
            return "unknown"
        return "active" if entry[0] >= self._clock() else "expired"

    def page_status(self, session_id: str | None, page: str | None) -> PageStatus:
        """``status(session_id)``, and ``no_page`` for a live session when ``page`` is not its
        page secret (compared in constant time)."""
        entry = self._entry(session_id)
        if entry is None:
            return "unknown"
        if entry[0] < self._clock():
            return "expired"
        given = _digest(page) if page else _NOT_A_PAGE
        return "active" if hmac.compare_digest(given, entry[1]) and page else "no_page"

    def _entry(self, session_id: str | None) -> _Entry | None:
        if not session_id:
            return None
        self._refresh()  # another server on the same data folder may have signed it in or out
        self._follow_key()
        return self._sessions.get(_digest(session_id))

    def check(self, session_id: str | None) -> bool:
        return self.status(session_id) == "active"

    def sign_out(self, session_id: str | None) -> bool:
        """End the session ``session_id`` names; whether there was one to end."""
        if not session_id:
            return False
        self._refresh()
        self._follow_key()
        if self._sessions.pop(_digest(session_id), None) is None:
            return False
        self._save()
        return True

    def __len__(self) -> int:
        """The sessions kept (live or recently expired)."""
        return len(self._sessions)

    # the file

    def _follow_key(self) -> None:
        """A rotated API key signs every browser out (here and in the file)."""
        if self._key is None:
            return
        current = key_fingerprint(self._key())
        if current != self._fingerprint:
            self._fingerprint = current
            self._sessions.clear()
            self._save()

    def _prune(self, now: float) -> None:
        for digest, (expiry, _page) in list(self._sessions.items()):
            if expiry + SESSION_TTL_S < now:
                del self._sessions[digest]
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)

    def _file_stamp(self) -> _Stamp | None:
        if self._path is None:
            return None
        try:
            st = self._path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _refresh(self) -> bool:
        """Read the file again if another process changed it; whether it did."""
        if self._path is None or self._file_stamp() == self._stamp:
            return False
        self._load()
        return True

    def _load(self) -> None:
        if self._path is None:
            return
        self._stamp = self._file_stamp()
        if self._stamp is None:
            self._sessions.clear()
            return
        try:
            data = json.loads(self._path.read_bytes())
            if isinstance(data, dict) and data.get("format") == 1:
                self._signed_out(logging.INFO, "predates page secrets")
                return
            if not isinstance(data, dict) or data.get("format") != _FORMAT:
                raise ValueError(f"not a sessions file of format {_FORMAT}")
            entries = [
                (bytes.fromhex(h), (float(e["expires"]), bytes.fromhex(e["page"])))
                for h, e in data["sessions"].items()
            ]
            loaded = OrderedDict(sorted(entries, key=lambda item: item[1][0]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self._signed_out(logging.WARNING, f"cannot be read ({exc})")
            return
        if self._key is not None and data.get("key") != self._fingerprint:
            loaded.clear()  # made under a key since rotated: signed out
        self._sessions = loaded

    def _signed_out(self, level: int, why: str) -> None:
        """The file's sessions cannot be used (``why``): every browser signs in again."""
        log.log(level, "the browser sessions file %s %s: browsers sign in again", self._path, why)
        self._sessions.clear()

    def _save(self) -> None:
        if self._path is None:
            return
        payload = {
            "format": _FORMAT,
            "key": self._fingerprint,
            "sessions": {
                h.hex(): {"expires": e, "page": p.hex()} for h, (e, p) in self._sessions.items()
            },
        }
        try:
            write_private(self._path, json.dumps(payload, indent=1).encode("ascii"))
        except OSError as exc:
            log.warning(
                "could not write the browser sessions file %s (%s): sign-ins last until the "
                "server stops",
                self._path,
                exc.strerror or exc,
            )
            return
        self._stamp = self._file_stamp()


def cookie_name(port: int | None) -> str:
    """The session cookie's name for the server on ``port``: browsers keep cookies by host, not
    by port, so two servers on one machine (``--port 34701``) would otherwise replace, and then
    clear, each other's sign-in."""
    return f"{COOKIE}_{port}" if port else COOKIE


def scope_port(scope: Mapping[str, Any]) -> int | None:
    """The port the request came in on (the ASGI scope's ``server``), if known."""
    server = scope.get("server")
    return int(server[1]) if server and len(server) > 1 and server[1] else None


def session_cookie(raw_cookie_header: str | None, port: int | None = None) -> str | None:
    """The session id in a ``Cookie`` header, else None."""
    if not raw_cookie_header:
        return None
    wanted = cookie_name(port)
    for part in raw_cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == wanted and value:
            return value
    return None


def cookie_header(session_id: str, port: int | None = None) -> str:
    """The ``Set-Cookie`` value for a new session: script cannot read it, no other site sends
    it, and it lasts until the browser closes (the server forgets it sooner, see the module)."""
    return f"{cookie_name(port)}={session_id}; HttpOnly; SameSite=Strict; Path=/"


def clear_cookie_header(port: int | None = None) -> str:
    """The ``Set-Cookie`` value that makes the browser forget its session cookie."""
    return f"{cookie_name(port)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
