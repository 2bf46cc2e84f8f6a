"""``backends/https/pool.py``: jobs that share a key share one session; idle ones close; the engine closes the rest."""

from __future__ import annotations

import asyncio

from backends.https import pool


class Session:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_jobs_with_the_same_key_share_one_session_and_others_get_their_own():
    async def run():
        shared = pool.SessionPool()
        async with shared.borrow(("ca", False, 60), Session) as first:
            async with shared.borrow(("ca", False, 60), Session) as second:
                assert second is first
            async with shared.borrow((None, True, 60), Session) as other:
                assert other is not first
        async with shared.borrow(("ca", False, 60), Session) as later:
            assert later is first and not first.closed  # the next file reuses it
        await shared.aclose()
        assert first.closed and other.closed

    asyncio.run(run())


def test_an_idle_session_closes_on_its_own(monkeypatch):
    monkeypatch.setattr(pool, "IDLE_SECONDS", 0.05)

    async def run():
        shared = pool.SessionPool()
        async with shared.borrow(("k",), Session) as session:
            pass
        await asyncio.sleep(0.2)
        assert session.closed
        async with shared.borrow(("k",), Session) as fresh:
            assert fresh is not session and not fresh.closed
        await shared.aclose()

    asyncio.run(run())


def test_each_loop_has_its_own_pool_and_close_here_empties_it():
    async def run():
        here = pool.pool_here()
        assert pool.pool_here() is here
        async with here.borrow(("k",), Session) as session:
            pass
        await pool.close_here()
        return here, session

    first, session = asyncio.run(run())
    second, _ = asyncio.run(run())
    assert first is not second and session.closed
