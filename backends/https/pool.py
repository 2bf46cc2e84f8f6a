"""HTTP sessions shared by the jobs of one event loop, so the next small file reuses warm connections.

A study of forty 4 MiB runs fetched as forty jobs, each with a session of its own, paid forty TCP and TLS
handshakes and forty slow starts: 350 Mbit/s at 50 ms / 1e-3, where aria2c, keeping its connections to the
host, reached 540-620. With one session per (CA, TLS checks, stall time) shared by the jobs, the same study ran
at 450-550 (tests/bench/archive_wan.py). Only jobs that ask for it share (``share_connections``, which an
accession's small-file lane sets): four 64-256 MiB files at once went from ~790 to ~670 Mbit/s on shared
sessions, whose reused connections carry the cwnd that loss left them instead of a fresh slow start. A
session with a login in it is never shared: its credentials stay with its job. An unused session closes after
``IDLE_SECONDS``; the engine closes the rest when it stops (``aclose``).
"""

from __future__ import annotations

import asyncio
import weakref
from contextlib import asynccontextmanager
from dataclasses import dataclass

IDLE_SECONDS = 15.0


@dataclass
class _Shared:
    session: object  # aiohttp.ClientSession
    users: int = 0
    closer: asyncio.TimerHandle | None = None


_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pool_here() -> SessionPool:
    """The running loop's pool."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None:
        pool = _POOLS[loop] = SessionPool()
    return pool


async def close_here() -> None:
    """Close the running loop's shared sessions (the engine is stopping)."""
    pool = _POOLS.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()


class SessionPool:
    """One per event loop (sessions belong to the loop that made them)."""

    def __init__(self) -> None:
        self._shared: dict[tuple, _Shared] = {}
        self._closing: set[asyncio.Task] = set()

    @asynccontextmanager
    async def borrow(self, key: tuple, make):
        """The session for ``key`` (made by ``make()`` when there is none yet), for the length of the block."""
        shared = self._shared.get(key)
        if shared is None or shared.session.closed:
            shared = self._shared[key] = _Shared(make())
        if shared.closer is not None:
            shared.closer.cancel()
            shared.closer = None
        shared.users += 1
        try:
            yield shared.session
        finally:
            shared.users -= 1
            if shared.users == 0 and self._shared.get(key) is shared:
                shared.closer = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._close_idle, key, shared)

    def _close_idle(self, key: tuple, shared: _Shared) -> None:
        if shared.users == 0 and self._shared.get(key) is shared:
            del self._shared[key]
            task = asyncio.ensure_future(shared.session.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        shared, self._shared = list(self._shared.values()), {}
        for one in shared:
            if one.closer is not None:
                one.closer.cancel()
        await asyncio.gather(*(one.session.close() for one in shared), *self._closing, return_exceptions=True)
