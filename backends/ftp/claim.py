"""One writer per remote part file over FTP (``core.claims``): an upload makes the folder ``NAME.ferry-lock``
before it writes ``NAME.part``. FTP has no exclusive create, but ``MKD`` is one: the server's ``mkdir`` fails for
all but the first. The owner record goes inside it (``OWNER_FILE``); a lock found without one is a claim being made,
and is another's. The lock goes once the upload ends or is cancelled."""

from __future__ import annotations

import logging

import aioftp

from ..core.claims import LOCK_SUFFIX, OWNER_BYTES, OWNER_FILE, owner_record, read_owner, taken
from .control import FtpControl
from .faults import ftp_error

log = logging.getLogger(__name__)


async def claim(control: FtpControl, remote: str, token: str) -> None:
    """Make ``remote``'s lock ours, or raise ``PartTaken`` naming its owner."""
    lock = remote + LOCK_SUFFIX
    try:
        await control.client.command(f"MKD {lock}", "257")  # raw: aioftp's make_directory first asks if it exists
    except aioftp.StatusCodeError as exc:
        if exc.received_codes and exc.received_codes[-1].matches("50x"):  # not implemented, not "exists"
            log.info("%s makes no folders (MKD: %s): %s goes without a lock", control.address.where,
                     exc.received_codes, remote)
            return  # a server without MKD: the check at the final name still catches a second writer
        owner = await _owner(control, lock)
        if owner is None:
            raise ftp_error(exc, control.address, step="write", path=lock) from exc
        if owner.get("job") != token:
            raise taken(remote, control.address.where, owner, lock) from None
        return
    try:
        async with control.client.upload_stream(f"{lock}/{OWNER_FILE}") as stream:
            await stream.write(owner_record(token))
    except Exception as exc:
        raise ftp_error(exc, control.address, step="write", path=f"{lock}/{OWNER_FILE}") from exc


async def _owner(control: FtpControl, lock: str) -> dict | None:
    """The owner record in ``lock``; ``{"job": None}`` for a lock without one yet, None when no lock is there."""
    try:
        stream = await control.read_from(f"{lock}/{OWNER_FILE}", 0)
    except Exception:
        return {"job": None} if await _is_there(control, lock) else None
    data = b""
    while len(data) <= OWNER_BYTES and (chunk := await stream.read(OWNER_BYTES)):
        data += chunk
    await control.end_read(stream, complete=len(data) <= OWNER_BYTES)
    return read_owner(data)


async def _is_there(control: FtpControl, path: str) -> bool:
    try:
        await control.entry(path)
        return True
    except Exception:
        return False


async def release(control: FtpControl, remote: str) -> None:
    """The lock gone (its owner record, then the folder); a lock that cannot be removed now is left."""
    lock = remote + LOCK_SUFFIX
    for command in (f"DELE {lock}/{OWNER_FILE}", f"RMD {lock}"):
        try:
            await control.client.command(command, ("2xx", "5xx"))
        except Exception:
            return
