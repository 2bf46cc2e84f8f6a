"""paramiko's word for a dead connection, turned into a fault the job retries (no paramiko import here: the
OpenSSH paths that import this module never load it)."""

from __future__ import annotations

import contextlib
import sys

from ..core.errors import Transient


@contextlib.contextmanager
def dropped_is_transient(host: str):
    """paramiko says a dead connection with SSHException or EOFError (the server restarted, the network went
    away): the job retries it like any dropped connection, instead of "internal error"."""
    try:
        yield
    except EOFError as exc:
        raise _dropped(host, exc) from None
    except Exception as exc:
        paramiko = sys.modules.get("paramiko")
        if paramiko is None or not isinstance(exc, paramiko.SSHException) \
                or isinstance(exc, paramiko.AuthenticationException):
            raise
        raise _dropped(host, exc) from None


def _dropped(host: str, exc: BaseException) -> Transient:
    return Transient(f"The SSH connection to {host} dropped ({exc or type(exc).__name__}); Ferry will retry.")
