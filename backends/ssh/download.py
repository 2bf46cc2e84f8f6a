"""One file from an SSH server: ranged parallel streams (or one zstd-compressed stream), resume, and the
server's own SHA-256 compared with the one made here."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ..core.base import NOT_COMPARED, Arriving, Sink, TransferOptions
from ..core.errors import Corrupt, RemoteChanged
from ..core.words import human_size
from ..destination import Identity, PartFile
from ..host import portable
from ..streams.chunks import ChunkMap, total
from ..streams.folder import FileOutcome
from ..streams.hashing import FollowingHasher
from ..streams.ratelimit import limiter_for
from .address import Entry
from .compression import compress_file, deciding
from .ranged import SshDownload
from .session import SshSession


async def download_file(session: SshSession, entry: Entry, remote: str, dest: Path, options: TransferOptions,
                        sink: Sink | None, source_id: str, arriving: Arriving | None = None) -> FileOutcome:
    """``remote`` (absolute path, described by ``entry``) → local ``dest``, verified, atomically named.

    ``arriving``: ``remote`` is a relay's spool still being filled by the agent; only ready ranges are read, and
    the result is compared with the original's SHA-256 as the agent's first hop found it."""
    size, mode, mtime = (arriving.size, arriving.mode, arriving.mtime) if arriving else \
        (entry.size, entry.mode, entry.mtime)
    remote_sum = asyncio.ensure_future(session.sha256(remote)) \
        if size > 0 and options.verify and not arriving and await session.can_exec() else None
    part = PartFile(dest)
    try:
        done = part.open(Identity(source_id, size, None, str(mtime)))
        resumed = total(done)
        if resumed and sink:
            sink.note(f"Resuming {dest.name}: {human_size(resumed)} of {human_size(size)} was already here.")
        hasher = FollowingHasher(part.part)
        try:
            moved, peak, on_wire = await _receive(session, remote, part, hasher, sink, options, (size, done),
                                                  arriving)
            if sink:
                sink.stage("verifying")
            # the last bytes are hashed while the server says whether the file changed meanwhile (a round trip)
            digests, now = await asyncio.gather(asyncio.to_thread(hasher.finish, size),
                                                arriving.whole() if arriving else session.stat(remote))
        finally:
            hasher.stop()
        if arriving is not None:  # ``now`` is the original's digest: a difference raises
            verified, _ = compare(digests["sha256"], now, remote, part)
            method = "sha256 matched the original's, as the relay's first hop computed and checked it"
        else:
            if now is None or (now.size, now.mtime) != (entry.size, entry.mtime):
                raise RemoteChanged(f"{remote} changed on the server during the transfer; starting again.")
            server = await remote_sum if remote_sum else None
            verified, method = compare(digests["sha256"], server, remote, part) if options.verify \
                else (False, NOT_COMPARED)
        part.finish(size)
        portable.set_mode(dest, mode & 0o777)
        os.utime(dest, (mtime, mtime))
        return FileOutcome(size, moved, peak, digests["sha256"], verified, method, resumed, on_wire)
    except BaseException:
        if remote_sum:
            remote_sum.cancel()
        part.close()
        raise


async def _receive(session: SshSession, remote: str, part: PartFile, hasher: FollowingHasher, sink: Sink | None,
                   options: TransferOptions, sizes: tuple[int, list], arriving: Arriving | None) -> tuple:
    """The bytes not here yet: over OpenSSH streams (compressed where it pays), SFTP sessions over those
    connections (an SFTP-only account), or paramiko (a password login, or no OpenSSH client here). ``sizes``:
    the file's size and the ranges already here. Returns the bytes moved, the most streams, and the bytes on
    the wire when compressed."""
    size, done = sizes
    resumed = total(done)
    chunks = ChunkMap(size, done)
    streams = session.streams(options, size)
    fast = session.openssh or session.sftp_ssh
    on_wire = None
    if fast is not None:
        choosing = None
        if session.openssh is not None:
            kind = SshDownload
            choosing = compress_file(session, options, remote, size - resumed, sink, None, arriving)
        else:  # an SFTP-only account: SFTP sessions over the OpenSSH connections
            from .sftpstreams import SftpDownload as kind
        run = kind(fast, remote, chunks, part, sink=sink, limiter=limiter_for(options),
                   tuner=session.tuner(options, size), streams=streams,
                   max_streams=options.max_streams, rtt_s=session.rtt_s, arriving=arriving)
        run.hasher = hasher
        async with deciding(run, choosing):
            await run.run()
        moved, peak = run.moved, run.peak_streams
        on_wire = run.on_wire if getattr(run, "packed", False) else None
    else:
        from .sftpdata import sftp_download  # paramiko: a password login, or no OpenSSH client here

        if arriving is not None:
            await arriving.whole()  # reads straight through: let the relay's copy arrive first
        moved, peak = await sftp_download(session, remote, chunks, part, hasher, sink, streams or 4,
                                          limiter_for(options))
    return moved, peak, on_wire


def compare(local: str, server: str | None, remote: str, part: PartFile | None) -> tuple[bool, str]:
    if server is None:
        return False, "the server has no sha256 tool (or no shell access); size and mtime checked"
    if server != local:
        if part is not None:
            part.state.unlink(missing_ok=True)
            part.close()
        raise Corrupt(
            f"{remote} arrived with a different SHA-256 than the server computed (server {server[:16]}…, here "
            f"{local[:16]}…). Run the transfer again; if it fails again the disk or memory on one side may be faulty."
        )
    return True, "sha256 computed by the server (openssl or sha256sum) matched"


# -- uploads -----------------------------------------------------------------------------------
