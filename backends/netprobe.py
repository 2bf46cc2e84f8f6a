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
