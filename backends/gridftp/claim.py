"""One writer per remote part file over GridFTP's control connection (``core.claims``): an upload makes the folder
``NAME.ferry-lock`` (``MKD``: the server's ``mkdir``, which fails for all but the first) before
globus-url-copy writes ``NAME.part``, and puts its owner record in it. A GridFTP upload keeps no resume record, so
its owner token is this installation's for that address (``token_for``): the same command again, after a crash,
is the owner; another machine, or another data folder, is not."""

from __future__ import annotations

import ftplib
import hashlib
import io
import socket

from ..core.claims import LOCK_SUFFIX, OWNER_BYTES, OWNER_FILE, owner_record, read_owner, taken
from .control import Control
from .faults import explain_reply


def token_for(state_dir: str | None, remote: str) -> str:
    return hashlib.sha256(f"{socket.gethostname()}|{state_dir}|{remote}".encode()).hexdigest()[:24]


def claim(control: Control, remote: str, token: str) -> None:
    """Make ``remote``'s lock ours, or raise ``PartTaken`` naming its owner."""
    lock = remote + LOCK_SUFFIX
    try:
        control.ftp.mkd(lock)
    except ftplib.error_perm as exc:
        owner = owner_of(control, lock)
        if owner is None:
            raise explain_reply(str(exc), control.url, lock, "create the upload's lock") from None
        if owner.get("job") != token:
            raise taken(remote, control.url.where, owner, lock) from None
        return
    try:
        control.ftp.storbinary(f"STOR {lock}/{OWNER_FILE}", io.BytesIO(owner_record(token)))
    except ftplib.Error as exc:
        raise explain_reply(str(exc), control.url, lock, "write the upload's lock") from None


def owner_of(control: Control, lock: str) -> dict | None:
    """The owner record in ``lock``; ``{"job": None}`` for a lock without one yet, None when no lock is there."""
    data = bytearray()

    def keep(block: bytes) -> None:
        if len(data) <= OWNER_BYTES:
            data.extend(block)

    try:
        control.ftp.retrbinary(f"RETR {lock}/{OWNER_FILE}", keep)
    except ftplib.Error:
        return {"job": None} if control.stat(lock) is not None else None
    return read_owner(bytes(data))


def release(control: Control, remote: str) -> None:
    """The lock gone; one that cannot be removed now is left."""
    lock = remote + LOCK_SUFFIX
    try:
        control.ftp.delete(f"{lock}/{OWNER_FILE}")
        control.ftp.rmd(lock)
    except (OSError, EOFError, ftplib.Error):
        pass
