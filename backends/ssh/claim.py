"""One writer per remote part file over SSH: an upload claims ``NAME.ferry-lock`` on the server before it writes
``NAME.part`` (``core.claims``).

Two uploads of one file to one server name, a second apart from two machines, both wrote ``NAME.part``: the second
made it anew under the first, both checked their own ranges, both said "verified", and the server kept 32 MiB of
zeros. Now the first to create the lock (SFTP's exclusive create, which OpenSSH's sftp-server honours with
``O_EXCL``) owns the part file; the other is refused in one sentence that names the owner. The lock holds this
installation's token for the upload (kept in its resume record), so the same command run again, after a crash or
from the queue, is the same owner and resumes. It goes with the record when the upload ends or is cancelled.
"""

from __future__ import annotations

from ..core.claims import LOCK_SUFFIX, OWNER_BYTES, owner_record, read_owner, taken
from ..core.errors import TransferError


def claim(control, remote: str, token: str, where: str) -> None:
    """Make ``remote``'s lock ours, or raise ``PartTaken`` naming its owner. ``where``: the server, for words."""
    lock = remote + LOCK_SUFFIX
    try:
        control.write_new(lock, owner_record(token))
        return
    except OSError as exc:
        held = control.read_head(lock, OWNER_BYTES)
        if held is None:  # not there: the create failed for another reason (permission, a missing folder)
            from .control import sftp_error

            raise sftp_error(exc, "create the upload's lock", lock) from None
        owner = read_owner(held)
    if owner.get("job") != token:
        raise taken(remote, where, owner, lock)


def owner_of(control, remote: str) -> dict | None:
    """The owner record of ``remote``'s lock; None when no lock is there."""
    held = control.read_head(remote + LOCK_SUFFIX, OWNER_BYTES)
    return None if held is None else read_owner(held)


def release(control, remote: str) -> None:
    """The lock gone, once the upload ended or was cancelled; a lock that cannot be removed now is left."""
    try:
        control.remove(remote + LOCK_SUFFIX)
    except TransferError:
        pass
