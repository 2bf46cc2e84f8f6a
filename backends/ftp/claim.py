"""One writer per remote part file over FTP (``core.claims``): an upload makes the folder ``NAME.ferry-lock``
before it writes ``NAME.part``. FTP has no exclusive create, but ``MKD`` is one: the server's ``mkdir`` fails for
all but the first. The owner record goes inside it as a sub-folder's name (``owner_name``: one more ``MKD``, where
a file would cost a data connection); a lock found without one is a claim being made, and is another's. The lock
goes once the upload ends or is cancelled."""

from __future__ import annotations

import logging

import aioftp

from ..core.claims import LOCK_SUFFIX, owner_name, read_owner_name, taken
from ..core.errors import TransferError
from .control import FtpControl
from .faults import ftp_error

log = logging.getLogger(__name__)

#: the most entries of a lock folder read for its owner (a lock holds one)
LOCK_ENTRIES = 16


async def claim(control: FtpControl, remote: str, token: str) -> str | None:
    """Make ``remote``'s lock ours, or raise ``PartTaken`` naming its owner: the owner entry's name, for
    ``release`` (None: the server makes no folders, and the upload goes without a lock)."""
    lock = remote + LOCK_SUFFIX
    try:
        await control.client.command(f"MKD {lock}", "257")  # raw: aioftp's make_directory first asks if it exists
    except aioftp.StatusCodeError as exc:
        if exc.received_codes and exc.received_codes[-1].matches("50x"):  # not implemented, not "exists"
            log.info("%s makes no folders (MKD: %s): %s goes without a lock", control.address.where,
                     exc.received_codes, remote)
            return None  # a server without MKD: the check at the final name still catches a second writer
        found = await owner_of(control, lock)
        if found is None:
            raise ftp_error(exc, control.address, step="write", path=lock) from exc
        owner, name = found
        if owner.get("job") != token:
            raise taken(remote, control.address.where, owner, lock) from None
        return name
    mine = owner_name(token)
    try:
        await control.client.command(f"MKD {lock}/{mine}", "257")
    except Exception as exc:
        raise ftp_error(exc, control.address, step="write", path=f"{lock}/{mine}") from exc
    return mine


async def owner_of(control: FtpControl, lock: str) -> tuple[dict, str | None] | None:
    """The owner record in ``lock`` and its entry's name; ``{"job": None}`` for a lock without one yet, None when
    no lock is there."""
    try:
        entries = await control.listing(lock)
    except TransferError:
        return None
    for entry in entries[:LOCK_ENTRIES]:
        name = entry.name.rsplit("/", 1)[-1]
        owner = read_owner_name(name)
        if owner is not None:
            return owner, name
    return {"job": None}, None


async def release(control: FtpControl, remote: str, mine: str | None) -> None:
    """The lock gone (its owner entry, then the folder); a lock that cannot be removed now is left."""
    lock = remote + LOCK_SUFFIX
    commands = ([f"RMD {lock}/{mine}"] if mine else []) + [f"RMD {lock}"]
    try:
        await control.in_one_trip(commands, ["2xx"] * len(commands))
    except Exception:
        return
