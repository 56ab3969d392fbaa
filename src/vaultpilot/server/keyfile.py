"""The server's API key: made with ``secrets``, kept in one file readable by its owner only.

Contract:

* ``ensure_key(path)`` returns ``(key, created)``: it reads the key file, or, when there is none,
  generates a key (``secrets.token_urlsafe(32)``: 43 URL-safe characters, 256 bits) and writes it
  with mode 0600 (created with that mode, never widened). A key file that others may read is
  tightened to 0600 on the way. The caller shows a new key once, with the path.
* ``rotate_key(path)`` replaces the key atomically (temporary file, fsync, rename) and returns
  the new one. A running server picks it up on the next request (``KeyStore``).
* ``KeyStore.current()`` is the key in force: re-read only when the file's ``stat`` changes, so a
  rotation takes effect at once without a restart.
* ``keys_match(given, expected)`` compares in constant time.
* ``write_private(path, data)`` is how the server writes its private files (the key, the browser
  sessions): mode 0600 from creation in a 0700 folder, atomically (temporary file, fsync,
  rename), so a reader sees the old content or the new, never a part.

Failures raise ``SetupError`` (an unreadable or empty key file, says how to fix it).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from vaultpilot.errors import OSErrorMapping, SetupError, map_os_errors
from vaultpilot.locations import private_dir

__all__ = [
    "KEY_ENV",
    "KeyStore",
    "ensure_key",
    "key_path",
    "keys_match",
    "new_key",
    "read_key",
    "rotate_key",
    "write_private",
]

KEY_ENV = "VAULTPILOT_SERVER_KEY"  # how child agent processes receive the key
_MIN_LEN = 32
# The key file is setup: a failure to read or write it is one the person running vaultpilot fixes.
_SETUP: OSErrorMapping = {OSError: SetupError}


def key_path(root: Path) -> Path:
    """Where a data root keeps the server's key: ``<root>/server.key``."""
    return root / "server.key"


def new_key() -> str:
    """A fresh key: 256 random bits as URL-safe text (valid in headers and subprotocols)."""
    return secrets.token_urlsafe(32)


def keys_match(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented key with the key in force."""
    if not given:
        return False
    try:
        presented = given.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate is no key (and must not crash the check)
        return False
    return hmac.compare_digest(presented, expected.encode("utf-8"))


def read_key(path: Path) -> str:
    """The key in ``path``; tightens a too-open file to 0600 first."""
    missing = SetupError(f"No API key at {path}. Start `vaultpilot serve` once to create one.")
    try:
        with map_os_errors(path, "read the API key file", {FileNotFoundError: missing, **_SETUP}):
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077:
                os.chmod(path, 0o600)
            key = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        key = ""  # not text: no valid key (said below)
    if len(key) < _MIN_LEN or any(c.isspace() for c in key):
        raise SetupError(
            f"The API key file {path} does not hold a valid key. Run `vaultpilot key rotate` "
            "to write a new one."
        )
    return key


def write_private(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` (0600, atomically; see the module). With ``exclusive``, an
    existing file is kept and ``FileExistsError`` raised. Raises OSError on failure."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, path)  # fails if another process made the file meanwhile
        else:
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):  # renamed into place: nothing left
            tmp.unlink()


def ensure_key(path: Path) -> tuple[str, bool]:
    """The key in ``path``, creating it when missing; ``created`` says whether it is new."""
    if path.exists():
        return read_key(path), False
    key = new_key()
    with map_os_errors(path, "write the API key to", _SETUP):
        try:
            write_private(path, (key + "\n").encode("ascii"), exclusive=True)
        except FileExistsError:  # another process made one meanwhile: that one is the key
            return read_key(path), False
    return key, True


def rotate_key(path: Path) -> str:
    """Replace the key in ``path`` with a new one (created if there was none); returns it."""
    key = new_key()
    with map_os_errors(path, "write the API key to", _SETUP):
        write_private(path, (key + "\n").encode("ascii"))
    return key


class KeyStore:
    """The key in force for a running server, following the file when it is rotated."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self._key = key
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:  # gone or unreadable: keep the key in force (current() says why)
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def current(self) -> str:
        """The key in force (re-read when the file changed; kept if the file went bad)."""
        stamp = self._stat()
        if stamp is not None and stamp != self._stamp:
            with contextlib.suppress(SetupError):
                self._key = read_key(self.path)
                self._stamp = stamp
        return self._key

    def check(self, given: str | None) -> bool:
        return keys_match(given, self.current())
