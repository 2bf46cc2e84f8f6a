"""Streams for the preflight's sweep (``netprobe.sweep_down``): open-ended ranged GETs, data dropped.

Each stream is one keep-alive connection reading ``Range: bytes=OFFSET-`` to the end of the
file and starting again at 0, so it never pauses between requests (a lease-by-lease reader
idles one round trip per request) and a file shorter than the sweep is simply read again.
Streams start spread over the file so they do not all hit the same pages of the server's cache.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp

from ..core.errors import TransferError
from .faults import answer_error, map_error

#: how long the first level may wait for every stream's handshake and first byte
CONNECT_WAIT = 30.0


class RangeStreams:
    def __init__(self, session: aiohttp.ClientSession, url: str, size: int) -> None:
        self.session, self.url, self.size = session, url, size
        self.bytes = 0
        self.tasks: list[asyncio.Task] = []
        self.started = 0  # streams that received their first byte
        self.errors: list[TransferError] = []

    def moved(self) -> int:
        return self.bytes

    async def start(self, count: int) -> None:
        for index in range(count):
            self.tasks.append(asyncio.create_task(self._stream(index * self.size // count)))
        deadline = time.monotonic() + CONNECT_WAIT
        while self.started + len(self.errors) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self.errors and not self.started:
            await self.stop(len(self.tasks))
            raise self.errors[0]

    async def stop(self, count: int) -> None:
        dropped, self.tasks = self.tasks[len(self.tasks) - count:], self.tasks[:len(self.tasks) - count]
        for task in dropped:
            task.cancel()
        await asyncio.gather(*dropped, return_exceptions=True)

    async def _stream(self, offset: int) -> None:
        first = True
        try:
            while True:
                async with self.session.get(self.url, headers={"Range": f"bytes={offset}-"}) as resp:
                    if resp.status != 206:
                        raise answer_error(resp, self.url)
                    async for data in resp.content.iter_any():
                        if first:
                            self.started += 1
                            first = False
                        self.bytes += len(data)
                offset = 0
        except asyncio.CancelledError:
            raise
        except TransferError as exc:
            self.errors.append(exc)
        except Exception as exc:
            self.errors.append(map_error(exc, self.url, started=not first))
