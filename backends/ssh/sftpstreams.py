"""One big file from or to an SFTP-only account over N OpenSSH connections, each an SFTP session at offsets.

The same ``ParallelTransfer``/``ChunkMap``/``StreamTuner`` as the shell path (``ranged.py``): each stream is a
multiplexed master connection with one channel to the account's SFTP subsystem (``sftpwire.py``), and a lease is
a run of pipelined 64 KiB ``READ``s, ``IN_FLIGHT`` of them outstanding (OpenSSH's own client keeps 64 of 32 KiB),
so a stream never waits a round trip between requests. Answers are accounted at the lease's cursor: one that does
not start there (sent before a steal cut the lease, or after a short read) is dropped, and asking resumes from
the cursor once the answers in flight are in. An upload's lease counts as done only when the server has
confirmed every ``WRITE`` in it.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import RemoteChanged, TransferError, Transient
from ..core.made import LocalReader, Made, open_local
from ..destination import PartFile
from ..host.netprobe import connect_time
from ..streams.chunks import ChunkMap, Lease
from ..streams.parallel import ParallelTransfer
from .control import sftp_error
from .openssh import Master, OpenSsh
from .sftpwire import SftpChannel

REQUEST = 64 * 1024  # every SFTP server takes reads this long (OpenSSH's sftp-server before 8.x: at most this)
IN_FLIGHT = 64


@dataclass
class _Session:
    master: Master
    channel: SftpChannel
    handle: bytes
    source: LocalReader | None = None  # an upload stream's own handle on the local file


class SftpDownload(ParallelTransfer):
    def __init__(self, ssh: OpenSsh, remote: str, chunks: ChunkMap, part: PartFile, **kw) -> None:
        super().__init__(chunks, record=part, **kw)
        self.ssh, self.remote, self.part = ssh, remote, part

    async def open_stream(self) -> _Session:
        return await self._open_session(lambda channel: channel.open_read(self.remote))

    async def _open_session(self, open_handle) -> _Session:
        """A logged-in connection, an SFTP session on it, and ``open_handle``'s handle on the remote file."""
        master = await self.ssh.open_master()
        try:
            channel = await self.sftp_channel(master)
            return _Session(master, channel, await open_handle(channel))
        except OSError as exc:  # a status (no such file, no permission) is a sentence; a closed channel a retry
            await self.close_master(master)
            raise self.classify(exc) from None
        except BaseException:
            await self.close_master(master)
            raise

    async def sftp_channel(self, master: Master) -> SftpChannel:
        """A session of the account's SFTP subsystem on ``master``. A connection that logged in for a download
        before the account was known to run no commands began a ``dd`` reader there: ended unused."""
        early = master.end_early()
        if early is not None:
            self.ssh.discard(early)
        channel = SftpChannel(await master.channel("sftp", subsystem=True))
        await channel.start()
        return channel

    async def close_master(self, master: Master) -> None:
        if not self.ssh.owns(master):
            await master.stop()

    async def close_stream(self, stream: _Session) -> None:
        if stream is not None:
            self.ssh.discard(stream.channel.proc)
            await self.close_master(stream.master)

    async def path_rtt(self) -> float | None:
        return await connect_time(self.ssh.target.host, self.ssh.target.port)

    def classify(self, exc: BaseException) -> TransferError:
        if isinstance(exc, TransferError):
            return exc
        if isinstance(exc, OSError) and getattr(exc, "errno", None):  # "There is no file …", "could not read …"
            return sftp_error(exc, "file" if exc.errno == errno.ENOENT else "read", self.remote)
        return Transient(f"An SFTP stream to {self.ssh.target.host} failed ({exc}); Ferry will retry.")

    async def move(self, lease: Lease, stream: _Session) -> None:
        channel, handle = stream.channel, stream.handle
        offset = lease.cursor  # the next offset to ask for
        gap = False  # a short answer left a hole: ask nothing more until the answers in flight are in
        while lease.cursor < lease.end:
            if not gap:
                while offset < lease.end and len(channel.asked) < IN_FLIGHT:
                    length = min(REQUEST, lease.end - offset)
                    channel.ask_read(handle, offset, length)
                    offset += length
                await channel.flush()
            if not channel.asked:
                offset, gap = lease.cursor, False
                continue
            at, asked, data = await channel.read_answer()
            if data is None:
                if lease.cursor <= at < lease.end:
                    raise RemoteChanged(f"{self.remote} became shorter on the server during the transfer; "
                                        "starting again.")
                continue
            if at != lease.cursor:
                self.wire(lease, len(data))  # asked before a steal cut the lease or behind a hole: not used
                continue
            take = min(len(data), lease.end - lease.cursor)
            self.part.write(data if take == len(data) else memoryview(data)[:take], lease.cursor)
            self.account(lease, len(data))
            if len(data) < asked and lease.cursor < min(lease.end, offset):
                gap = True
            if self.limiter:
                await self.limiter.consume(len(data))


class SftpUpload(SftpDownload):
    """The same streams writing ``local`` into ``remote`` (the upload's part, already made at its full size)."""

    def __init__(self, ssh: OpenSsh, local: Path | Made, remote: str, chunks: ChunkMap, record, **kw) -> None:
        ParallelTransfer.__init__(self, chunks, record=record, **kw)
        self.ssh, self.local, self.remote = ssh, local, remote

    async def open_stream(self) -> _Session:
        stream = await self._open_session(lambda channel: channel.open_write(self.remote))
        stream.source = open_local(self.local)  # closed with the stream
        return stream

    async def close_stream(self, stream: _Session) -> None:
        if stream is not None and stream.source is not None:
            stream.source.close()
        await super().close_stream(stream)

    def classify(self, exc: BaseException) -> TransferError:
        if isinstance(exc, OSError) and getattr(exc, "errno", None) and not isinstance(exc, TransferError):
            return sftp_error(exc, "write", self.remote)
        return super().classify(exc)

    async def move(self, lease: Lease, stream: _Session) -> None:
        channel, handle, source = stream.channel, stream.handle, stream.source
        offset = lease.cursor
        while lease.cursor < lease.end:
            while offset < lease.end and len(channel.asked) < IN_FLIGHT:
                data = await source.read_at(min(REQUEST, lease.end - offset), offset)
                if not data:
                    raise RemoteChanged(f"{self.local} became shorter during the upload; starting again.")
                channel.ask_write(handle, offset, data)
                offset += len(data)
                if self.limiter:
                    await self.limiter.consume(len(data))
            await channel.flush()
            at, length = await channel.write_answer()
            if at == lease.cursor:
                self.account(lease, length)
            elif not channel.asked and lease.cursor < lease.end:
                offset = lease.cursor  # written before a steal moved this lease: continue from its cursor
