"""A stall is too little data for too long, not only none: a server that trickles a byte every few seconds
never trips a read timeout, yet holds a stream (and the job) for ever. ``RateFloor`` watches one request's
bytes and ends it, as a read timeout ends a silent one, when it averages under ``floor`` bytes a second over
a whole ``window``."""

from __future__ import annotations

import time

from ..core.errors import Transient
from ..core.words import human_size

#: the least a stream must move, averaged over a stall window: 1 KiB/s
MIN_RATE = 1024


class RateFloor:
    def __init__(self, window: float, what: str, floor: int = MIN_RATE) -> None:
        self.window, self.what, self.floor = max(1.0, window), what, floor
        self.since = time.monotonic()
        self.moved = 0

    def begin(self) -> None:
        """The window starts now: a file (or piece) that waited its turn in a queue is not judged on the wait."""
        self.since, self.moved = time.monotonic(), 0

    def feed(self, nbytes: int) -> None:
        """Count ``nbytes`` that just arrived; raises ``Transient`` when the last window was under the floor."""
        self.moved += nbytes
        now = time.monotonic()
        spent = now - self.since
        if spent < self.window:
            return
        if self.moved < self.floor * spent:
            raise Transient(f"{self.what} sent only {human_size(self.moved)} in {spent:.0f} s (under "
                            f"{human_size(self.floor)}/s): a stall; Ferry will retry.")
        self.since, self.moved = now, 0
