"""FTP replies and socket faults as Ferry's sentences (what happened, what to do)."""

from __future__ import annotations

import asyncio
import errno
import ssl
from dataclasses import replace

import aioftp

from ..core.errors import (
    AuthError,
    NoSpace,
    NotFound,
    PermissionDenied,
    TlsError,
    TransferError,
    Transient,
    Unreachable,
    certificate_error,
)
from .address import FtpAddress


class ServerFull(Transient):
    """421: the server takes no more connections (from this address, or at all)."""

    kind = "server-full"


def reply_of(exc: aioftp.StatusCodeError) -> tuple[str, str]:
    code = str(exc.received_codes[-1]) if exc.received_codes else "?"
    info = exc.info if isinstance(exc.info, list) else [str(exc.info)]
    return code, " ".join(str(line).strip() for line in info).strip()


#: servers (host:port) this process has completed a TLS handshake with: a later TLS failure there is a broken
#: connection (a session killed while it answered: vsftpd's plain "500 OOPS" where TLS was due, read as
#: WRONG_VERSION_NUMBER), retried; a first one is the server's setup, and final
TLS_WORKED: set[str] = set()


def ftp_error(exc: BaseException, address: FtpAddress, *, step: str, path: str | None = None,
              started: bool = False) -> TransferError:
    """``step``: connect, tls, login, feat, stat, list, read, write. ``started``: bytes had flowed."""
    if isinstance(exc, TransferError):
        return exc
    where = address.where
    if isinstance(exc, aioftp.StatusCodeError):
        return _reply_error(exc, address, step, path)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return certificate_error(address.host, exc.verify_message)
    if isinstance(exc, ssl.SSLError):
        if where in TLS_WORKED:  # this server did TLS with this process: the connection failed, not the setup
            return Transient(f"A TLS connection to the FTP server at {where} broke ({exc}); Ferry will retry.")
        return TlsError(f"The TLS handshake with the FTP server at {where} failed ({exc}).")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Transient(f"The FTP server at {where} sent nothing for longer than the stall timeout while Ferry "
                         f"waited to {_verb(step)}; Ferry will retry.")
    if isinstance(exc, UnicodeDecodeError):
        return not_utf8(address, path or address.path)
    if isinstance(exc, (ConnectionRefusedError, OSError)) and step == "connect" and not started:
        if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
            return Unreachable(f"The FTP server at {where} refused the connection. Check the port, or whether the "
                               "server is running.")
        if isinstance(exc, OSError) and getattr(exc, "errno", None) is None and "Name or service" in str(exc):
            return Unreachable(f"Could not find the host {address.host}. Check the spelling and your network.")
        return Unreachable(f"Could not connect to the FTP server at {where} ({exc}). Check the address and your "
                           "network.")
    if isinstance(exc, (ConnectionError, OSError, EOFError, aioftp.errors.AIOFTPException)):
        return Transient(f"The connection to the FTP server at {where} broke ({exc or type(exc).__name__}); "
                         "Ferry will retry.")
    return TransferError(f"Unexpected error talking to the FTP server at {where}: {exc!r}.")


def _reply_error(exc: aioftp.StatusCodeError, address: FtpAddress, step: str, path: str | None) -> TransferError:
    """A server's reply that is not what the step asked for, as a sentence (``ftp_error``)."""
    where, shown = address.where, address.shown
    code, text = reply_of(exc)
    said = f"'{code} {text}'".strip()
    if code == "421":
        return ServerFull(f"The FTP server at {where} takes no more connections now ({said}); Ferry will "
                          "retry with fewer.")
    if step == "login" and address.scheme == "ftp" and code.startswith("5") and _asks_for_tls(text):
        return TlsError(f"The FTP server at {where} accepts only encrypted logins ({said}). Use "
                        f"{replace(address, scheme='ftps').shown} (explicit FTPS; pass --ca-file if its "
                        "certificate comes from your lab's own authority).")
    if code == "530" and step == "login":
        if not address.named_user:
            return AuthError(f"The FTP server at {where} does not take anonymous logins ({said}). Give the "
                             "user in the address (ftp://USER@host/…; Ferry asks for the password) or use a "
                             "site profile with a saved password.")
        return AuthError(f"Wrong user or password for {shown}: the FTP server refused the login ({said}). "
                         "Check them (labferry sites add … --ask-secret stores the password in the keyring).")
    if code == "534" or (step == "tls" and code.startswith("5")):
        return TlsError(f"The FTP server at {where} does not offer TLS ({said}). Use ftp:// if plain FTP is "
                        "acceptable on this network.")
    if code == "550" and step == "read":  # the file was there a moment ago (SIZE or MLST answered)
        return PermissionDenied(f"The FTP server refused to send {shown} ({said}): this login may not read "
                                "it. Ask the server's owner for access.")
    if code.startswith("55") and code in ("550", "551", "553") and step in ("stat", "read", "list"):
        return NotFound(f"The FTP server has no {'folder' if step == 'list' else 'file'} at {shown}"
                        f"{f' ({path})' if path and path != address.path else ''} ({said}). Check the address: "
                        "ftp://host/path is relative to the login folder, ftp://host//path is absolute.")
    if code in ("452", "552") and step == "write":
        return NoSpace(f"The FTP server at {where} has no room for {path or shown} ({said}): its disk or your "
                       "quota there is full. Free space on the server (or ask its owner), then run the same "
                       "command again; what arrived so far is kept and resumed.")
    if code in ("550", "553") and step == "write":
        return PermissionDenied(f"The FTP server refused to write {path or shown} ({said}). Check that the "
                                "login may write there.")
    if code.startswith("4") or _session_broke(code, text):
        return Transient(f"The FTP server at {where} answered {said}; Ferry will retry.")
    return TransferError(f"The FTP server at {where} answered {said} when asked to {_verb(step)} "
                         f"{path or shown}.")



def not_utf8(address: FtpAddress, path: str) -> TransferError:
    return TransferError(f"The FTP server at {address.where} sent a file name in {path} that is not UTF-8, which "
                         "Ferry cannot write safely. Rename it on the server, or copy the other files one by one.")


#: vsftpd's "500 OOPS: …" for a session whose own helper process failed (its privileged half killed or gone):
#: that session is broken, a new one is not. Other OOPS texts name its configuration and stay final.
_BROKEN_SESSION = ("priv_sock", "child died", "vsf_sysutil_recv_peek")


def _session_broke(code: str, text: str) -> bool:
    return code == "500" and text.upper().startswith("OOPS") and any(k in text for k in _BROKEN_SESSION)


def _asks_for_tls(text: str) -> bool:
    """vsftpd: 'Anonymous sessions must use encryption.', 'Non-anonymous sessions must use encryption.';
    ProFTPD: 'SSL/TLS required on the control channel'."""
    lowered = text.lower()
    return "encryption" in lowered or "ssl" in lowered or "tls" in lowered


def _verb(step: str) -> str:
    return {"connect": "connect", "tls": "start TLS", "login": "log in", "feat": "list its features",
            "stat": "look up", "list": "list", "read": "read", "write": "write"}.get(step, step)
