"""This computer's hold on one upload: the same command started twice here carries the same owner token
(``core.claims``), so the server's lock cannot tell the two apart; a lock on the resume record here does."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import PartTaken
from ..host import portable


def hold(record: Path, remote: str, where: str) -> int:
    """A descriptor holding ``record``'s lock (closed to let go), or ``PartTaken`` when another Ferry here has it."""
    fd = os.open(record.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | portable.O_CLOEXEC, 0o600)
    try:
        portable.lock_exclusive(fd)
    except portable.Busy:
        os.close(fd)
        raise PartTaken(f"Another Ferry on this computer is uploading to {remote} on {where}. Wait for it to end, or "
                        "cancel it (labferry queue shows it).") from None
    return fd
