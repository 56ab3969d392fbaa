"""Swap two names in one folder atomically (Linux ``renameat2(RENAME_EXCHANGE)``).

``exchange(dir_fd, a, b)`` makes ``a`` name the file ``b`` named and ``b`` the one ``a`` named, in
one step no other process can come between. It returns False, changing nothing, where the
system cannot (not Linux, a C library without ``renameat2``, a file system without the flag):
callers then fall back to a check followed by a rename.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable

__all__ = ["exchange"]

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}


def _load() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # no C library to load, or one without renameat2
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _load()


def exchange(dir_fd: int | None, a: str, b: str) -> bool:
    """Swap the files named ``a`` and ``b`` (in the folder ``dir_fd``, or paths when None)."""
    if _RENAMEAT2 is None:
        return False
    where = _AT_FDCWD if dir_fd is None else dir_fd
    if _RENAMEAT2(where, os.fsencode(a), where, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), a)
