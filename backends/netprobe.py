"""Cheap measurements of a path, shared by backends (and the preflight later)."""

from __future__ import annotations

import asyncio
import time


async def connect_time(host: str, port: int, timeout: float = 10.0) -> float | None:
    """Seconds for one TCP handshake to ``host:port``: one round trip, measured cheaply."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=1)
        began = time.monotonic()
        _, writer = await asyncio.wait_for(asyncio.open_connection(*infos[0][4][:2]), timeout)
        spent = time.monotonic() - began
        writer.close()
        return spent
    except (OSError, asyncio.TimeoutError, IndexError):
        return None  # the real requests will report the problem in words


class RateSampler:
    """A running byte count sampled over time; its rate over the later part of a probe.

    A probe of a few seconds spends its first round trips in TCP slow start, more so the
    longer the path; counting those would understate every stream count, and unevenly.
    So probes report the bytes and seconds of their last ``share`` only.
    """

    def __init__(self, counter, share: float = 0.5) -> None:
        self.counter, self.share = counter, share
        self.samples: list[tuple[float, int]] = []

    def take(self) -> None:
        self.samples.append((time.monotonic(), self.counter()))

    async def follow(self, task: asyncio.Future, interval: float = 0.05):
        """Sample until ``task`` ends; returns its result."""
        while not task.done():
            self.take()
            await asyncio.wait({task}, timeout=interval)
        self.take()
        return task.result()

    def steady(self) -> tuple[int, float]:
        """(bytes, seconds) over the last ``share`` of the time since the first byte."""
        moving = [s for s in self.samples if s[1] > 0]
        if len(moving) < 2:
            return (moving[0][1] if moving else 0), 0.0
        t0, t1 = moving[0][0], moving[-1][0]
        since = t1 - (t1 - t0) * self.share
        start = next(s for s in moving if s[0] >= since)
        if start is moving[-1]:
            start = moving[-2]
        return moving[-1][1] - start[1], moving[-1][0] - start[0]
