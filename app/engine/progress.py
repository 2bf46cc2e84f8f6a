"""Rate and ETA from a running byte count, over a sliding window.

A window (not an average since the start) follows what the link does now; a few
seconds is long enough to smooth TCP's sawtooth and short enough to show a
stall within a screen refresh or two.
"""

from __future__ import annotations

import time
from collections import deque

WINDOW = 3.0


class ProgressMeter:
    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def reset(self) -> None:
        self._samples.clear()

    def add(self, bytes_done: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._samples and bytes_done < self._samples[-1][1]:
            self._samples.clear()  # restarted from scratch: old samples mean nothing
        self._samples.append((now, bytes_done))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window:
            self._samples.popleft()

    @property
    def rate(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0

    def eta(self, bytes_total: int | None) -> float | None:
        rate = self.rate
        if not bytes_total or rate <= 0 or not self._samples:
            return None
        return max(0.0, (bytes_total - self._samples[-1][1]) / rate)
