"""SSH downloads ask for a stream's next range ahead; at the end an idle stream takes such a range over whole."""

from __future__ import annotations

import asyncio

from backends.ssh.ranged import SshDownload, _Ask, _Reader
from backends.streams.chunks import ChunkMap

MiB = 1024 * 1024


class _OwnsEveryMaster:
    """Stands in for the OpenSSH session: closing a stream then leaves its (absent) connection alone."""

    def owns(self, master) -> bool:
        return True


def _download_with_an_ahead_range():
    chunks = ChunkMap(100 * MiB)
    run = SshDownload(_OwnsEveryMaster(), "/data/big.bin", chunks, None, streams=2)
    slow, idle = _Reader(None), _Reader(None)
    run._readers |= {slow, idle}
    current = chunks.lease(60 * MiB)
    ahead = chunks.lease(10 * MiB)
    slow.ahead = _Ask.of(ahead)
    slow.ahead.sent = True
    rest = chunks.lease(30 * MiB)
    chunks.record(rest, rest.remaining)
    chunks.finish(rest)  # the idle stream has finished everything else
    return run, chunks, slow, idle, current, ahead


def test_an_idle_stream_takes_over_a_range_asked_ahead_and_not_begun():
    run, chunks, slow, idle, current, ahead = _download_with_an_ahead_range()
    assert run.take_lease(idle, 2) is ahead
    assert slow.ahead.reclaimed
    chunks.record(current, current.remaining)
    chunks.finish(current)
    nxt = run.take_lease(slow, 1)
    assert nxt is not ahead  # the slow stream no longer owns it
    assert slow.stale and slow.ahead is None  # its channel will still send those bytes: it is dropped first


def test_closing_the_slow_stream_leaves_the_taken_range_with_its_new_owner():
    run, chunks, slow, idle, current, ahead = _download_with_an_ahead_range()
    assert run.take_lease(idle, 2) is ahead
    asyncio.run(run.close_stream(slow))
    assert chunks.is_active(ahead) and chunks.pending_bytes == 0


def test_a_range_already_begun_is_not_taken_whole():
    run, chunks, slow, idle, current, ahead = _download_with_an_ahead_range()
    chunks.record(ahead, MiB)  # bytes of it arrived: the slow stream is on it
    assert run.reclaim() is None
