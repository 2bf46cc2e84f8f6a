"""GridFTP's errors as Ferry's sentences: globus-url-copy's stderr, and the control channel's replies (what
happened, what to do)."""

from __future__ import annotations

import os
import re

from ..core.errors import (
    AuthError,
    LocalError,
    NoSpace,
    NotFound,
    PermissionDenied,
    TransferError,
    Transient,
    Unreachable,
)
from .address import GridUrl


class NoUdt(TransferError):
    """UDT could not start: the server does not allow it, or this computer lacks the driver. ``reason`` is the
    short cause, for a note when ``--transport auto`` then goes over TCP."""

    def __init__(self, message: str, *, reason: str = "it was refused", detail: str | None = None) -> None:
        super().__init__(message, detail=detail)
        self.reason = reason


def explain(stderr: str, *, source: str, dest: str) -> TransferError:
    """globus-url-copy's error text as one sentence that says what to do."""
    text = stderr.lower()
    detail = stderr.strip()
    host = re.search(r"unable to connect to ([^\s]+)", stderr, re.I)
    where = host.group(1) if host else "The server"
    if "name or service not known" in text or "getaddrinfo" in text:
        return Unreachable(f"{where} could not be found. Check the address for typos.", detail=detail)
    if "connection refused" in text:
        return Unreachable(f"{where} refused the connection. Check that the GridFTP server is running and that "
                           "the port is right.", detail=detail)
    if "no space left" in text:
        local = dest[len("file://"):] if dest.startswith("file://") else None
        where_to = f"The disk holding {os.path.dirname(local.rstrip('/'))}" if local else "The destination disk"
        return NoSpace(f"{where_to} is full. Free some space there and run the transfer again.", detail=detail)
    opened = re.search(r"unable to open file ([^\n]+)", stderr, re.I)
    path = opened.group(1).strip() if opened else None
    if path and path.endswith(".part"):
        path = path.rsplit("/", 1)[0] or "/"  # a staging name means nothing to the user; its folder does
    local = "globus_ftp_client" not in text and "500" not in text
    if "no such file or directory" in text:
        if local:
            return LocalError(f"The local folder for {path or dest} does not exist. Create it first.", detail=detail)
        return NotFound(f"The server has no {path or source}. Check the path.", detail=detail)
    if "permission denied" in text:
        if local:
            return LocalError(f"Ferry cannot write {path or dest} here (permission denied). "
                              "Choose a folder you can write to.", detail=detail)
        return PermissionDenied(f"The GridFTP server refused access to {path or 'the file'} (permission denied). "
                                "Ask its administrator for access, or choose another folder.", detail=detail)
    if "is a directory" in text:
        return LocalError(f"{path or dest} is a folder. Give a file name, or end a folder address with '/'.",
                          detail=detail)
    if "udt driver not whitelisted" in text or "setting data channel driver stack failed" in text:
        return NoUdt("The GridFTP server does not allow UDT on its data channel. Run the copy with --transport "
                     "tcp (or auto), or ask its administrator to start it with -allow-udt and udt in -dc-whitelist.",
                     reason="the server does not allow it", detail=detail)
    if "udt" in text and ("driver" in text and ("load" in text or "not found" in text or "could not" in text)):
        return NoUdt("This computer's globus-url-copy cannot load the UDT driver. Install it (Debian/Ubuntu: apt "
                     "install libglobus-xio-udt-driver), or run with --transport tcp (or auto).",
                     reason="this computer's globus-url-copy cannot load the UDT driver", detail=detail)
    if "530" in text or "login incorrect" in text or "authentication" in text or "gss" in text:
        return PermissionDenied("The GridFTP server refused the login. Check your credentials (a valid GSI proxy "
                                "for gsiftp://, your SSH key for sshftp://) or whether it allows anonymous access.",
                                detail=detail)
    if "checksum" in text and ("mismatch" in text or "do not match" in text or "differ" in text):
        return Transient("The checksums of the two copies differed; Ferry will transfer the file again.",
                         detail=detail)
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "it stopped without a reason")
    first = first.removeprefix("error: ")
    return Transient(f"globus-url-copy failed ({first}); Ferry will retry.", detail=detail)


def explain_reply(reply: str, url: GridUrl, path: str, doing: str) -> TransferError:
    """A server's error reply (possibly multi-line) as one sentence for the user."""
    text = reply.lower()
    where = f"{path} on {url.where}"
    if "no such file" in text or "path_not_found" in text or "not found" in text:
        return NotFound(f"There is no {where}. Check the path.", detail=reply)
    if "permission denied" in text or "permission_denied" in text or "not allowed" in text:
        return PermissionDenied(
            f"The GridFTP server refused to {doing} {where} (permission denied). "
            "Ask the server's administrator for access, or choose another folder.", detail=reply)
    if reply.startswith("530") or "login incorrect" in text:
        return AuthError(f"The GridFTP server at {url.where} refused the login. "
                         "Check the user name, or whether it allows anonymous access.", detail=reply)
    if reply.startswith("4"):
        return Transient(f"The GridFTP server at {url.where} is busy ({reply.splitlines()[0]}); Ferry will retry.",
                         detail=reply)
    first = reply.splitlines()[0] if reply else "no answer"
    return TransferError(f"The GridFTP server could not {doing} {where}: {first}.", detail=reply)
