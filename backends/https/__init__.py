"""Ranged parallel HTTP(S) downloads (aiohttp), paraFetch's idea done properly.

paraFetch splits a file into N static parts and, on a stall, drops everything and
sleeps 30 s; aria2 caps a server at 16 connections. Here: guided leases plus
work stealing (``RangedFetch``), up to 64 streams chosen by measurement
(``StreamTuner``), resume from a sidecar that is trusted only while the server's
size and validators match, a SHA-256 computed while the file arrives, and
verification against ``--checksum`` or a ``FILE.sha256``/``FILE.md5`` published
next to the file.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from ..base import (
    Availability,
    Capabilities,
    Checksum,
    ProbeResult,
    RemoteInfo,
    Result,
    Sink,
    TransferOptions,
    TransferRequest,
)
from ..checksums import SIDECARS, parse_sidecar
from ..chunks import ChunkMap, total
from ..errors import Corrupt, RemoteChanged, TransferError
from ..hashing import FollowingHasher, hash_file
from ..partfile import Identity, PartFile, check_destination, human_size
from ..ratelimit import RateLimit
from ..tuner import StreamTuner, initial_streams
from ..urls import host_of, redact, remote_name
from .fetch import RangedFetch, RangesIgnored, Validators, fetch_whole
from .session import map_error, open_session, status_error, validate_url

MAX_RESTARTS = 3  # a file that keeps changing under us is an error, not a loop
MIN_BYTES_PER_STREAM = 4 * 1024 * 1024
SIDECAR_LIMIT = 64 * 1024


async def head(session: aiohttp.ClientSession, url: str) -> tuple[RemoteInfo, float]:
    """Size, validators and range support of ``url``; plus the request's latency."""
    began = time.monotonic()
    try:
        async with session.head(url, allow_redirects=True) as resp:
            if resp.status in (405, 501):
                return await _range_probe(session, url, began)
            if resp.status >= 400:
                raise status_error(resp.status, url, resp.reason or "")
            length = resp.headers.get("Content-Length")
            info = RemoteInfo(
                url=str(resp.url),
                size=int(length) if length and length.isdigit() else None,
                etag=resp.headers.get("ETag"),
                last_modified=resp.headers.get("Last-Modified"),
                accepts_ranges="bytes" in resp.headers.get("Accept-Ranges", "").lower(),
            )
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_error(exc, url) from exc
    return info, time.monotonic() - began


async def _range_probe(session: aiohttp.ClientSession, url: str, began: float) -> tuple[RemoteInfo, float]:
    """For servers that refuse HEAD: a one-byte ranged GET tells the same."""
    async with session.get(url, headers={"Range": "bytes=0-0"}) as resp:
        if resp.status not in (200, 206):
            raise status_error(resp.status, url, resp.reason or "")
        full = resp.headers.get("Content-Range", "").rpartition("/")[2]
        length = resp.headers.get("Content-Length")
        size = int(full) if full.isdigit() else (int(length) if resp.status == 200 and length else None)
        info = RemoteInfo(
            url=str(resp.url),
            size=size,
            etag=resp.headers.get("ETag"),
            last_modified=resp.headers.get("Last-Modified"),
            accepts_ranges=resp.status == 206,
        )
        resp.close()
    return info, time.monotonic() - began


async def find_sidecar(session: aiohttp.ClientSession, url: str) -> Checksum | None:
    """A ``FILE.sha256`` (or ``.md5``) published next to the file, if any."""
    parts = urlsplit(url)
    if parts.query:
        return None  # signed URLs: a sibling address would not be signed
    name = remote_name(url)
    for algorithm, suffix in SIDECARS:
        sidecar_url = parts._replace(path=parts.path + suffix).geturl()
        try:
            async with session.get(sidecar_url) as resp:
                if resp.status != 200 or (resp.content_length or 0) > SIDECAR_LIMIT:
                    continue
                text = (await resp.content.read(SIDECAR_LIMIT)).decode("utf-8", "replace")
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            continue
        digest = parse_sidecar(text, algorithm, name)
        if digest:
            return Checksum(algorithm, digest, source=f"the server's {name}{suffix}")
    return None


class HttpsBackend:
    name = "https"
    schemes = ("https", "http")
    caps = Capabilities(streams=True, resume=True, download=True, checksums=("sha256", "md5"))

    def available(self) -> Availability:
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        validate_url(request.source)
        check_destination(Path(request.dest), request.options.overwrite)

    def discard(self, request: TransferRequest) -> None:
        """Remove what a cancelled download left behind."""
        PartFile(request.dest).discard()

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        validate_url(url)
        async with open_session(options.ca_file, options.insecure) as session:
            info, _ = await head(session, url)
        return info

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        self.check(request)
        async with open_session(request.options.ca_file, request.options.insecure) as session:
            return await _Download(session, request, sink).run()

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
        validate_url(url)
        async with open_session(options.ca_file, options.insecure) as session:
            info, latency = await head(session, url)
            if not info.size or not info.accepts_ranges:
                streams = 1
            chunks = ChunkMap(info.size or 0)
            fetch = RangedFetch(
                session, info.url, Validators.of(info), chunks, part=None, sink=None,
                streams=streams, max_streams=streams, rtt_s=latency / 3, deadline=time.monotonic() + seconds,
            )
            began = time.monotonic()
            await fetch.run()
            spent = time.monotonic() - (fetch.first_byte_at or began)
            return ProbeResult(streams, fetch.fetched, spent, (fetch.rtt_s or latency / 3) * 1000)


class _Download:
    """One download job, possibly restarted when the source changes under it."""

    def __init__(self, session: aiohttp.ClientSession, request: TransferRequest, sink: Sink) -> None:
        self.session, self.request, self.sink = session, request, sink
        self.options = request.options
        self.part = PartFile(request.dest)
        self.notes: list[str] = []
        self.fetched = 0
        self.peak_streams = 0
        self.rtt_s: float | None = None
        self.limiter = RateLimit(self.options.limit_rate) if self.options.limit_rate else None

    def note(self, message: str) -> None:
        self.notes.append(message)
        self.sink.note(message)

    async def run(self) -> Result:
        began = time.monotonic()
        url = self.request.source
        info, latency = await head(self.session, url)
        self.rtt_s = latency / (3 if urlsplit(url).scheme == "https" else 2)
        sidecar = None if self.options.checksum else asyncio.create_task(find_sidecar(self.session, info.url))
        restarts, resumed_from = 0, 0
        try:
            while True:
                try:
                    digests, resumed = await self._attempt(info)
                    resumed_from = resumed if restarts == 0 else 0
                    break
                except RemoteChanged as exc:
                    restarts += 1
                    if restarts > MAX_RESTARTS:
                        raise RemoteChanged(
                            f"The file at {redact(url)} kept changing on the server ({restarts} times during the "
                            "transfer). Wait until it is complete there, then try again."
                        ) from exc
                    self.note(str(exc))
                    info, _ = await head(self.session, url)
            expected = self.options.checksum or (await sidecar if sidecar else None)
            if expected and expected.algorithm not in digests:  # an .md5 sidecar: one more pass, rare
                digests.update(await asyncio.to_thread(hash_file, self.part.part, (expected.algorithm,)))
            verified, method = self._verify(digests, expected)
            self.part.finish(info.size)
        except BaseException:
            if sidecar:
                sidecar.cancel()
            self.part.close()
            raise
        size = info.size if info.size is not None else self.fetched
        return Result(
            bytes=size, seconds=time.monotonic() - began, streams=self.peak_streams, sha256=digests["sha256"],
            verified=verified, verify_method=method, peer_host=host_of(info.url),
            rtt_ms=self.rtt_s * 1000 if self.rtt_s else None, restarts=restarts, bytes_fetched=self.fetched,
            resumed_from=resumed_from, notes=self.notes,
        )

    async def _attempt(self, info: RemoteInfo) -> tuple[dict[str, str], int]:
        """Fetch everything not yet here, hash it, confirm the source did not change."""
        identity = Identity(redact(self.request.source), info.size, info.etag, info.last_modified)
        done = self.part.open(identity)
        resumed = total(done)
        if resumed:
            self.note(f"Resuming: {human_size(resumed)} of {human_size(info.size or 0)} was already here.")
        algorithms = ("sha256", "md5") if self._wants_md5() else ("sha256",)
        hasher = FollowingHasher(self.part.part, algorithms)
        validators = Validators.of(info)
        try:
            if info.size is not None:
                try:
                    await self._ranged(info, validators, done, hasher)
                except RangesIgnored:
                    self.note("The server does not support byte ranges, so Ferry uses one stream and cannot resume.")
                    await self._whole(info, validators, hasher)
            else:
                if info.size is None:
                    self.note("The server does not say how big the file is, so Ferry uses one stream.")
                await self._whole(info, validators, hasher)
            self.sink.stage("verifying")
            size = info.size if info.size is not None else self.fetched
            digests, _ = await asyncio.gather(asyncio.to_thread(hasher.finish, size), self._revalidate(info))
        finally:
            hasher.stop()
        return digests, resumed

    async def _ranged(self, info: RemoteInfo, validators: Validators, done, hasher: FollowingHasher) -> None:
        chunks = ChunkMap(info.size, done)
        opts = self.options
        tuner = None
        if opts.streams == "auto":
            start = opts.initial_streams or initial_streams(
                self.rtt_s, info.size, opts.max_streams, MIN_BYTES_PER_STREAM
            )
            tuner = StreamTuner(start, maximum=opts.max_streams, rtt_s=self.rtt_s or 0.05)
        fetch = RangedFetch(
            self.session, info.url, validators, chunks, part=self.part, sink=self.sink, hasher=hasher,
            limiter=self.limiter, tuner=tuner, streams=1 if opts.streams == "auto" else int(opts.streams),
            max_streams=opts.max_streams, rtt_s=self.rtt_s, ranges_confirmed=info.accepts_ranges,
        )
        try:
            await fetch.run()
        finally:
            self.fetched += fetch.fetched
            self.peak_streams = max(self.peak_streams, fetch.peak_streams)
            self.rtt_s = fetch.rtt_s or self.rtt_s
        if tuner and tuner.history:
            self.note("Streams: " + ", ".join(f"{n} → {r * 8 / 1e6:.0f} Mbit/s" for n, r in tuner.history))

    async def _whole(self, info: RemoteInfo, validators: Validators, hasher: FollowingHasher) -> None:
        self.part.restart()
        self.peak_streams = max(self.peak_streams, 1)
        written = await fetch_whole(self.session, info.url, validators, self.part, self.sink, hasher, self.limiter)
        self.fetched += written
        if info.size is None:
            info.size = written

    async def _revalidate(self, info: RemoteInfo) -> None:
        """A last HEAD: a file rewritten in place during the last request is caught here."""
        try:
            now, _ = await head(self.session, info.url)
        except TransferError as exc:
            self.note(f"Could not re-check the file on the server at the end ({exc}); relying on per-range checks.")
            return
        if (now.size, now.etag, now.last_modified) != (info.size, info.etag, info.last_modified):
            raise RemoteChanged(f"The file at {redact(self.request.source)} changed on the server; starting again.")

    def _wants_md5(self) -> bool:
        checksum = self.options.checksum
        return checksum is not None and checksum.algorithm == "md5"

    def _verify(self, digests: dict[str, str], expected: Checksum | None) -> tuple[bool, str]:
        if expected is None:
            return False, "no checksum given or published; size and ETag/Last-Modified checked on every range"
        actual = digests[expected.algorithm]
        who = "you gave" if expected.source == "given" else f"in {expected.source}"
        if actual != expected.hexdigest:
            self.part.state.unlink(missing_ok=True)  # the bytes are wrong: a re-run must fetch them again
            self.part.close()
            raise Corrupt(
                f"The downloaded data does not match the {expected.algorithm} checksum {who} "
                f"(expected {expected.hexdigest[:16]}…, got {actual[:16]}…). It was kept as {self.part.part}; "
                "run the transfer again, and if it fails again ask the server's owner whether the checksum is current."
            )
        return True, f"{expected.algorithm} {who} matched"
