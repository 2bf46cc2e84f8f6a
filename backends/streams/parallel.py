"""N streams working through one file's ``ChunkMap``: the part every splitting backend shares.

A stream is a task with an optional resource of its own (an HTTP keep-alive connection
lives in aiohttp's pool; an SSH stream owns a multiplexed OpenSSH master). It takes a
lease (file order, sized to last about twenty round trips, shrinking near the end),
moves exactly those bytes (``move``, the protocol's part), and takes the next. When
nothing is left to lease, an idle stream steals the back half of the lease with the most
seconds left, so the last bytes are spread over every stream instead of trickling in
over one. Meanwhile a monitor reports progress, feeds the ``StreamTuner`` (adding
streams while they pay), keeps the hasher following the done prefix, saves resume
state and writes data back to disk continuously, both off the event loop.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from ..core.abilities import StreamRatesSink
from ..core.base import Sink
from ..core.errors import RemoteChanged, TransferError
from .chunks import ChunkMap, Interval, Lease
from .floor import MIN_RATE, RateFloor
from .handoff import BORROW_FROM, Handoff
from .hashing import FollowingHasher
from .leases import MIN_LEASE, LeasePolicy
from .ratelimit import RateLimit
from .tuner import StreamTuner

KiB, MiB = 1024, 1024 * 1024
CHECKPOINT_BYTES = 16 * MiB  # resume state is at most this far behind (or one second)
CHECKPOINT_SECONDS = 1.0
STREAM_RETRIES = 4  # a stream's own quick retries before the job-level retry takes over
TICK = 0.1


class Record(Protocol):
    """Where progress is kept for resume (a ``PartFile`` for downloads)."""

    def save_state(self, done: list[Interval]) -> None: ...

    def sync(self) -> None: ...


_GAVE_UP = object()


class Fatal(Exception):
    """Raised by ``move`` for faults that end the whole run at once (the source changed…)."""


class ParallelTransfer(LeasePolicy):
    #: the smallest lease worth its fixed cost (a request; for SSH uploads a new channel and shell)
    lease_floor = MIN_LEASE
    #: the smallest piece a steal leaves either side (a steal costs the thief a request, and on FTP a new
    #: data connection with its slow start)
    steal_floor = MIN_LEASE // 2
    #: whether a stream asks for its next lease before the current one ends (``lease_ahead``): then a lease
    #: costs no idle round trip, and leases are sized by each stream's own rate (see ``_lease_size``)
    asks_ahead = False
    #: a whole transfer that averages under ``MIN_RATE`` over this many seconds is a stall (``RateFloor``): a
    #: server that trickles into every stream, each range it starts stolen before it trips a per-request floor,
    #: would otherwise go on for ever; None: no floor (probes, relayed sources that wait on another hop)
    stall_seconds: float | None = None
    #: who is stalling, for that sentence
    stall_what = "The server"

    def __init__(
        self,
        chunks: ChunkMap,
        *,
        record: Record | None = None,
        sink: Sink | None = None,
        limiter: RateLimit | None = None,
        tuner: StreamTuner | None = None,
        streams: int = 1,
        max_streams: int = 64,
        rtt_s: float | None = None,
        deadline: float | None = None,
        steal: bool = True,
        arriving=None,
        handoff: Handoff | None = None,
    ) -> None:
        self.chunks, self.record, self.sink, self.limiter, self.tuner = chunks, record, sink, limiter, tuner
        self.hasher: FollowingHasher | None = None
        self.target = tuner.streams if tuner else max(1, streams)
        self.max_streams = max_streams
        self.rtt_s = rtt_s
        self.deadline = deadline
        self.steal = steal
        #: the source is still arriving (``backends.core.base.Arriving``): lease only what is ready, wait for more
        self.arriving = arriving
        self.handoff = handoff
        self._borrowed = 0  # streams over the tuner's count, on slots of the handoff nobody waited for
        self.moved = 0  # bytes over the network in this run, discarded ones included
        self.peak_streams = 0
        self.first_byte_at: float | None = None
        self.rate = 0.0  # aggregate bytes/s, smoothed
        self.ready = True  # False until the file's identity is known (speculative starts)
        self._workers: set[asyncio.Task] = set()
        self._connected = 0  # streams whose connection is up (SSH logins take several round trips)
        self._leaving: set[asyncio.Task] = set()  # streams ending because the target went down
        self._numbers = iter(range(1, 1 << 30))
        self._lease_stream: dict[int, int] = {}  # lease id -> stream number
        self._stream_moved: dict[int, int] = {}  # stream number -> bytes moved
        self._stream_rates: dict[int, float] = {}  # stream number -> bytes/s, smoothed
        self._lease_began: dict[int, float] = {}
        self._saved_bytes = chunks.bytes_done
        self._saved_at = time.monotonic()
        self._flush: asyncio.Future | None = None
        self._saving: asyncio.Future | None = None
        self._rtt_sample: asyncio.Future | None = None

    # -- the protocol's part -------------------------------------------------------
    async def open_stream(self) -> Any:
        """A stream's own resource (a connection), opened when the stream starts."""
        return None

    async def close_stream(self, stream: Any) -> None:
        return None

    async def move(self, lease: Lease, stream: Any) -> None:
        """Move ``lease``'s bytes, calling ``account`` as they go."""
        raise NotImplementedError

    def classify(self, exc: BaseException) -> TransferError:
        """An exception from ``move`` as one of Ferry's errors."""
        return exc if isinstance(exc, TransferError) else TransferError(str(exc))

    async def path_rtt(self) -> float | None:
        """The path's round trip now, queue included (a fresh TCP handshake to the server); None: unknown."""
        return None

    async def _sample_rtt(self, tuner: StreamTuner) -> None:
        step = len(tuner.history)
        rtt = await self.path_rtt()
        if len(tuner.history) == step:  # an answer after the verdict would be read as the next step's
            tuner.loaded_rtt(rtt)

    async def helpers(self) -> list[asyncio.Task]:
        """Extra tasks that run alongside the streams (the HTTPS RTT probe)."""
        return []

    # -- running ---------------------------------------------------------------------
    async def run(self) -> None:
        self._spawn(self.target)
        monitor = asyncio.create_task(self._monitor())
        extra = [monitor, *await self.helpers()]
        try:
            while self._workers:
                done, _ = await asyncio.wait(self._workers | {monitor}, return_when=asyncio.FIRST_COMPLETED)
                if monitor in done:
                    raise monitor.exception() or RuntimeError("the transfer's monitor ended")
                for task in done:
                    self._workers.discard(task)
                    self._leaving.discard(task)
                    if task.exception() is not None:
                        raise task.exception()
                if not self._workers and not self.chunks.complete and not self.past_deadline():
                    self._spawn(1)  # work came back from a failed stream after the others left
        finally:
            if self._rtt_sample is not None:
                extra.append(self._rtt_sample)
            for task in (*extra, *self._workers):
                task.cancel()
            await asyncio.gather(*extra, *self._workers, return_exceptions=True)
            await asyncio.gather(*(f for f in (self._flush, self._saving) if f), return_exceptions=True)
            self._saving = None
            self._workers.clear()
            self.chunks.release_all()
            if self.ready:
                self.checkpoint(wait=True)

    def _spawn(self, count: int) -> None:
        for _ in range(count):
            if len(self._workers) >= self.max_streams + self._borrowed:
                break
            self._workers.add(asyncio.create_task(self._worker()))

    @property
    def streams(self) -> int:
        return len(self._workers)

    def _floor(self) -> RateFloor | None:
        """The whole transfer's stall floor, where one applies (a cap below the floor is the user's choice)."""
        cap = self.limiter.rate if self.limiter is not None else None
        if self.stall_seconds is None or self.arriving is not None or (cap is not None and cap < 2 * MIN_RATE):
            return None
        return RateFloor(self.stall_seconds, self.stall_what)

    async def _monitor(self) -> None:
        last_t, last_b = time.monotonic(), self.moved
        last_streams: dict[int, int] = {}
        floor: RateFloor | None = None
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            if floor is None and self.ready and self.first_byte_at is not None:
                floor = self._floor()  # from the first byte: connecting and logging in are timed elsewhere
            elif floor is not None and not self.chunks.complete:
                floor.feed(self.moved - last_b)
            inst = (self.moved - last_b) / (now - last_t)
            self.rate = inst if self.rate == 0 else 0.8 * self.rate + 0.2 * inst
            for number, moved in list(self._stream_moved.items()):
                inst_s = (moved - last_streams.get(number, moved)) / (now - last_t)
                old = self._stream_rates.get(number)
                self._stream_rates[number] = inst_s if old is None else 0.8 * old + 0.2 * inst_s
            last_streams = dict(self._stream_moved)
            last_t, last_b = now, self.moved
            if self.sink and self.chunks.size_known:
                # streams that hold a connection: a handoff's others wait for a slot the file before still holds
                in_use = self._connected if self.handoff is not None else len(self._workers)
                self.sink.progress(self.chunks.bytes_done, self.chunks.size, in_use)
                if isinstance(self.sink, StreamRatesSink):
                    self.sink.stream_rates([self._stream_rates[n] for n in sorted(self._stream_rates)])
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
            if self.tuner and self.ready and self._connected >= min(self.target, len(self._workers)):
                # judge a stream count only once its streams are all connected, not while they log in
                self.tuner.rtt_s = self.rtt_s or self.tuner.rtt_s
                if self.tuner.wants_loaded_rtt(now):
                    self._rtt_sample = asyncio.ensure_future(self._sample_rtt(self.tuner))
                left = self.chunks.size - self.chunks.bytes_done if self.chunks.size_known else None
                self.target = self.tuner.observe(now, self.moved, left) + self._borrowed
            if self.handoff is not None:
                self._borrow()
            want = self.target - len(self._workers)
            if want > 0 and self.chunks.pending_bytes >= MIN_LEASE:
                self._spawn(min(want, self.chunks.pending_bytes // MIN_LEASE))
            if self.ready and now - self._saved_at >= CHECKPOINT_SECONDS:
                self.checkpoint()
            if self.record and self.ready and (self._flush is None or self._flush.done()):
                # write back continuously (off the loop), so the final fdatasync has little left to do
                self._flush = asyncio.ensure_future(asyncio.to_thread(self.record.sync))

    def checkpoint(self, *, wait: bool = False) -> None:
        """Save resume state: a small JSON file replaced atomically, written off the loop
        (a rename can take milliseconds on ext4); one save at a time, in order."""
        if not self.record:
            return
        if self._saving is not None and self._saving.done():
            self._saving.result()  # a failed save (disk full) surfaces here, on the loop
            self._saving = None
        if self._saving is not None and not wait:
            return  # the next tick saves what this one would have
        self._saved_at = time.monotonic()
        self._saved_bytes = self.chunks.bytes_done
        snapshot = self.chunks.done_intervals()
        if wait:
            self.record.save_state(snapshot)
        else:
            self._saving = asyncio.ensure_future(asyncio.to_thread(self.record.save_state, snapshot))

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    # -- one stream ----------------------------------------------------------------------
    async def _worker(self) -> None:
        if self.handoff is None:
            return await self._stream()
        async with self.handoff.slots:  # a connection the file before may still hold
            return await self._stream()

    async def _stream(self) -> None:
        stream = await self._open_with_retries()
        if stream is _GAVE_UP:
            return
        number = next(self._numbers)
        self._stream_moved[number] = 0
        self._connected += 1
        self.peak_streams = max(self.peak_streams, self._connected)  # streams that really ran, not tasks begun
        try:
            await self._leases(stream, number)
        finally:
            self._connected -= 1
            self._stream_moved.pop(number, None)
            self._stream_rates.pop(number, None)
            await self.close_stream(stream)

    async def _open_with_retries(self) -> Any:
        """Open this stream's connection; an extra stream that cannot connect just bows out.

        A server limits logins in flight (sshd's MaxStartups drops some past ten), so a refused
        connection is retried with backoff; only when no stream at all is connected does the
        error end the run.
        """
        failures = 0
        while True:
            try:
                return await self.open_stream()
            except (asyncio.CancelledError, Fatal):
                raise
            except Exception as exc:
                err = self.classify(exc)
                failures += 1
                if self.chunks.complete:
                    return _GAVE_UP  # the other streams finished the file meanwhile
                if not err.retryable or failures > STREAM_RETRIES:
                    if self._connected > 0 or getattr(err, "bows_out", False):
                        return _GAVE_UP
                    if err is exc:
                        raise
                    raise err from exc
                await asyncio.sleep(min(0.25 * 2**failures, 4.0))

    async def _leases(self, stream: Any, number: int) -> None:
        failures = 0
        while not self.past_deadline():
            if len(self._workers - self._leaving) > self.target:
                self._leaving.add(asyncio.current_task())  # the tuner went back to fewer streams: end here
                return
            lease = self.take_lease(stream, number)
            if lease is None:
                if self.arriving is not None and self.chunks.pending_bytes:
                    await self.arriving.more(1.0)  # the rest has not arrived yet: this stream waits for it
                    continue
                self._tail()
                return
            self._lease_began[lease.id] = time.monotonic()
            self._lease_stream[lease.id] = number
            try:
                await self.move(lease, stream)
            except (asyncio.CancelledError, Fatal, RemoteChanged):
                self._drop(lease, finished=False)
                raise
            except Exception as exc:
                self._drop(lease, finished=False)
                err = self.classify(exc)
                failures += 1
                if not err.retryable or failures > STREAM_RETRIES:
                    if err is exc:
                        raise
                    raise err from exc
                await asyncio.sleep(min(0.25 * 2**failures, 4.0))
                continue
            failures = 0
            self._drop(lease, finished=lease.finished)

    def _borrow(self) -> None:
        """One more stream on a slot of the lane's budget that no file waits for, while enough of this file is
        left to share: at the end of a list the last files take the connections the finished ones gave back,
        where each kept its own share and the link went half empty (stolen halves of leases feed it)."""
        handoff = self.handoff
        if handoff.slots.locked() or not self.ready or not self.chunks.size_known:
            return
        if len(self._workers) >= handoff.most or self._borrowed >= handoff.most - self.max_streams:
            return  # a file borrows at most what the budget holds beyond its own share, once each
        if self.chunks.size - self.chunks.bytes_done < BORROW_FROM:
            return
        self._borrowed += 1
        self.target += 1
        self._spawn(1)

    def _tail(self) -> None:
        """Nothing left to lease or steal: tell the lane once (``Handoff``)."""
        if self.handoff is not None and self.handoff.on_tail is not None:
            told, self.handoff.on_tail = self.handoff.on_tail, None
            told()

    def wire(self, lease: Lease, nbytes: int) -> None:
        """``nbytes`` crossed the network for ``lease`` (counted for rates, not yet as done)."""
        if self.first_byte_at is None:
            self.first_byte_at = time.monotonic()
        self.moved += nbytes
        number = self._lease_stream.get(lease.id)
        if number in self._stream_moved:
            self._stream_moved[number] += nbytes

    def account(self, lease: Lease, nbytes: int) -> int:
        """``nbytes`` arrived for ``lease`` (at its cursor); returns how many belong to it."""
        self.wire(lease, nbytes)
        return self.settle(lease, nbytes)

    def settle(self, lease: Lease, nbytes: int) -> int:
        """``nbytes`` at ``lease``'s cursor are done (their ``wire`` was counted as they came, before a check
        that had to hold first); returns how many belong to it."""
        take = self.chunks.record(lease, min(nbytes, lease.end - lease.cursor))
        if self.chunks.bytes_done - self._saved_bytes >= CHECKPOINT_BYTES:
            self.checkpoint()
        return take

    def _drop(self, lease: Lease, finished: bool) -> None:
        self._lease_began.pop(lease.id, None)
        self._lease_stream.pop(lease.id, None)
        if not self.chunks.is_active(lease):
            return
        if finished:
            self.chunks.finish(lease)
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
        else:
            self.chunks.release(lease)
