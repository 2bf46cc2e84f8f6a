"""Parallel HTTP Range fetching of one file: streams, leases, stealing, checkpoints.

Each stream is a task that takes a lease from the ``ChunkMap`` (file order, sizes
shrinking towards the end), asks for exactly that range on a keep-alive
connection, writes what arrives with ``pwrite`` at its offset, and asks for the
next. When nothing is left to lease, an idle stream steals the back half of the
slowest stream's lease, so the last bytes are spread over every stream instead
of trickling in over one. ``--streams auto`` is a ``StreamTuner`` watching the
aggregate rate and adding streams while they still pay.

Every response is checked against the file's identity (Content-Range total,
ETag, Last-Modified, and ``If-Range`` on the request), so a file replaced on the
server mid-transfer raises ``RemoteChanged`` instead of producing a spliced file.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

import aiohttp

from ..base import RemoteInfo, Sink
from ..chunks import ChunkMap, Lease
from ..errors import RemoteChanged, TransferError, Transient
from ..hashing import FollowingHasher
from ..partfile import PartFile
from ..ratelimit import RateLimit
from ..tuner import StreamTuner
from ..urls import redact
from .session import map_error, status_error

KiB, MiB = 1024, 1024 * 1024
MAX_LEASE = 64 * MiB
MIN_LEASE = 256 * KiB
CHECKPOINT_BYTES = 16 * MiB  # resume state is at most this far behind (plus one second)
CHECKPOINT_SECONDS = 1.0
STREAM_RETRIES = 4  # a stream's own quick retries before the job-level retry takes over
TICK = 0.1

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class RangesIgnored(Exception):
    """The server answered a Range request with the whole file (HTTP 200)."""


@dataclass
class Validators:
    """The file's identity as first seen; every response must agree with it."""

    size: int | None
    etag: str | None
    last_modified: str | None

    @classmethod
    def of(cls, info: RemoteInfo) -> Validators:
        return cls(info.size, info.etag, info.last_modified)

    @property
    def if_range(self) -> str | None:
        if self.etag and not self.etag.startswith("W/"):
            return self.etag  # If-Range needs a strong validator
        return self.last_modified

    def check(self, headers, url: str) -> None:
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        if self.etag and etag and etag != self.etag:
            raise RemoteChanged(
                f"The file at {redact(url)} changed on the server (ETag {self.etag} → {etag}); starting again."
            )
        if self.last_modified and modified and modified != self.last_modified:
            raise RemoteChanged(
                f"The file at {redact(url)} changed on the server (modified {modified}); starting again."
            )


class RangedFetch:
    """One run of N streams over one file; ``part`` None means discard (probes)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        validators: Validators,
        chunks: ChunkMap,
        *,
        part: PartFile | None,
        sink: Sink | None,
        hasher: FollowingHasher | None = None,
        limiter: RateLimit | None = None,
        tuner: StreamTuner | None = None,
        streams: int = 1,
        max_streams: int = 64,
        rtt_s: float | None = None,
        ranges_confirmed: bool = True,
        deadline: float | None = None,
    ) -> None:
        self.session, self.url, self.validators, self.chunks = session, url, validators, chunks
        self.part, self.sink, self.hasher, self.limiter, self.tuner = part, sink, hasher, limiter, tuner
        self.target = tuner.streams if tuner else max(1, streams)
        self.max_streams = max_streams
        self.rtt_s = rtt_s
        self.ranges_confirmed = ranges_confirmed
        self.deadline = deadline
        self.fetched = 0  # bytes off the network in this run, discarded ones included
        self.peak_streams = 0
        self.first_byte_at: float | None = None
        self.rate = 0.0  # aggregate bytes/s, smoothed
        self._workers: set[asyncio.Task] = set()
        self._lease_began: dict[int, float] = {}
        self._saved_bytes = chunks.bytes_done
        self._saved_at = time.monotonic()

    # -- running ---------------------------------------------------------------
    async def run(self) -> None:
        self._spawn(self.target if self.ranges_confirmed else 1)
        monitor = asyncio.create_task(self._monitor())
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
            monitor.cancel()
            for task in self._workers:
                task.cancel()
            await asyncio.gather(monitor, *self._workers, return_exceptions=True)
            self._workers.clear()
            self.chunks.release_all()
            self.checkpoint()

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
            if self.sink:
                self.sink.progress(self.chunks.bytes_done, self.chunks.size, len(self._workers))
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
            if self.tuner and self.ranges_confirmed:
                if self.rtt_s:
                    self.tuner.rtt_s = self.rtt_s
                self.target = self.tuner.observe(now, self.fetched)
            want = self.target - len(self._workers)
            worth = self.chunks.pending_bytes // max(MIN_LEASE, 1)
            if want > 0 and self.ranges_confirmed and worth > 0:
                self._spawn(min(want, worth))
            if now - self._saved_at >= CHECKPOINT_SECONDS:
                self.checkpoint()

    def checkpoint(self) -> None:
        """Save resume state (cheap: a small JSON file replaced atomically)."""
        self._saved_at = time.monotonic()
        self._saved_bytes = self.chunks.bytes_done
        if self.part:
            self.part.save_state(self.chunks.done_intervals())

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
            except (asyncio.CancelledError, RemoteChanged, RangesIgnored):
                self._drop(lease, finished=False)
                raise
            except Exception as exc:
                self._drop(lease, finished=False)
                err = map_error(exc, self.url, started=True)
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
        if lease.id not in {active.id for active in self.chunks.active}:
            return
        if finished:
            self.chunks.finish(lease)
            if self.hasher:
                self.hasher.advance(self.chunks.contiguous_prefix())
        else:
            self.chunks.release(lease)

    def _next_lease(self) -> Lease | None:
        lease = self.chunks.lease(self._lease_size())
        if lease is None and self.part is not None and self.ranges_confirmed:
            lease = self.chunks.steal(self._min_split(), rank=self._seconds_left)
        return lease

    def _stream_rate(self) -> float:
        return self.rate / max(1, len(self._workers))

    def _lease_size(self) -> int:
        """Guided self-scheduling: half of an equal share of what is left."""
        guided = self.chunks.pending_bytes // (2 * max(1, self.target))
        floor = min(8 * MiB, max(MIN_LEASE, int(self._stream_rate() * (self.rtt_s or 0.05) * 8)))
        return int(min(MAX_LEASE, max(floor, guided)))

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
        if self.validators.if_range:
            headers["If-Range"] = self.validators.if_range
        sent = time.monotonic()
        async with self.session.get(self.url, headers=headers) as resp:
            self._check(resp, lease, bool(headers.get("If-Range")))
            latency = time.monotonic() - sent
            if self.rtt_s is None or latency < self.rtt_s:
                self.rtt_s = latency
            if not self.ranges_confirmed:
                self.ranges_confirmed = True
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
            if sent_if_range and self.ranges_confirmed:
                raise RemoteChanged(f"The file at {redact(self.url)} changed on the server; starting again.")
            raise RangesIgnored()
        if resp.status == 416:
            raise RemoteChanged(f"The file at {redact(self.url)} is shorter than it was; starting again.")
        if resp.status != 206:
            raise status_error(resp.status, self.url, resp.reason or "")
        self.validators.check(resp.headers, self.url)
        match = _CONTENT_RANGE.fullmatch(resp.headers.get("Content-Range", "").strip())
        if not match:
            raise Transient(f"The server sent a partial answer without a usable Content-Range for {redact(self.url)}.")
        first, full = int(match.group(1)), match.group(3)
        if full != "*" and self.validators.size is not None and int(full) != self.validators.size:
            raise RemoteChanged(
                f"The file at {redact(self.url)} changed size on the server ({self.validators.size} → {full} bytes); "
                "starting again."
            )
        if first != lease.cursor:
            raise Transient(f"The server sent bytes from {first} when asked for {lease.cursor}; retrying that range.")


async def fetch_whole(
    session: aiohttp.ClientSession,
    url: str,
    validators: Validators,
    part: PartFile,
    sink: Sink | None,
    hasher: FollowingHasher | None,
    limiter: RateLimit | None,
) -> int:
    """One plain GET from byte 0, for servers without Range support or without a size."""
    written = 0
    try:
        async with session.get(url) as resp:
            if resp.status != 200:
                raise status_error(resp.status, url, resp.reason or "")
            validators.check(resp.headers, url)
            last = time.monotonic()
            async for data in resp.content.iter_any():
                part.write(data, written)
                written += len(data)
                if limiter:
                    await limiter.consume(len(data))
                now = time.monotonic()
                if now - last >= TICK:
                    last = now
                    if sink:
                        sink.progress(written, validators.size, 1)
                    if hasher:
                        hasher.advance(written)
    except TransferError:
        raise
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        raise map_error(exc, url, started=written > 0) from exc
    if validators.size is not None and written != validators.size:
        raise Transient(f"The server sent {written} of {validators.size} bytes and closed; Ferry will retry.")
    return written
