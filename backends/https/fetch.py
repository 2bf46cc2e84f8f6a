"""Parallel HTTP Range fetching of one file: streams, leases, stealing, checkpoints.

Each stream is a task that takes a lease from the ``ChunkMap`` (file order, sized
to last about twenty round trips, shrinking near the end), asks for exactly that
range on a keep-alive connection, writes what arrives with ``pwrite`` at its
offset, and asks for the next. When nothing is left to lease, an idle stream
steals the back half of the slowest stream's lease, so the last bytes are spread
over every stream instead of trickling in over one.

The start is speculative: the first streams ask for the first ranges at once,
before the file's size is known (a HEAD first would cost three round trips
before any data flows). The first answer fixes the file's identity
(``on_identity``); answers for ranges past the end (416) are dropped. A TCP
connect measures the round-trip time meanwhile, so a long path gets more streams
from the start; ``StreamTuner`` then adds streams while they still pay.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import aiohttp

from ..base import Sink
from ..chunks import ChunkMap, Lease
from ..errors import RemoteChanged
from ..hashing import FollowingHasher
from ..partfile import PartFile
from ..ratelimit import RateLimit
from ..tuner import StreamTuner
from ..urls import redact
from .identity import RangesIgnored, Validators, unsatisfied_size
from .session import map_error, status_error

KiB, MiB = 1024, 1024 * 1024
MAX_LEASE = 64 * MiB
MIN_LEASE = 256 * KiB
FIRST_LEASE = 4 * MiB  # while no rate is known (the start, slow start)
LEASE_RTTS = 20  # a lease lasts about this many round trips: ~5 % idle per stream, a short hash tail
MIN_LEASE_SECONDS = 0.25  # on a LAN, RTT-sized leases would be tiny: keep each request meaningful
RAMP_SECONDS = 1.0  # leases stay FIRST_LEASE-sized this long after the first byte (TCP is in slow start)
CHECKPOINT_BYTES = 16 * MiB  # resume state is at most this far behind (or one second)
CHECKPOINT_SECONDS = 1.0
STREAM_RETRIES = 4  # a stream's own quick retries before the job-level retry takes over
TICK = 0.1

Identified = Callable[[Validators, str], None]


class _BeyondEnd(Exception):
    """A speculative range started past the end of the file (HTTP 416)."""


async def connect_time(url: str, timeout: float = 10.0) -> float | None:
    """Seconds for one TCP handshake to the URL's host: one round trip, measured cheaply."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(parts.hostname, port, type=1)
        began = time.monotonic()
        _, writer = await asyncio.wait_for(asyncio.open_connection(*infos[0][4][:2]), timeout)
        spent = time.monotonic() - began
        writer.close()
        return spent
    except (OSError, asyncio.TimeoutError, IndexError):
        return None  # the real requests will report the problem in words


class RangedFetch:
    """One run of N streams over one file; ``part`` None means discard (probes)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        chunks: ChunkMap,
        *,
        part: PartFile | None,
        sink: Sink | None,
        validators: Validators | None = None,
        on_identity: Identified | None = None,
        limiter: RateLimit | None = None,
        tuner: StreamTuner | None = None,
        streams: int = 1,
        max_streams: int = 64,
        rtt_s: float | None = None,
        deadline: float | None = None,
    ) -> None:
        self.session, self.url, self.chunks, self.part, self.sink = session, url, chunks, part, sink
        self.validators, self.on_identity, self.limiter, self.tuner = validators, on_identity, limiter, tuner
        self.hasher: FollowingHasher | None = None  # set by on_identity once the part file is settled
        self.target = tuner.streams if tuner else max(1, streams)
        self.max_streams = max_streams
        self.rtt_s = rtt_s
        self.deadline = deadline
        self.fetched = 0  # bytes off the network in this run, discarded ones included
        self.peak_streams = 0
        self.first_byte_at: float | None = None
        self.rate = 0.0  # aggregate bytes/s, smoothed
        self._identified = asyncio.Event()
        if validators is not None:
            self._identified.set()
        self._first_offset = chunks.pending_start()
        self._workers: set[asyncio.Task] = set()
        self._lease_began: dict[int, float] = {}
        self._saved_bytes = chunks.bytes_done
        self._saved_at = time.monotonic()
        self._flush: asyncio.Future | None = None
        self._saving: asyncio.Future | None = None

    # -- running ---------------------------------------------------------------
    async def run(self) -> None:
        self._spawn(self.target)
        helpers = [asyncio.create_task(self._monitor())]
        if self.tuner and self.rtt_s is None:
            helpers.append(asyncio.create_task(self._measure_rtt()))
        try:
            while self._workers:
                done, _ = await asyncio.wait(self._workers, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    self._workers.discard(task)
                    if task.exception() is not None:
                        raise task.exception()
                if not self._workers and not self.chunks.complete and not self._past_deadline():
                    self._spawn(1)  # work came back from a failed stream after the others left
        finally:
            for task in (*helpers, *self._workers):
                task.cancel()
            await asyncio.gather(*helpers, *self._workers, return_exceptions=True)
            await asyncio.gather(*(f for f in (self._flush, self._saving) if f), return_exceptions=True)
            self._saving = None
            self._workers.clear()
            self.chunks.release_all()
            if self.validators is not None:
                self.checkpoint(wait=True)

    async def _measure_rtt(self) -> None:
        rtt = await connect_time(self.url)
        if rtt and self.tuner:
            self.rtt_s = min(self.rtt_s or rtt, rtt)
            self.target = self.tuner.raise_start(rtt)

    def _spawn(self, count: int) -> None:
        for _ in range(count):
            if len(self._workers) >= self.max_streams:
                break
            self._workers.add(asyncio.create_task(self._worker()))
        self.peak_streams = max(self.peak_streams, len(self._workers))

    async def _monitor(self) -> None:
        last_t, last_b = time.monotonic(), self.fetched
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            inst = (self.fetched - last_b) / (now - last_t)
            self.rate = inst if self.rate == 0 else 0.8 * self.rate + 0.2 * inst
            last_t, last_b = now, self.fetched
            if self.sink and self.chunks.size_known:
                self.sink.progress(self.chunks.bytes_done, self.chunks.size, len(self._workers))
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
            if self.tuner and self.validators is not None:
                self.tuner.rtt_s = self.rtt_s or self.tuner.rtt_s
                self.target = self.tuner.observe(now, self.fetched)
            want = self.target - len(self._workers)
            if want > 0 and self.chunks.pending_bytes >= MIN_LEASE:
                self._spawn(min(want, self.chunks.pending_bytes // MIN_LEASE))
            if self.validators is not None and now - self._saved_at >= CHECKPOINT_SECONDS:
                self.checkpoint()
            if self.part and self.validators is not None and (self._flush is None or self._flush.done()):
                # write back continuously (off the loop), so the final fdatasync has little left to do
                self._flush = asyncio.ensure_future(asyncio.to_thread(self.part.sync))

    def checkpoint(self, *, wait: bool = False) -> None:
        """Save resume state: a small JSON file replaced atomically, written off the loop
        (a rename can take milliseconds on ext4); one save at a time, in order."""
        if not self.part:
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
            self.part.save_state(snapshot)
        else:
            self._saving = asyncio.ensure_future(asyncio.to_thread(self.part.save_state, snapshot))

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    # -- one stream ----------------------------------------------------------------
    async def _worker(self) -> None:
        failures = 0
        while not self._past_deadline():
            lease = self._next_lease()
            if lease is None:
                return
            self._lease_began[lease.id] = time.monotonic()
            try:
                await self._fetch(lease)
            except _BeyondEnd:
                await self._identified.wait()  # the answer for the first range will say where the end is
                self._drop(lease, finished=lease.finished)
                continue
            except (asyncio.CancelledError, RemoteChanged, RangesIgnored):
                self._drop(lease, finished=False)
                raise
            except Exception as exc:
                self._drop(lease, finished=False)
                # before the first answer, a refused or unknown host is a wrong address: fail at once
                err = map_error(exc, self.url, started=self.validators is not None)
                failures += 1
                if not err.retryable or failures > STREAM_RETRIES:
                    if err is exc:
                        raise
                    raise err from exc
                await asyncio.sleep(min(0.25 * 2**failures, 4.0))
                continue
            failures = 0
            self._drop(lease, finished=lease.finished)

    def _drop(self, lease: Lease, finished: bool) -> None:
        self._lease_began.pop(lease.id, None)
        if not self.chunks.is_active(lease):
            return
        if finished:
            self.chunks.finish(lease)
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
        else:
            self.chunks.release(lease)

    def _next_lease(self) -> Lease | None:
        lease = self.chunks.lease(self._lease_size())
        if lease is None and self.part is not None and self.chunks.size_known:
            lease = self.chunks.steal(self._min_split(), rank=self._seconds_left)
        return lease

    def _stream_rate(self) -> float:
        return self.rate / max(1, len(self._workers))

    def _lease_size(self) -> int:
        """Guided self-scheduling (half of an equal share of what is left), capped in time.

        A lease costs its stream one idle round trip, so it should last many RTTs;
        but the hasher can only follow the oldest unfinished lease, so leases must
        not last long either: about ``LEASE_RTTS`` round trips of one stream's rate.
        """
        guided = self.chunks.pending_bytes // (2 * max(1, self.target))
        rate = self._stream_rate()
        ramping = self.first_byte_at is None or time.monotonic() - self.first_byte_at < RAMP_SECONDS
        cap = int(rate * max(self.rtt_s or 0.0, MIN_LEASE_SECONDS / LEASE_RTTS) * LEASE_RTTS)
        if ramping:
            cap = max(cap, FIRST_LEASE)
        return int(min(MAX_LEASE, max(MIN_LEASE, min(guided, cap))))

    def _min_split(self) -> int:
        """A steal costs the thief one round trip; only steal what outlasts that."""
        return max(MIN_LEASE // 2, int(self._stream_rate() * (self.rtt_s or 0.05) * 4))

    def _seconds_left(self, lease: Lease) -> float:
        began = self._lease_began.get(lease.id)
        done = lease.cursor - lease.start
        if began is None or done <= 0:
            rate = self._stream_rate() or 1.0
        else:
            rate = done / max(1e-3, time.monotonic() - began)
        return lease.remaining / max(rate, 1.0)

    async def _fetch(self, lease: Lease) -> None:
        headers = {"Range": f"bytes={lease.cursor}-{lease.end - 1}"}
        if_range = self.validators.if_range if self.validators else None
        if if_range:
            headers["If-Range"] = if_range
        sent = time.monotonic()
        async with self.session.get(self.url, headers=headers) as resp:
            self._check(resp, lease, bool(if_range))
            latency = time.monotonic() - sent
            if self.rtt_s is None or latency < self.rtt_s:
                self.rtt_s = latency
            reader = resp.content
            while lease.cursor < lease.end:
                data = await reader.readany()
                if not data:
                    break  # the server sent a shorter range than asked; the worker asks for the rest
                if self.first_byte_at is None:
                    self.first_byte_at = time.monotonic()
                self._write(lease, data)
                if self.limiter:
                    await self.limiter.consume(len(data))
                if self._past_deadline():
                    break
            if not reader.at_eof():
                resp.close()  # the request ran past a cut lease end: drop the connection, not the bytes

    def _write(self, lease: Lease, data: bytes) -> None:
        take = min(len(data), lease.end - lease.cursor)
        if self.part is not None:
            self.part.write(data if take == len(data) else memoryview(data)[:take], lease.cursor)
        self.chunks.record(lease, take)
        self.fetched += len(data)
        if self.chunks.bytes_done - self._saved_bytes >= CHECKPOINT_BYTES:
            self.checkpoint()

    def _check(self, resp: aiohttp.ClientResponse, lease: Lease, sent_if_range: bool) -> None:
        if resp.status == 200:
            if sent_if_range:
                raise RemoteChanged(f"The file at {redact(self.url)} changed on the server; starting again.")
            raise RangesIgnored()
        if resp.status == 416:
            self._past_end(resp, lease)
        if resp.status != 206:
            raise status_error(resp.status, self.url, resp.reason or "")
        if self.validators is None:
            self._identify(resp)
        self.validators.check_partial(resp.headers, self.url, lease.cursor)

    def _past_end(self, resp: aiohttp.ClientResponse, lease: Lease) -> None:
        size = unsatisfied_size(resp.headers)
        if self.validators is None and lease.start == self._first_offset:
            raise RemoteChanged(
                f"The file at {redact(self.url)} is shorter than Ferry had fetched before ({size} bytes); "
                "starting again."
            )
        if self.validators is not None and self.validators.size is not None and lease.start < self.validators.size:
            raise RemoteChanged(f"The file at {redact(self.url)} is shorter than it was; starting again.")
        raise _BeyondEnd()

    def _identify(self, resp: aiohttp.ClientResponse) -> None:
        """The first good answer: this is the file, this is its size, this is where it really is."""
        validators = Validators.from_partial(resp.headers)
        if validators.size is None:
            raise RangesIgnored()  # no total size: fetch it whole, in order
        self.validators = validators
        self.url = str(resp.url)  # after redirects
        self.chunks.set_size(validators.size)
        if self.on_identity:
            self.on_identity(validators, self.url)
        self._identified.set()
