"""One big file over N OpenSSH connections, in ranges read or written with ``dd`` at offsets.

Like mscp, but over the system's OpenSSH (whose C data path is ~7× cheaper in CPU than
paramiko's, measured): each stream is a multiplexed master connection, each lease one
channel running a fixed ``dd`` script (``scripts.py``). ``dd`` works in blocks, so a lease
that starts inside a block asks from the block's start and drops the first bytes.

Downloads land in a ``PartFile`` like HTTPS ones (resume, hash-while-arriving, atomic
finish). Uploads go into ``NAME.part`` on the server; each lease's bytes are read back
and hashed by the server right after they are written, and compared with the same
bytes' hash here, so every range is verified on both ends before it counts as done.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import RemoteChanged, TransferError, Transient
from ..core.made import Made, open_local
from ..destination import PartFile, os_error
from ..host.netprobe import connect_time
from ..host.pipes import PipeSource, StreamSource
from ..host.procs import reap
from ..streams.chunks import ChunkMap, Lease
from ..streams.parallel import ParallelTransfer
from ..streams.ratelimit import piece
from . import scripts, squeeze
from .openssh import Master, OpenSsh, ssh_error

BLOCK = 64 * 1024
READ_SIZE = 1 << 20


def _dd_noise(line: str) -> bool:
    """dd's statistics lines, which are not errors."""
    return "records in" in line or "records out" in line or " copied" in line


async def _finish(proc: asyncio.subprocess.Process, ssh: OpenSsh, what: str) -> None:
    """Wait for a channel's process; its stderr becomes the error when it failed."""
    err = await proc.stderr.read()
    status = await proc.wait()
    if status != 0:
        lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if not _dd_noise(ln)]
        raise ssh_error("\n".join(lines) or f"{what} ended with status {status}", ssh.target)


class _SshStreams(ParallelTransfer):
    def __init__(self, ssh: OpenSsh, chunks: ChunkMap, **kw) -> None:
        super().__init__(chunks, **kw)
        self.ssh = ssh

    async def open_stream(self) -> Master:
        return await self.ssh.open_master()

    async def close_stream(self, stream: Master) -> None:
        if stream is not None and not self.ssh.owns(stream):
            await stream.stop()

    async def path_rtt(self) -> float | None:
        return await connect_time(self.ssh.target.host, self.ssh.target.port)

    def classify(self, exc: BaseException) -> TransferError:
        if isinstance(exc, TransferError):
            return exc
        return Transient(f"An SSH stream to {self.ssh.target.host} failed ({exc}); Ferry will retry.")


@dataclass
class _Ask:
    """A range request as sent: whole ``dd`` blocks from ``block``, the first ``drop`` bytes not wanted."""

    lease: Lease
    block: int
    drop: int
    count: int
    packed: bool = False  # asked as one zstd frame (``squeeze.py``)
    sent: bool = False
    reclaimed: bool = False  # an idle stream took the lease over before this stream began it

    @classmethod
    def of(cls, lease: Lease, packed: bool = False) -> _Ask:
        block = lease.cursor // BLOCK
        return cls(lease, block, lease.cursor - block * BLOCK, -(-(lease.end - block * BLOCK) // BLOCK), packed)

    def line(self) -> bytes:
        return f"{self.block} {self.count}{' Z' if self.packed else ''}\n".encode()


class _Reader:
    """A download stream: a master connection and one long-lived channel running ``READ_RANGES``.

    The channel's output is a pipe Ferry reads itself (``PipeSource``), so the payload is
    spliced into the part file without passing through Python. The next range is asked for
    while the current one is still arriving (``ahead``): the shell starts it the moment the
    current one ends, so a stream never idles for the round trip between two ranges (~5 % of
    its time with leases of twenty round trips).
    """

    def __init__(self, master: Master) -> None:
        self.master = master
        self.proc: asyncio.subprocess.Process | None = None
        self.out: PipeSource | StreamSource | None = None
        self.ahead: _Ask | None = None
        self.stale = False  # the channel will send a range that is no longer this stream's

    async def ensure(self, remote_path: str) -> asyncio.subprocess.Process:
        if self.proc is None or self.proc.returncode is not None:
            await self.drop()
            if self.ahead is not None:
                self.ahead.sent = False  # asked on a channel that is gone
            early = self.master.take_early()
            if early is not None:  # started at login, path already sent
                self.proc, self.out = early[0], self.master.output_of(early)
                return self.proc
            self.proc, self.out = await self.master.reader(scripts.command(scripts.READ_RANGES, BLOCK))
            self.proc.stdin.write(scripts.encode_path(remote_path))
        return self.proc

    async def drop(self) -> None:
        """Abandon the channel (a cut lease, or a broken frame, or the end); the master stays."""
        if self.proc is not None:
            self.master.ssh.discard(self.proc)
        if self.out is not None:
            self.out.close()
        self.proc, self.out = None, None


class SshDownload(_SshStreams):
    asks_ahead = True

    def __init__(self, ssh: OpenSsh, remote_path: str, chunks: ChunkMap, part: PartFile, **kw) -> None:
        super().__init__(ssh, chunks, record=part, **kw)
        self.remote_path, self.part = remote_path, part
        self.packed = False  # the ranges asked from now on come as zstd frames (``files._compress`` chose)
        self.on_wire = 0  # bytes that crossed the network (compressed ones, when packed)
        self._readers: set[_Reader] = set()

    async def open_stream(self) -> _Reader:
        reader = _Reader(await self.ssh.open_master())
        self._readers.add(reader)
        return reader

    def take_lease(self, stream: _Reader, number: int) -> Lease | None:
        ahead = stream.ahead
        if ahead is not None and ahead.reclaimed:
            stream.stale = ahead.sent  # its bytes are on their way down this channel: drop it first
        elif ahead is not None and self.chunks.is_active(ahead.lease) and not ahead.lease.finished:
            return ahead.lease
        stream.ahead = None
        return self._next_lease(number)

    def reclaim(self) -> Lease | None:
        """The largest range a stream asked for ahead and has not begun: at the end of a file a stream that
        lost packets is still on its current range while the others are idle, and its next one would wait
        for it (traced: 0.3-0.4 s at 50 ms). Its owner drops the channel that would send it."""
        waiting = [r.ahead for r in self._readers if r.ahead is not None and not r.ahead.reclaimed
                   and self.chunks.is_active(r.ahead.lease) and r.ahead.lease.cursor == r.ahead.lease.start]
        if not waiting:
            return None
        ask = max(waiting, key=lambda a: a.lease.remaining)
        ask.reclaimed = True
        return ask.lease

    async def close_stream(self, stream: _Reader) -> None:
        if stream is not None:
            self._readers.discard(stream)
            if stream.ahead is not None and not stream.ahead.reclaimed:
                self._drop(stream.ahead.lease, finished=False)  # asked for, never read: back to the pool
                stream.ahead = None
            await stream.drop()
            if not self.ssh.owns(stream.master):
                await stream.master.stop()

    async def move(self, lease: Lease, stream: _Reader) -> None:
        if stream.stale:
            stream.stale = False
            await stream.drop()
        proc = await stream.ensure(self.remote_path)
        ask = stream.ahead if stream.ahead is not None and stream.ahead.lease is lease and stream.ahead.sent \
            else None
        stream.ahead = None
        try:
            if ask is None:
                ask = _Ask.of(lease, self.packed)
                proc.stdin.write(ask.line())
                await proc.stdin.drain()
            length = await self._header(stream)
            expected = min(ask.count * BLOCK, self.chunks.size - ask.block * BLOCK)
            if length != expected:
                raise RemoteChanged(f"{self.remote_path} changed size on the server; starting again.")
            nxt = self.lease_ahead(lease)
            if nxt is not None:
                stream.ahead = _Ask.of(nxt, self.packed)
                proc.stdin.write(stream.ahead.line())
                stream.ahead.sent = True
            if ask.packed:
                if length:
                    await self._unpack(stream, lease, ask, length)
                if await stream.out.readline() != b"FERRY-END\n":
                    raise await self._broken(stream, "lost its framing")
                return
            self.on_wire += length
            drop = ask.drop
            if drop and await stream.out.discard(drop) != drop:  # the lease starts inside a dd block
                raise await self._broken(stream, "stopped sending")
            left = length - drop
            while lease.cursor < lease.end:
                moved = await self._into_part(stream, lease, left)
                if not moved:
                    raise await self._broken(stream, "stopped sending")
                left -= moved
                self.account(lease, moved)
                if self.limiter:
                    await self.limiter.consume(moved)
            if left:
                await stream.drop()  # a cut lease: the rest belongs to a thief
                return
            if await stream.out.readline() != b"FERRY-END\n":
                raise await self._broken(stream, "lost its framing")
        except (asyncio.CancelledError, Exception):
            if stream.proc is not None and (lease.cursor < lease.end):
                await stream.drop()
            raise

    async def _unpack(self, stream: _Reader, lease: Lease, ask: _Ask, length: int) -> None:
        """One range's zstd frame into the part file, counted as done only once the frame's checksum held: a
        damaged block can unpack to wrong bytes before the check at the frame's end, so those bytes stay
        unrecorded and the range is fetched again. A lease cut meanwhile (stolen) still reads its frame to the
        end, writing only what is still its own."""
        frame = squeeze.Unpacker(self.remote_path)
        at = ask.block * BLOCK  # the file offset of the next byte out of the frame
        end = at + length
        while not frame.done:
            data = await stream.out.read_some()
            if not data:
                raise await self._broken(stream, "stopped sending")
            self.on_wire += len(data)
            plain = await frame.unpack(data)
            if at + len(plain) > end:
                raise Transient(f"A compressed range of {self.remote_path} was longer than asked; Ferry fetches it "
                                "again.")
            first, last = max(lease.cursor, at), min(lease.end, at + len(plain))
            if last > first:
                self.part.write(memoryview(plain)[first - at:last - at], first)
                self.wire(lease, last - first)
            if self.limiter:
                await self.limiter.consume(len(data))
            at += len(plain)
        self.on_wire -= len(frame.rest)  # the stream's next bytes, counted when they are read again
        stream.out.unread(frame.rest)
        if at != end:
            raise Transient(f"A compressed range of {self.remote_path} ended short; Ferry fetches it again.")
        self.settle(lease, lease.end - lease.cursor)

    async def _into_part(self, stream: _Reader, lease: Lease, left: int) -> int:
        try:
            return await stream.out.into_file(self.part.fd, lease.cursor, min(left, lease.end - lease.cursor))
        except OSError as exc:
            raise os_error(exc, self.part.part, "write to") from exc

    async def _header(self, stream: _Reader) -> int:
        line = await stream.out.readline()
        if not line.startswith(b"FERRY ") or not line[6:].strip().isdigit():
            raise await self._broken(stream, "did not answer")
        return int(line[6:])

    async def _broken(self, stream: _Reader, what: str) -> TransferError:
        proc = stream.proc
        err = b""
        if proc is not None:
            err = await reap(proc)
        stream.proc = None
        text = "\n".join(ln for ln in err.decode("utf-8", "replace").splitlines() if not _dd_noise(ln))
        if text:
            return ssh_error(text, self.ssh.target)
        return Transient(f"The SSH stream reading {self.remote_path} {what}; Ferry will retry that range.")


class SshUpload(_SshStreams):
    """Local file → server ``remote_part`` at the same offsets; each range hashed on both ends.

    Each lease is its own channel (its end is the end of stdin: no exact-length reads,
    which POSIX tools cannot do on a pipe), so leases are large to pay for the shell start.
    """

    lease_floor = 32 * 1024 * 1024

    def __init__(self, ssh: OpenSsh, local: Path | Made, remote_part: str, chunks: ChunkMap, **kw) -> None:
        super().__init__(ssh, chunks, steal=False, **kw)
        self.local_path, self.remote_part = local, remote_part
        self.packed = False  # the ranges begun from now on go as zstd frames, unpacked by the server's zstd
        self.on_wire = 0
        self.source = open_local(local)
        self.ranges_verified = 0
        self.ranges_unverified = 0

    def close(self) -> None:
        self.source.close()

    async def move(self, lease: Lease, stream: Master) -> None:
        block = lease.cursor // BLOCK
        start = block * BLOCK
        length = lease.end - start
        count = -(-length // BLOCK)
        script = scripts.WRITE_RANGE_Z if self.packed else scripts.WRITE_RANGE
        proc = await stream.channel(scripts.command(script, BLOCK, block, count))
        local = hashlib.sha256()
        packer = squeeze.Packer(lease.end - start) if self.packed else None
        try:
            proc.stdin.write(scripts.encode_path(self.remote_part))
            pos = start
            while pos < lease.end:
                data = await self.source.read_at(min(piece(self.limiter, READ_SIZE), lease.end - pos), pos)
                if not data:
                    raise TransferError(f"{self.local_path} became shorter while Ferry was sending it.")
                local.update(data)
                out = await packer.pack(data) if packer else data
                self.on_wire += len(out)
                proc.stdin.write(out)
                await proc.stdin.drain()
                pos += len(data)
                self.wire(lease, len(data))
                if self.limiter:
                    await self.limiter.consume(len(out))
            if packer:
                tail = packer.end()
                self.on_wire += len(tail)
                proc.stdin.write(tail)
            proc.stdin.close()
            answer = await proc.stdout.read()
            await _finish(proc, self.ssh, "writing the file")
        except BaseException:
            await reap(proc)
            raise
        remote = answer.split()[0].decode("ascii", "replace") if answer.split() else ""
        if remote == "FERRY-BADFRAME":
            raise Transient(f"The range {start}-{lease.end} of {self.local_path} arrived damaged on the server "
                            "(zstd's frame check failed); Ferry sends it again.")
        whole_blocks = lease.end - start == count * BLOCK or lease.end == self.chunks.size
        if len(remote) == 64 and whole_blocks:  # the read-back covered exactly what was sent
            if remote != local.hexdigest():
                raise Transient(f"The range {start}-{lease.end} of {self.local_path} arrived damaged on the server "
                                "(its SHA-256 differs); Ferry sends it again.")
            self.ranges_verified += 1
        else:
            self.ranges_unverified += 1
        self.chunks.record(lease, lease.end - lease.cursor)
