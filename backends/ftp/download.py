"""One file from an FTP server over N connections: each lease is ``REST offset`` + ``RETR``, its data
connection closed at the end of the range, driven by the same ParallelTransfer/ChunkMap/StreamTuner as
HTTPS and SSH. A server that takes no more connections (421) lowers the streams instead of failing the job.

Resume after a kill is trusted only while ``SIZE`` and ``MDTM`` (or MLST's size and modify facts) still
match; the SHA-256 is computed while the file arrives; a server checksum (``HASH``, ``XSHA256``, ``XMD5``)
or a published ``NAME.sha256``/``NAME.md5`` is compared when there is one.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ..core.base import Checksum, Result, Sink, TransferRequest
from ..core.checksums import SIDECARS, parse_sidecar
from ..core.errors import Corrupt, RemoteChanged, TransferError
from ..core.words import counted, human_size
from ..destination import Identity, PartFile, oversize, room_for
from ..host.netprobe import connect_time
from ..streams.chunks import ChunkMap, Lease
from ..streams.floor import RateFloor
from ..streams.hashing import FollowingHasher, algorithms_for, hash_file
from ..streams.parallel import ParallelTransfer
from ..streams.ratelimit import limiter_for, piece
from ..streams.tuner import StreamTuner, initial_streams
from .address import FtpAddress
from .control import Entry, FtpControl
from .faults import ServerFull, ftp_error

MiB = 1024 * 1024
START_STREAMS = 4
MIN_BYTES_PER_STREAM = 4 * MiB  # a stream's range must outlast its data connection's slow start
#: an FTP range costs its stream a new data connection: EPSV, the TCP handshake with REST and RETR (three round
#: trips) and TCP's slow start from nothing, so a range lasts about this many round trips (HTTP's: 20)
LEASE_RTTS = 100
FIRST_LEASE_CAP = 32 * MiB
RANGE_RTTS = 5  # a range's idle round trips: EPSV, the data connection, REST, RETR and its first byte
STEAL_RTTS = 2 * RANGE_RTTS  # a steal must save more than the thief's new data connection costs
MAX_LEASE = 512 * MiB
SIDECAR_LIMIT = 64 * 1024
MAX_RESTARTS = 3
#: how long the end of a file's data connection is waited for after its last byte
END_WAIT = 5.0


class FtpStreams(ParallelTransfer):
    """Streams reading ranges of one file, each on its own logged-in control connection."""

    lease_floor = MIN_BYTES_PER_STREAM
    steal_floor = MiB

    def __init__(self, address: FtpAddress, connect, chunks: ChunkMap, *, part: PartFile, **kw) -> None:
        super().__init__(chunks, record=part, **kw)
        self.address, self.connect, self.part = address, connect, part
        self.lowered_to: int | None = None  # the server's connection limit, once it said one (421)

    async def open_stream(self) -> FtpControl:
        try:
            return await self.connect()
        except ServerFull:
            for _ in range(50):  # the streams log in together: give the others a moment to be the ones it took
                if self.peak_streams or self.chunks.complete:
                    break
                await asyncio.sleep(0.1)
            # streams that got in and have already finished (a small file) count as what it took
            took = max(self._connected, self.peak_streams)
            if took == 0:
                raise
            self.lowered_to = took  # the server's limit: stay at what it took
            self.target = min(self.target, took)
            self.max_streams = took
            if self.tuner:
                self.tuner.maximum = self.tuner.streams = took
                self.tuner.settled = True
            raise StreamNotNeeded(f"The FTP server at {self.address.where} takes {took} connections from here; "
                                  "this stream bows out.") from None

    async def close_stream(self, stream: FtpControl) -> None:
        if stream is not None:
            await stream.close()

    async def path_rtt(self) -> float | None:
        return await connect_time(self.address.host, self.address.port)

    def _lease_size(self, number: int | None = None) -> int:
        """An equal share of what is left for each stream without a range, capped at ``LEASE_RTTS`` round trips
        of a stream's rate once the rate is known (``FIRST_LEASE_CAP`` before). A range costs its stream a new
        data connection (``RANGE_RTTS`` idle round trips, then slow start from nothing), so ranges are as long as
        the SHA-256 allows - it follows the oldest unfinished range, and what it has not read when the last byte
        arrives is read after - and the end is balanced by steals instead of ever smaller ranges: guided
        self-scheduling's shrinking shares left 64 streams at 80 ms reading 4 MiB ranges for the last third of
        a file, each paying half a second of connection set-up (the rate fell from 990 to 820 Mbit/s)."""
        share = int(self.chunks.pending_bytes / max(1, self.target - len(self.chunks.active)))
        rate = self._stream_rate()
        ramping = self.first_byte_at is None or time.monotonic() - self.first_byte_at < 1.0 or rate <= 0
        cap = FIRST_LEASE_CAP if ramping else int(rate * max(self.rtt_s or 0.0, 0.01) * LEASE_RTTS)
        return int(min(MAX_LEASE, max(self.lease_floor, min(share, cap))))

    def _worth_stealing(self, lease: Lease) -> bool:
        return self._seconds_left(lease) >= STEAL_RTTS * max(self.rtt_s or 0.0, 0.005)

    def _victim_share(self, lease: Lease) -> float:
        """Split so that both halves end together, the thief starting ``RANGE_RTTS`` round trips late: the victim
        keeps ``k`` of the ``R`` bytes left where k/v = idle + (R - k)/t."""
        victim, left = self._lease_rate(lease), max(1, lease.remaining)
        thief = max(self._stream_rate(), 1.0)
        idle = RANGE_RTTS * (self.rtt_s or 0.0)
        kept = (idle + left / thief) / (1 / victim + 1 / thief)
        return min(0.9, max(0.0, kept / left))

    def classify(self, exc: BaseException) -> TransferError:
        if isinstance(exc, StreamNotNeeded):
            return exc
        return ftp_error(exc, self.address, step="read", path=self.address.path, started=True)

    async def move(self, lease: Lease, control: FtpControl) -> None:
        if lease.cursor and not control.can_resume:
            raise TransferError(f"The FTP server at {self.address.where} cannot start a file in the middle (it "
                                "does not announce REST STREAM), so only one stream from the start can be used.")
        if control.broken:
            await control.reopen()
        try:
            await self._read(lease, control)
        except BaseException:
            control.broken = True
            raise

    async def _read(self, lease: Lease, control: FtpControl) -> None:
        """One range over its own data connection. At the file's end, a server that goes on sending past the
        size it announced is the server's error (``BadAnswer``), not bytes to keep or to wait out; a range that
        trickles ends as a stall (``RateFloor``)."""
        stream = await control.read_from(self.address.path, lease.cursor)
        complete = False
        floor = RateFloor(control.stall_seconds, self.address.shown)
        try:
            while lease.cursor < lease.end:
                data = await stream.read(piece(self.limiter, 1 << 20))
                if not data:
                    complete = True
                    break
                floor.feed(len(data))
                take = min(len(data), lease.end - lease.cursor)
                if take < len(data) and lease.end >= self.chunks.size:
                    raise oversize(self.address.shown, self.chunks.size, self.part.dest.name)
                self.part.write(data if take == len(data) else memoryview(data)[:take], lease.cursor)
                self.account(lease, len(data))
                if self.limiter:
                    await self.limiter.consume(len(data))
            if not complete and lease.cursor >= self.chunks.size:
                complete = await self._ends_here(stream)
        finally:
            try:
                await control.end_read(stream, complete=complete)
            except (Exception, asyncio.TimeoutError) as exc:
                raise ftp_error(exc, self.address, step="read", started=True) from exc
        if lease.cursor < lease.end:
            raise ftp_error(ConnectionError("the data connection closed before the range was complete"),
                            self.address, step="read", started=True)


    async def _ends_here(self, stream) -> bool:
        """After the file's last byte: its end (True), more bytes (the server's error), or nothing said within a
        few seconds (False: the data connection is closed early, the bytes are all here)."""
        try:
            more = await asyncio.wait_for(stream.read(1), END_WAIT)
        except asyncio.TimeoutError:
            return False
        if more:
            raise oversize(self.address.shown, self.chunks.size, self.part.dest.name)
        return True


class StreamNotNeeded(TransferError):
    """An extra stream the server has no room for: it bows out, the others go on (even when, at that moment,
    none is connected: those that got in may be between ranges)."""

    bows_out = True


async def download_file(address: FtpAddress, entry: Entry, request: TransferRequest, sink: Sink, connect,
                        lead: FtpControl) -> Result:
    began = time.monotonic()
    opts = request.options
    source = address.shown
    part = PartFile(request.dest)
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        sink.note(text)

    if entry.size is None:
        raise TransferError(f"The FTP server at {address.where} does not tell the size of {source} (no SIZE or "
                            "MLST), so Ferry cannot check the copy. Ask its owner, or fetch it another way.")
    restarts, fetched, peak, resumed = 0, 0, 0, 0
    part.lock()
    try:
        while True:
            identity = Identity(source, entry.size, None, entry.modified)
            done = part.adopt(identity, proven_later=opts.checksum is not None)
            resumed = sum(e - s for s, e in done)
            room_for(Path(request.dest), entry.size, resumed)
            if resumed:
                note(f"Resuming: {human_size(resumed)} of {human_size(entry.size)} was already here.")
            elif not entry.modified:
                note(f"The FTP server gives no modification time for {source}, so an interrupted copy starts over.")
            run, tuner, expected, digests, now = await _one_pass(address, entry, done, part, request, sink, connect,
                                                                 lead)
            fetched += run.moved
            peak = max(peak, run.peak_streams)
            if run.lowered_to:
                note(f"The FTP server took at most {run.lowered_to} connections at once, so Ferry used "
                     f"{counted(run.lowered_to, 'stream')}.")
            if (now.size, now.modified) == (entry.size, entry.modified):
                break
            restarts += 1
            if restarts > MAX_RESTARTS:
                raise RemoteChanged(f"The file at {source} kept changing on the server. Wait until it is complete "
                                    "there, then try again.")
            note(f"The file at {source} changed on the server during the copy; starting again.")
            entry = now
            part.restart()
        verified, method = await _verify(digests, expected, part)
        part.finish(entry.size)
    except BaseException:
        part.close()
        raise
    if tuner and tuner.history:
        notes.append("Streams: " + ", ".join(f"{n} → {r * 8 / 1e6:.0f} Mbit/s" for n, r in tuner.history))
    return Result(bytes=entry.size, seconds=time.monotonic() - began, streams=peak, sha256=digests["sha256"],
                  verified=verified, verify_method=method, peer_host=address.host, restarts=restarts,
                  rtt_ms=lead.feat_seconds * 1000 if lead.feat_seconds else None, bytes_fetched=fetched,
                  resumed_from=resumed if restarts == 0 else 0, notes=notes)


async def _one_pass(address: FtpAddress, entry: Entry, done: list, part: PartFile, request: TransferRequest,
                    sink: Sink, connect, lead: FtpControl) -> tuple:
    """One pass over the file by the ranged streams (``auto``: from what the path taught before, else a guess
    from its round trip), hashed as it lands, while the lead connection asks for the server's checksum and then
    whether the file changed. Returns (the streams' run, the tuner, the published checksum, the digests, the
    file's entry now)."""
    opts = request.options
    hasher = FollowingHasher(part.part, algorithms_for(opts.checksum))
    tuner = None
    rtt = lead.feat_seconds
    if opts.streams == "auto" and lead.can_resume:
        # what this path taught before, else a guess from its round trip (64 streams at 80 ms)
        guess = initial_streams(rtt, entry.size, opts.max_streams, MIN_BYTES_PER_STREAM) if rtt else None
        start = min(opts.initial_streams or guess or START_STREAMS, opts.max_streams)
        tuner = StreamTuner(start, maximum=opts.max_streams, rtt_s=rtt or 0.05, ceiling=opts.rate_cap)
    streams = 1 if not lead.can_resume else (tuner.streams if tuner else int(opts.streams))
    run = FtpStreams(address, connect, ChunkMap(entry.size, done), part=part, sink=sink,
                     limiter=limiter_for(opts), tuner=tuner, streams=streams, max_streams=opts.max_streams,
                     rtt_s=rtt)
    run.hasher = hasher
    run.stall_seconds, run.stall_what = lead.stall_seconds, f"The FTP server at {address.where}"
    # the lead connection is idle while the streams work: it asks for the server's checksum meanwhile
    looking = asyncio.create_task(_published(address, lead, opts.checksum, opts.verify))
    try:
        await run.run()
        expected = await looking
        # the SHA-256 reads what it has not followed yet while the server is asked whether the file changed
        digests, now = await asyncio.gather(asyncio.to_thread(hasher.finish, entry.size),
                                            _look_again(lead, address.path))
    finally:
        looking.cancel()
        await asyncio.gather(looking, return_exceptions=True)
        hasher.stop()
    return run, tuner, expected, digests, now


async def _look_again(lead: FtpControl, path: str) -> Entry:
    """The file as the server describes it now. The lead connection sat idle while the streams worked: a server
    closes an idle login (vsftpd after 300 s, a fraction of a 300 GB copy), so a failed look logs in again."""
    try:
        return await lead.entry(path)
    except TransferError:
        await lead.reopen()
        return await lead.entry(path)


async def _published(address: FtpAddress, lead: FtpControl, given: Checksum | None,
                     compare: bool) -> Checksum | None:
    """The checksum to compare with: the one given, else the server's own, else a published sidecar."""
    if given is not None or not compare:
        return given
    return await server_checksum(lead, address.path) or await sidecar(lead, address)


async def _verify(digests: dict[str, str], expected: Checksum | None, part: PartFile) -> tuple[bool, str]:
    if expected is None:
        return False, "no checksum given, offered or published; size and modification time checked"
    actual = digests.get(expected.algorithm)
    if actual is None:
        actual = (await asyncio.to_thread(hash_file, part.part, (expected.algorithm,)))[expected.algorithm]
    who = "you gave" if expected.source == "given" else f"from {expected.source}"
    if actual != expected.hexdigest.lower():
        part.state.unlink(missing_ok=True)
        raise Corrupt(f"The downloaded data does not match the {expected.algorithm} checksum {who} (expected "
                      f"{expected.hexdigest[:16]}…, got {actual[:16]}…). It was kept as {part.part}; run the "
                      "transfer again, and if it fails again ask the server's owner whether the checksum is current.")
    return True, f"{expected.algorithm} {who} matched"


async def server_checksum(control: FtpControl, path: str) -> Checksum | None:
    """The server's own checksum, by the command it announced (``HASH``, ``XSHA256``, ``XMD5``)."""
    client, features = control.client, control.features
    try:
        if "HASH" in features:
            for algorithm, name in (("sha256", "SHA-256"), ("md5", "MD5")):
                code, _ = await client.command(f"OPTS HASH {name}", ("2xx", "5xx"))
                if str(code).startswith("2"):
                    code, lines = await client.command(f"HASH {path}", ("213", "5xx"))
                    if str(code) == "213":
                        return Checksum(algorithm, lines[-1].split()[2].lower(), source="the server's HASH")
        for command, algorithm in (("XSHA256", "sha256"), ("XMD5", "md5")):
            if command in features:
                code, lines = await client.command(f"{command} {path}", ("2xx", "5xx"))
                if str(code).startswith("2"):
                    return Checksum(algorithm, lines[-1].split()[-1].lower(), source=f"the server's {command}")
    except (Exception, asyncio.TimeoutError):
        return None
    return None


async def sidecar(control: FtpControl, address: FtpAddress) -> Checksum | None:
    """``NAME.sha256`` (or ``.md5``) published next to the file, read over the same connection."""
    for algorithm, suffix in SIDECARS:
        try:
            text = await read_text(control, address.path + suffix)
        except (Exception, asyncio.TimeoutError):
            continue  # none published under that name (or it could not be read): the next kind
        digest = parse_sidecar(text, algorithm, address.name)
        if digest:
            return Checksum(algorithm, digest, source=f"the server's {address.name}{suffix}")
    return None


async def read_text(control: FtpControl, path: str) -> str:
    """A small text file (a published checksum), its first ``SIDECAR_LIMIT`` bytes, over ``control``."""
    stream = await control.read_from(path, 0)
    text = b""
    while len(text) < SIDECAR_LIMIT and (chunk := await stream.read(65536)):
        text += chunk
    await control.end_read(stream, complete=len(text) < SIDECAR_LIMIT)
    return text.decode("utf-8", "replace")
