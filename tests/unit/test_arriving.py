"""A source still arriving (a relay's spool): leases only of ready bytes, the arrivals file, and a parallel run
that follows a growing source without ever moving a byte that had not arrived."""

from __future__ import annotations

import asyncio
import json

import pytest

from backends.core.errors import TransferError
from backends.streams.arriving import ArrivalFile, write_arrivals
from backends.streams.chunks import ChunkMap
from backends.streams.parallel import ParallelTransfer

KiB, MiB = 1024, 1024 * 1024


def test_leases_come_only_from_ready_bytes():
    chunks = ChunkMap(10 * MiB, align=KiB)
    assert chunks.lease_within(MiB, []) is None
    lease = chunks.lease_within(4 * MiB, [(0, MiB)])
    assert (lease.start, lease.end) == (0, MiB)
    assert chunks.lease_within(4 * MiB, [(0, MiB)]) is None  # that part is leased already
    lease = chunks.lease_within(MiB, [(0, 3 * MiB), (5 * MiB, 6 * MiB)])
    assert (lease.start, lease.end) == (MiB, 2 * MiB)


def test_a_short_ready_piece_waits_unless_it_ends_the_file():
    chunks = ChunkMap(10 * MiB, align=KiB)
    assert chunks.lease_within(8 * MiB, [(0, MiB)], min_bytes=2 * MiB) is None
    lease = chunks.lease_within(8 * MiB, [(0, 3 * MiB)], min_bytes=2 * MiB)
    assert (lease.start, lease.end) == (0, 3 * MiB)
    tail = chunks.lease_within(8 * MiB, [(0, 3 * MiB), (9 * MiB, 10 * MiB)], min_bytes=2 * MiB)
    assert (tail.start, tail.end) == (9 * MiB, 10 * MiB)  # the file's last MiB: nothing more will come there


def test_the_arrivals_file_is_read_again_only_when_it_changed(tmp_path):
    path = tmp_path / "arrivals.json"
    write_arrivals(path, size=100, mode=0o640, mtime=5.0, ready=[(0, 10), (10, 20)])
    arriving = ArrivalFile(path)
    assert (arriving.size, arriving.mode, arriving.mtime) == (100, 0o640, 5.0)
    assert arriving.ready() == [(0, 20)]
    write_arrivals(path, size=100, mode=0o640, mtime=5.0, ready=[(0, 100)], sha256="ab" * 32)
    assert arriving.ready() == [(0, 100)]
    assert asyncio.run(arriving.whole()) == "ab" * 32


def test_a_failed_feeding_hop_ends_the_wait(tmp_path):
    path = tmp_path / "arrivals.json"
    write_arrivals(path, size=100, mode=0o644, mtime=0, ready=[], failed="The first hop was cancelled.")
    with pytest.raises(TransferError, match="cancelled"):
        asyncio.run(ArrivalFile(path).more(1.0))


def test_a_missing_arrivals_file_is_a_sentence(tmp_path):
    with pytest.raises(TransferError, match="start the relayed copy again"):
        ArrivalFile(tmp_path / "gone.json")


class _Growing:
    """An ``Arriving`` whose ready prefix grows in steps, as a first hop's verified ranges do."""

    def __init__(self, size: int, step: int) -> None:
        self.size, self.mode, self.mtime = size, 0o644, 0.0
        self.front, self.step = 0, step
        self.changed = asyncio.Event()

    def ready(self):
        return [(0, self.front)] if self.front else []

    async def more(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self.changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        self.changed.clear()

    async def whole(self) -> str:
        return "00" * 32

    async def feed(self) -> None:
        while self.front < self.size:
            await asyncio.sleep(0.005)
            self.front = min(self.size, self.front + self.step)
            self.changed.set()


class _Copy(ParallelTransfer):
    """Copies the growing source into a buffer and notes, per lease, whether it had all arrived."""

    def __init__(self, chunks, source: bytes, arriving, **kw) -> None:
        super().__init__(chunks, arriving=arriving, **kw)
        self.source, self.out, self.early = source, bytearray(len(source)), []

    async def move(self, lease, stream) -> None:
        if lease.end > self.arriving.front:
            self.early.append((lease.start, lease.end, self.arriving.front))
        self.out[lease.start:lease.end] = self.source[lease.start:lease.end]
        await asyncio.sleep(0)
        self.account(lease, lease.end - lease.start)


def test_parallel_streams_follow_a_growing_source_and_never_run_ahead_of_it():
    source = bytes(range(256)) * (16 * KiB)  # 4 MiB
    arriving = _Growing(len(source), 96 * KiB)

    async def main():
        run = _Copy(ChunkMap(len(source), align=KiB), source, arriving, streams=4)
        run.lease_floor = 64 * KiB
        feeder = asyncio.create_task(arriving.feed())
        await run.run()
        await feeder
        return run

    run = asyncio.run(main())
    assert run.early == []
    assert bytes(run.out) == source
    assert run.chunks.complete
    assert json.dumps(run.chunks.done_intervals()) == json.dumps([[0, len(source)]])
