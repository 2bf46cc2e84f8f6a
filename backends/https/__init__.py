"""Ranged parallel HTTP(S) downloads (aiohttp), paraFetch's idea done properly.

paraFetch splits a file into N static parts and, on a stall, drops everything and
sleeps 30 s; aria2 caps a server at 16 connections and spends three round trips
learning the size before its other connections start. Here: a speculative start
(``RangedFetch``), guided leases plus work stealing, up to 64 streams chosen by
measurement (``StreamTuner``), resume from a sidecar that is trusted only while
the server's size and validators match, a SHA-256 computed while the file
arrives, and verification against ``--checksum`` or a ``FILE.sha256``/``FILE.md5``
published next to the file.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ..base import Availability, Capabilities, ProbeResult, RemoteInfo, Result, Sink, TransferOptions, TransferRequest
from ..chunks import ChunkMap
from ..errors import BadRequest
from ..netprobe import RateSampler
from ..partfile import PartFile, check_destination
from ..urls import redact

#: a file smaller than this ends a preflight probe before TCP has left slow start
MIN_PROBE_BYTES = 64 * 1024 * 1024

# aiohttp and the working modules are imported inside the methods that use them, so a CLI
# run for another protocol does not pay ~0.2 s importing them


class HttpsBackend:
    name = "https"
    schemes = ("https", "http")
    caps = Capabilities(streams=True, resume=True, download=True, checksums=("sha256", "md5"))

    def available(self) -> Availability:
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        from .session import validate_url

        validate_url(request.source)
        if "://" in request.dest:
            raise BadRequest("HTTPS downloads go to a local file; copying from a web server straight to another "
                             "server is not supported. Copy to here first.")
        check_destination(Path(request.dest), request.options.overwrite)

    def discard(self, request: TransferRequest) -> None:
        """Remove what a cancelled download left behind."""
        PartFile(request.dest).discard()

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        from .remote import head
        from .session import open_session, validate_url

        validate_url(url)
        async with open_session(options.ca_file, options.insecure) as session:
            info, _ = await head(session, url)
        return info

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        from .download import Download
        from .session import open_session

        self.check(request)
        async with open_session(request.options.ca_file, request.options.insecure) as session:
            return await Download(session, request, sink).run()

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
        """``streams`` streams reading the file for ``seconds``, data discarded (preflight)."""
        from .fetch import RangedFetch
        from .identity import Validators
        from .remote import head
        from .session import open_session, validate_url

        validate_url(url)
        async with open_session(options.ca_file, options.insecure) as session:
            info, latency = await head(session, url)
            if info.size is not None and info.size < MIN_PROBE_BYTES:
                raise BadRequest(f"{redact(url)} is only {info.size // 1024} KiB: too small to measure a path "
                                 "with. Name a file of 1 GB or more.")
            if not info.size or not info.accepts_ranges:
                from .whole import probe_whole

                moved, spent = await probe_whole(session, info.url, seconds)
                return ProbeResult(1, moved, spent, latency / 3 * 1000)
            deadline = time.monotonic() + seconds
            done_before, fetch = 0, None

            async def read_until_deadline() -> None:
                nonlocal done_before, fetch
                while time.monotonic() < deadline:  # a file read before the deadline is read again
                    if fetch is not None:
                        done_before += fetch.fetched
                    fetch = RangedFetch(
                        session, info.url, ChunkMap(info.size), part=None, sink=None, validators=Validators.of(info),
                        streams=streams, max_streams=streams, rtt_s=latency / 3, deadline=deadline,
                    )
                    await fetch.run()

            sampler = RateSampler(lambda: done_before + (fetch.fetched if fetch else 0))
            await sampler.follow(asyncio.ensure_future(read_until_deadline()))
            moved, spent = sampler.steady()
            return ProbeResult(streams, moved, spent, ((fetch and fetch.rtt_s) or latency / 3) * 1000)
