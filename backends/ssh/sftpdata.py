"""The data path over paramiko's SFTP, for accounts where the OpenSSH path cannot run.

SFTP-only accounts (``ForceCommand internal-sftp``) may not run ``dd``, and password-only
logins cannot feed OpenSSH in batch mode. Then the control connection carries the data:
one stream, with many requests in flight (``readv`` and pipelined writes), in a thread.
paramiko moves about 250 Mbit/s per core (measured), so this is the fallback, not the
fast path; the job says so in its notes.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ..core.base import Sink
from ..core.made import Made, open_local
from ..destination import PartFile
from ..streams.chunks import ChunkMap
from ..streams.hashing import FollowingHasher
from .control import sftp_error
from .faults import dropped_is_transient
from .session import SshSession

LEASE = 8 * 1024 * 1024
SAVE_EVERY = 1.0


async def sftp_download(session: SshSession, remote: str, chunks: ChunkMap, part: PartFile,
                        hasher: FollowingHasher, sink: Sink | None, streams: int, limiter=None) -> tuple[int, int]:
    if sink:
        sink.note("Using SFTP through paramiko for the data (this account cannot run the faster OpenSSH path).")

    def work() -> int:
        moved, saved = 0, time.monotonic()
        sftp = session.control.own_sftp()
        try:
            with dropped_is_transient(session.target.host), sftp.open(remote, "rb") as fh:
                while (lease := chunks.lease(LEASE)) is not None:
                    for data in fh.readv([(lease.start, lease.end - lease.start)]):
                        part.write(data, lease.cursor)
                        chunks.record(lease, len(data))
                        moved += len(data)
                        if limiter is not None:
                            limiter.consume_blocking(len(data))
                    chunks.finish(lease)
                    hasher.advance(chunks.contiguous_prefix())
                    if sink:
                        sink.progress(chunks.bytes_done, chunks.size, 1)
                    if time.monotonic() - saved > SAVE_EVERY:
                        part.save_state(chunks.done_intervals())
                        saved = time.monotonic()
        except OSError as exc:
            raise sftp_error(exc, "read", remote) from None
        finally:
            sftp.close()
            chunks.release_all()
            part.save_state(chunks.done_intervals())
        return moved

    return await asyncio.to_thread(work), 1


async def sftp_upload(session: SshSession, local: Path | Made, remote_part: str, chunks: ChunkMap, record,
                      sink: Sink | None, streams: int, limiter=None) -> tuple[int, int]:
    if sink:
        sink.note("Using SFTP through paramiko for the data (this account cannot run the faster OpenSSH path).")

    def work() -> int:
        moved = 0
        sftp = session.control.own_sftp()
        try:
            with dropped_is_transient(session.target.host), open_local(local) as src, \
                    sftp.open(remote_part, "r+b") as fh:
                fh.set_pipelined(True)
                while (lease := chunks.lease(LEASE)) is not None:
                    src.seek(lease.start)
                    fh.seek(lease.start)
                    left = lease.end - lease.start
                    while left:
                        data = src.read(min(left, 1 << 20))
                        fh.write(data)
                        left -= len(data)
                        moved += len(data)
                        if limiter is not None:
                            limiter.consume_blocking(len(data))
                    fh.flush()  # waits for the server's answers: only then is the range done
                    chunks.record(lease, lease.end - lease.start)
                    chunks.finish(lease)
                    record.save_state(chunks.done_intervals())
                    if sink:
                        sink.progress(chunks.bytes_done, chunks.size, 1)
        except OSError as exc:
            raise sftp_error(exc, "write", remote_part) from None
        finally:
            sftp.close()
            chunks.release_all()
        return moved

    return await asyncio.to_thread(work), 1
