"""A token bucket shared by all streams of one job (``--limit-rate``).

Streams read, then pay for what they read; a stream in debt sleeps until the
bucket refills. Reading less makes the kernel's receive window close, so the
sender slows down too: the limit holds on the wire, not just on disk.
"""

from __future__ import annotations

import asyncio
import time


class RateLimit:
    def __init__(self, bytes_per_second: float, burst: float | None = None) -> None:
        if bytes_per_second <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(bytes_per_second)
        self.burst = burst if burst is not None else max(self.rate / 8, 64 * 1024)
        self._tokens = self.burst
        self._stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def consume(self, nbytes: int) -> None:
        self._refill()
        self._tokens -= nbytes
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self.rate)
