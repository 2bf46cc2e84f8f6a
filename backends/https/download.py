"""One download job: speculative ranged fetch, identity, resume, verification, restarts."""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiohttp

from ..core.base import Checksum, RemoteInfo, Result, Sink, TransferRequest
from ..core.errors import BadAnswer, Corrupt, RemoteChanged, TransferError, WebPage
from ..core.options import read_options
from ..core.urls import host_of, redact
from ..core.words import human_size
from ..destination import Identity, PartFile
from ..streams.chunks import ChunkMap, Interval, total
from ..streams.handoff import Handoff
from ..streams.hashing import FollowingHasher, algorithms_for, hash_file
from ..streams.ratelimit import limiter_for
from ..streams.tuner import StreamTuner
from .identity import RangesIgnored, Validators, same_etag
from .options import HttpsOptions
from .ranged import RangedFetch
from .remote import find_sidecar, head
from .whole import fetch_whole

MAX_RESTARTS = 3  # a file that keeps changing under us is an error, not a loop
START_STREAMS = 8  # speculative streams before anything is known about the path


class Download:
    def __init__(self, session: aiohttp.ClientSession, request: TransferRequest, sink: Sink,
                 handoff: Handoff | None = None) -> None:
        """``handoff``: a list job's lane, whose connections this file shares with the next (``Handoff``)."""
        self.session, self.request, self.sink, self.handoff = session, request, sink, handoff
        self.options = request.options
        self.source = redact(request.source)
        self.part = PartFile(request.dest)
        self.notes: list[str] = []
        self.fetched = 0
        self.peak_streams = 0
        self.rtt_s: float | None = None
        self.info: RemoteInfo | None = None
        self.hasher: FollowingHasher | None = None
        self.sidecar: asyncio.Task | None = None
        self.resumed = 0
        self.whole = False  # one plain GET (the server ignores ranges)
        self.unstable = False  # the server's validators change on every request: one GET, validators ignored
        self.announced_size: int | None = None  # the size the server said (None: it did not say)
        self.decoded: str | None = None  # the coding the server put on the body, undone here
        self.limiter = limiter_for(self.options)
        self.settings = read_options(HttpsOptions, self.options.backend_options)

    def note(self, message: str) -> None:
        self.notes.append(message)
        self.sink.note(message)

    async def run(self) -> Result:
        began = time.monotonic()
        restarts = 0
        try:
            while True:
                try:
                    digests = await self._attempt()
                    break
                except RemoteChanged as exc:
                    if not self.unstable and await self._validators_unstable():
                        self.part.restart()
                        continue
                    restarts += 1
                    if restarts > MAX_RESTARTS:
                        raise RemoteChanged(
                            f"The file at {self.source} kept changing on the server ({restarts} times during the "
                            "transfer). Wait until it is complete there, then try again."
                        ) from exc
                    self.note(str(exc))
                    self.part.restart()
            expected = self.options.checksum or (await self.sidecar if self.sidecar else None)
            if expected and expected.algorithm not in digests:  # an .md5 sidecar: one more pass, rare
                digests.update(await asyncio.to_thread(hash_file, self.part.part, (expected.algorithm,)))
            verified, method = self._verify(digests, expected)
            self.part.finish(self.info.size)
        except BaseException as exc:
            if self.sidecar:
                self.sidecar.cancel()
            self.part.close()
            if isinstance(exc, BadAnswer) or (isinstance(exc, WebPage) and not self.part.state.exists()):
                self.part.discard()  # what this server sent cannot become the file: nothing of it stays
            raise
        return Result(
            bytes=self.info.size, seconds=time.monotonic() - began, streams=self.peak_streams,
            sha256=digests["sha256"], verified=verified, verify_method=method, peer_host=host_of(self.info.url),
            rtt_ms=self.rtt_s * 1000 if self.rtt_s else None, restarts=restarts, bytes_fetched=self.fetched,
            resumed_from=self.resumed if restarts == 0 else 0, notes=self.notes,
        )

    async def _attempt(self) -> dict[str, str]:
        """Fetch everything not yet here, hash it, confirm the source did not change."""
        self.part.lock()
        self.info, self.resumed = None, 0
        try:
            if self.unstable:
                await self._whole()
            else:
                try:
                    await self._ranged(self.part.peek(self.source))
                except RangesIgnored:
                    await self._whole()
                    if self.info.size and not self.decoded:  # an empty file has no ranges to give
                        self.note("The server does not support byte ranges, so Ferry used one stream and cannot "
                                  "resume.")
            self.sink.stage("verifying")
            digests, _ = await asyncio.gather(asyncio.to_thread(self.hasher.finish, self.info.size), self._revalidate())
        finally:
            if self.hasher:
                self.hasher.stop()
                self.hasher = None
        return digests

    def _tuner(self) -> StreamTuner | None:
        opts = self.options
        if opts.streams != "auto":
            return None
        start = opts.initial_streams or START_STREAMS
        return StreamTuner(min(start, opts.max_streams), maximum=opts.max_streams, rtt_s=self.rtt_s or 0.05,
                           ceiling=opts.rate_cap)

    async def _ranged(self, hint: list[Interval]) -> None:
        opts = self.options
        tuner = self._tuner()
        fetch = RangedFetch(
            self.session, self.request.source, ChunkMap(None, hint), part=self.part, sink=self.sink,
            on_identity=lambda validators, url: self._identified(fetch, hint, validators, url),
            limiter=self.limiter, tuner=tuner, streams=1 if tuner else int(opts.streams),
            max_streams=opts.max_streams, rtt_s=self.rtt_s, web_page_ok=self.settings.web_page,
            stall_seconds=self.settings.stall_seconds, handoff=self.handoff,
        )
        try:
            await fetch.run()
        finally:
            self.fetched += fetch.fetched
            if fetch.validators is not None:  # speculative requests a range-less server refused do not count
                self.peak_streams = max(self.peak_streams, fetch.peak_streams)
            self.rtt_s = fetch.rtt_s or self.rtt_s
        if tuner and tuner.history:
            self.note("Streams: " + ", ".join(f"{n} → {r * 8 / 1e6:.0f} Mbit/s" for n, r in tuner.history))

    def _identified(self, fetch: RangedFetch, hint: list[Interval], validators: Validators, url: str) -> None:
        """The first answer arrived: settle the part file, start hashing and the sidecar lookup."""
        identity = Identity(self.source, validators.size, validators.etag, validators.last_modified)
        done = self.part.adopt(identity, proven_later=self.options.checksum is not None)
        if done != hint:
            fetch.chunks.reset_done(done)
        if hint and not done and not identity.validated:
            self.note(f"The server sends no ETag or Last-Modified for {self.source}, so Ferry cannot tell whether "
                      "the part an earlier run kept is the file it serves now: starting from the beginning "
                      "(give --checksum to keep it and prove the whole file at the end).")
        self.resumed = total(done)
        self.announced_size = validators.size
        if self.resumed:
            self.note(f"Resuming: {human_size(self.resumed)} of {human_size(validators.size)} was already here.")
        self._settle(RemoteInfo(url, validators.size, validators.etag, validators.last_modified, True))
        fetch.hasher = self.hasher

    def _settle(self, info: RemoteInfo) -> None:
        self.info = info
        self.hasher = FollowingHasher(self.part.part, algorithms_for(self.options.checksum))
        if self.options.checksum is None and self.sidecar is None and self.options.verify:
            self.sidecar = asyncio.ensure_future(find_sidecar(self.session, info.url))

    async def _whole(self) -> None:
        info, _ = await head(self.session, self.request.source)
        if self.hasher:
            self.hasher.stop()
        self.part.restart()
        self.announced_size = info.size
        self.part.adopt(Identity(self.source, info.size, info.etag, info.last_modified))
        self._settle(info)
        self.peak_streams = max(self.peak_streams, 1)
        self.whole = True
        # validators that change on every request cannot be compared; the one answer is one version anyway
        validators = Validators(info.size, None, None) if self.unstable else Validators.of(info)
        async with self.handoff.slots if self.handoff else contextlib.nullcontext():  # one connection
            written = await fetch_whole(self.session, info.url, validators, self.part, self.sink, self.hasher,
                                        self.limiter, web_page_ok=self.settings.web_page,
                                        stall_seconds=self.settings.stall_seconds)
        self.fetched += written
        if validators.decoded:
            self.decoded, info.size, self.announced_size = validators.decoded, written, None
            self.note(f"The server sent {self.source} {validators.decoded}-compressed although Ferry asked for it as "
                      "it is: decoded as it came, in one stream (compressed bytes cannot be fetched in ranges).")
            return
        if info.size is None:
            self.announced_size = validators.size  # the GET's Content-Length, if it had one
            info.size = written
        if self.announced_size is None:
            self.note("The server did not say how big the file is, so Ferry used one stream and took the file to "
                      "end where the server ended it.")

    async def _validators_unstable(self) -> bool:
        """After a "changed on the server": do two answers in a row already disagree? Then the server makes up
        a new ETag (or date) per request, a changed file cannot be told from an unchanged one, and the one
        way that stays correct is a single request for the whole file."""
        try:
            first, _ = await head(self.session, self.request.source)
            second, _ = await head(self.session, self.request.source)
        except TransferError:
            return False
        if _same_version(first, second) or first.size != second.size:
            return False
        self.unstable = True
        self.peak_streams = 0  # what the summary names is the request that made the file
        self.note(f"The server gives {self.source} a new ETag or date on every request, so Ferry cannot tell "
                  "ranges of one version from another: fetching it in one stream, which cannot resume.")
        return True

    async def _revalidate(self) -> None:
        """A last HEAD: a file rewritten in place during the last request is caught here."""
        info = self.info
        try:
            now, _ = await head(self.session, info.url)
        except TransferError as exc:
            self.note(f"Could not re-check the file on the server at the end ({exc}); relying on per-range checks.")
            return
        resized = self.announced_size is not None and now.size is not None and now.size != self.announced_size
        renamed = not self.unstable and not _same_version(now, info)
        if resized or renamed:
            raise RemoteChanged(f"The file at {self.source} changed on the server; starting again.")

    def _checked(self) -> str:
        """What Ferry could check without a checksum, in words: only what the server's answers allowed."""
        info = self.info
        size = "size checked" if self.announced_size is not None else (
            "the server gave no size, so the file is what it sent before closing")
        if self.unstable:
            return f"the server's ETag/date changes on every request, so the file came in one request; {size}"
        if self.decoded:
            return (f"sent {self.decoded}-compressed by the server and decoded here; the {self.decoded} stream's own "
                    "check held")
        held = "/".join(name for name, value in (("ETag", info.etag), ("Last-Modified", info.last_modified))
                        if value)
        if not held:
            return f"the server sends no ETag or Last-Modified; {size}"
        if self.announced_size is None:
            return f"{held} checked at the start and the end; {size}"
        if self.whole or self.peak_streams <= 1:
            return f"size and {held} checked at the start and the end"
        return f"size and {held} checked on every range"

    def _verify(self, digests: dict[str, str], expected: Checksum | None) -> tuple[bool, str]:
        if expected is None:
            return False, "no checksum given or published; " + self._checked()
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


def _same_version(a: RemoteInfo, b: RemoteInfo) -> bool:
    """The same ETag (weak or strong, ``same_etag``) and the same Last-Modified."""
    return same_etag(a.etag, b.etag) and a.last_modified == b.last_modified
