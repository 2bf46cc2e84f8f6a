"""This computer's hold on one upload: the same command started twice here carries the same owner token
(``core.claims``), so the server's lock cannot tell the two apart; a lock on the resume record here does."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import PartTaken
from ..host import portable


class Held:
    """The lock beside an upload's resume record, held while the upload runs (an upload record mixes it in)."""

    path: Path  # the resume record
    _held: int | None = None

    def hold(self, remote: str, where: str) -> None:
        """Take the lock, or ``PartTaken`` when another Ferry on this computer has it."""
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | portable.O_CLOEXEC, 0o600)
        try:
            portable.lock_exclusive(fd)
        except portable.Busy:
            os.close(fd)
            raise PartTaken(f"Another Ferry on this computer is uploading to {remote} on {where}. Wait for it to "
                            "end, or cancel it (labferry queue shows it).") from None
        self._held = fd

    def let_go(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = None
