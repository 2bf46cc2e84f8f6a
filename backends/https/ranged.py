"""Parallel HTTP Range fetching of one file (the stream machinery is ``backends.streams.parallel``).

Each lease is one Range request on a keep-alive connection; what arrives is written
with ``pwrite`` at its offset. The start is speculative: the first streams ask for the
first ranges at once, before the file's size is known (a HEAD first would cost three round trips
before any data flows). The first answer fixes the file's identity
(``on_identity``); answers for ranges past the end (416) are dropped. A TCP
connect measures the round-trip time meanwhile, so a long path gets more streams
from the start; ``StreamTuner`` then adds streams while they still pay.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp

from ..core.base import Sink
from ..core.errors import RemoteChanged, TransferError
from ..core.urls import redact
from ..destination import PartFile
from ..host.netprobe import answered_rtt, connect_time
from ..streams.chunks import ChunkMap, Lease
from ..streams.floor import RateFloor
from ..streams.handoff import Handoff
from ..streams.parallel import ParallelTransfer
from ..streams.ratelimit import RateLimit
from ..streams.tuner import StreamTuner
from .address import validate_url
from .faults import answer_error, map_error
from .identity import RangesIgnored, Validators, refuse_web_page, transport_coding, unsatisfied_size
from .options import STALL_SECONDS

Identified = Callable[[Validators, str], None]


class _BeyondEnd(Exception):
    """A speculative range started past the end of the file (HTTP 416)."""


class RangedFetch(ParallelTransfer):
    """One run of N streams over one URL; ``part`` None means discard (probes)."""

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
        web_page_ok: bool = False,
        stall_seconds: float = STALL_SECONDS,
        handoff: Handoff | None = None,
    ) -> None:
        super().__init__(chunks, record=part, sink=sink, limiter=limiter, tuner=tuner, streams=streams,
                         max_streams=max_streams, rtt_s=rtt_s, deadline=deadline, steal=part is not None,
                         handoff=handoff)
        self.session, self.url, self.part = session, url, part
        self.validators, self.on_identity = validators, on_identity
        self.web_page_ok = web_page_ok
        self.stall_seconds = stall_seconds if part is not None else None  # a probe is timed by its caller
        self.stall_what = redact(url)
        self.ready = validators is not None
        self._identified = asyncio.Event()
        if validators is not None:
            self._identified.set()
        self._first_offset = chunks.pending_start()
        if tuner and rtt_s is None:
            rtt = answered_rtt(*validate_url(url))
            if rtt:  # the handshake begun when the job was checked has its answer: open the right count at once
                self.rtt_s = rtt
                self.target = tuner.start_for_rtt(rtt)

    @property
    def fetched(self) -> int:
        return self.moved

    async def helpers(self) -> list[asyncio.Task]:
        if self.tuner and self.rtt_s is None:
            return [asyncio.create_task(self._measure_rtt())]
        return []

    async def path_rtt(self) -> float | None:
        return await connect_time(*validate_url(self.url))

    async def _measure_rtt(self) -> None:
        rtt = await self.path_rtt()
        if rtt and self.tuner:
            self.rtt_s = min(self.rtt_s or rtt, rtt)
            self.target = self.tuner.start_for_rtt(rtt)
            if self.target > len(self._workers):
                self._spawn(self.target - len(self._workers))  # now, not at the monitor's next tick

    def classify(self, exc: BaseException) -> TransferError:
        # before the first answer, a refused or unknown host is a wrong address: fail at once
        return map_error(exc, self.url, started=self.validators is not None)

    async def move(self, lease: Lease, stream) -> None:
        try:
            await self._fetch(lease)
        except _BeyondEnd:
            await self._identified.wait()  # the answer for the first range will say where the end is;
            # set_size has emptied this lease if it lies past the end, else the worker asks again

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
            floor = RateFloor(self.stall_seconds, redact(self.url))
            while lease.cursor < lease.end:
                data = await (reader.read(self.limiter.quantum) if self.limiter else reader.readany())
                if not data:
                    break  # the server sent a shorter range than asked; the worker asks for the rest
                floor.feed(len(data))
                take = min(len(data), lease.end - lease.cursor)
                if self.part is not None:
                    self.part.write(data if take == len(data) else memoryview(data)[:take], lease.cursor)
                self.account(lease, len(data))
                if self.limiter:
                    await self.limiter.consume(len(data))
                if self.past_deadline():
                    break
            if not reader.at_eof():
                resp.close()  # the request ran past a cut lease end: drop the connection, not the bytes

    def _check(self, resp: aiohttp.ClientResponse, lease: Lease, sent_if_range: bool) -> None:
        if resp.status == 200:
            if sent_if_range:
                raise RemoteChanged(f"The file at {redact(self.url)} changed on the server; starting again.")
            raise RangesIgnored()
        if resp.status == 416:
            self._past_end(resp, lease)
        if resp.status != 206:
            raise answer_error(resp, self.url)
        if transport_coding(resp.headers, str(resp.url)):
            raise RangesIgnored()  # ranges of compressed bytes: the file comes whole, decoded as it arrives
        if self.validators is None:
            refuse_web_page(resp.headers, str(resp.url), self.web_page_ok)
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
        self.ready = True
        self._identified.set()
