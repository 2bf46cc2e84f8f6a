"""paramiko's word for a dead connection, turned into a fault the job retries (no paramiko import here: the
OpenSSH paths that import this module never load it)."""

from __future__ import annotations

import contextlib
import sys

from ..core.errors import LoginPrints, Transient


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


def login_prints(host: str, noise: bytes | None) -> LoginPrints:
    """The sentence for a login that prints before every command (``.bashrc`` echoing for non-interactive logins,
    a csh ``.cshrc``), when SFTP, which sshd starts through that shell, is garbled by it too."""
    said = " ".join((noise or b"").decode("utf-8", "replace").split())[:120]
    shown = f"'{said}'" if said else "text"
    return LoginPrints(f"The login on {host} prints {shown} before every command (a shell start-up file such as "
                       "~/.bashrc or ~/.cshrc writes it even when no one types), which garbles Ferry's commands and "
                       "SFTP. Print only in interactive shells (bash: put `[[ $- == *i* ]] || return` above it; csh: "
                       "`if ($?prompt) then … endif`), or ask the server's admin for `Subsystem sftp internal-sftp`.")
