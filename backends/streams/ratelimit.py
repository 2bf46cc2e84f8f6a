"""Token buckets: one shared by all streams of a job (``--limit-rate``), one shared by every job of this
process (the global cap in Settings); a stream pays both, so the lower wins.

Streams read, then pay for what they read; a stream in debt sleeps until the
bucket refills. Reading less makes the kernel's receive window close, so the
sender slows down too: the limit holds on the wire, not just on disk. Under a cap
a stream reads at most ``quantum`` bytes at a time (``piece``): paying after a
read of whatever the socket held (megabytes on a fast path, where the receive
buffer has grown) let a study's sixteen files run at fifteen times the cap for
its first seconds.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref

from ..core.schedule import rate_at

QUANTUM_MIN, QUANTUM_MAX = 16 * 1024, 1 << 20


def quantum_of(rate: float) -> int:
    """The most a capped stream reads at once: a sixteenth of a second at the cap, within 16 KiB … 1 MiB."""
    return int(max(QUANTUM_MIN, min(QUANTUM_MAX, rate / 16)))


def piece(limiter, default: int) -> int:
    """How much a stream asks its socket for next: ``default``, or less under a cap (``quantum``)."""
    return min(default, limiter.quantum) if limiter is not None else default


class RateLimit:
    def __init__(self, bytes_per_second: float, burst: float | None = None) -> None:
        if bytes_per_second <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(bytes_per_second)
        self.burst = burst if burst is not None else max(self.rate / 8, 64 * 1024)
        self.quantum = quantum_of(self.rate)
        self._tokens = self.burst
        self._stamp = time.monotonic()
        self._lock = threading.Lock()  # paid from the event loop and from worker threads (tar, SFTP) alike

    def _take(self, nbytes: int) -> float:
        """Pay ``nbytes``; the seconds to wait before going on."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate) - nbytes
            self._stamp = now
            return -self._tokens / self.rate if self._tokens < 0 else 0.0

    async def consume(self, nbytes: int) -> None:
        wait = self._take(nbytes)
        if wait:
            await asyncio.sleep(wait)

    def consume_blocking(self, nbytes: int) -> None:
        """For data moved in a worker thread (tar streams, paramiko's SFTP)."""
        wait = self._take(nbytes)
        if wait:
            time.sleep(wait)


class ScheduledLimit:
    """The process-wide bucket of a bandwidth schedule (``core.schedule``): its rate follows the clock, so jobs
    already running slow down or speed up as a boundary passes. The rate is looked up as the bucket is paid;
    a new cap starts with a fresh bucket, and no cap lets every byte through."""

    def __init__(self, schedule, clock=time.time) -> None:
        self.schedule, self.clock = schedule, clock
        self._bucket: RateLimit | None = None
        self._lock = threading.Lock()

    def _now(self) -> RateLimit | None:
        rate = rate_at(self.schedule, self.clock())
        with self._lock:
            if rate is None:
                self._bucket = None
            elif self._bucket is None or self._bucket.rate != rate:
                self._bucket = RateLimit(rate)
            return self._bucket

    @property
    def rate(self) -> float:
        bucket = self._now()
        return bucket.rate if bucket is not None else float("inf")

    @property
    def quantum(self) -> int:
        return quantum_of(self.rate)

    async def consume(self, nbytes: int) -> None:
        bucket = self._now()
        if bucket is not None:
            await bucket.consume(nbytes)

    def consume_blocking(self, nbytes: int) -> None:
        bucket = self._now()
        if bucket is not None:
            bucket.consume_blocking(nbytes)


class Limits:
    """Several buckets paid together (a job's own and the process-wide one)."""

    def __init__(self, *buckets: RateLimit | ScheduledLimit) -> None:
        self.buckets = buckets

    @property
    def rate(self) -> float:
        return min(b.rate for b in buckets) if (buckets := self.buckets) else float("inf")

    @property
    def quantum(self) -> int:
        return quantum_of(self.rate)

    async def consume(self, nbytes: int) -> None:
        for bucket in self.buckets:
            await bucket.consume(nbytes)

    def consume_blocking(self, nbytes: int) -> None:
        for bucket in self.buckets:
            bucket.consume_blocking(nbytes)


#: the process-wide buckets, by rate: every job with the same global cap pays the same one
_SHARED: dict[float, RateLimit] = {}
#: the process-wide schedules' buckets, by schedule
_SCHEDULED: dict[tuple, ScheduledLimit] = {}
#: each job's own bucket, by (job, rate): every file of a study or a folder pays the same one, so --limit-rate
#: caps the job as a whole, not each file in it; a bucket lives while a transfer of the job holds it
_JOBS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def limiter_for(options) -> RateLimit | ScheduledLimit | Limits | None:
    """The limiter a job's streams pay: its own ``limit_rate`` (one bucket for the whole job, ``options.job``),
    the global ``shared_limit`` and the global ``shared_schedule``, any of them."""
    buckets = []
    if options.limit_rate:
        key = (getattr(options, "job", None), float(options.limit_rate))
        own = _JOBS.get(key) if key[0] is not None else None
        if own is None:
            own = RateLimit(options.limit_rate)
            if key[0] is not None:
                _JOBS[key] = own
        buckets.append(own)
    if options.shared_limit:
        rate = float(options.shared_limit)
        buckets.append(_SHARED.setdefault(rate, RateLimit(rate)))
    schedule = tuple(tuple(entry) for entry in getattr(options, "shared_schedule", ()) or ())
    if schedule:
        buckets.append(_SCHEDULED.setdefault(schedule, ScheduledLimit(schedule)))
    if not buckets:
        return None
    return buckets[0] if len(buckets) == 1 else Limits(*buckets)


async def pieces(reader, limiter):
    """A response body's pieces as they arrive (aiohttp's ``StreamReader``): whatever has come, or under a cap at
    most ``quantum`` bytes a time, so a read never runs megabytes ahead of the bucket."""
    while True:
        data = await (reader.read(limiter.quantum) if limiter is not None else reader.readany())
        if not data:
            return
        yield data
