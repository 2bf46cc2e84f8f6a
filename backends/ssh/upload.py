"""One file to an SSH server: a claim on the server's part file, ranged parallel streams with every range
checked there, resume by range, and the whole file's SHA-256 compared at its final name."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

from ..core.base import NOT_COMPARED, Arriving, Sink, TransferOptions
from ..core.claims import new_token, replaced
from ..core.errors import LocalError, NoSpace, TransferError
from ..core.made import Made, described, whole_sha256
from ..core.words import human_size
from ..streams.chunks import ChunkMap, total
from ..streams.folder import FileOutcome
from ..streams.holds import Held
from ..streams.ratelimit import limiter_for
from .claim import claim, release
from .compression import compress_file, deciding
from .download import compare
from .ranged import SshUpload
from .session import SshSession


class UploadRecord(Held):
    """Progress of an upload, kept here (LABFERRY_HOME/uploads) since the server only has bytes, with this
    installation's token for it (the owner its server-side lock names, ``claim``). While an upload runs, its record
    is locked here too: a second Ferry on this computer with the same command is refused, not let in as the
    owner."""

    def __init__(self, folder: Path, key: str, told=None) -> None:
        import hashlib

        self.told = told  # also told what is done (a relay's first hop), from whichever thread saves
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")
        self.identity: dict = {}
        self.token = ""

    def load(self, identity: dict) -> list[tuple[int, int]]:
        self.identity = identity
        try:
            record = json.loads(self.path.read_text())
        except (OSError, ValueError):
            record = {}
        self.token = record.get("token") or new_token()
        if record.get("identity") != identity:
            return []
        return [(int(s), int(e)) for s, e in record.get("done", [])]

    def save_state(self, done, *, tell: bool = True) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"identity": self.identity, "token": self.token, "done": [[s, e] for s, e in done],
                                   "saved": time.time()}))
        os.replace(tmp, self.path)
        if tell and self.told is not None:
            self.told([(s, e) for s, e in done])

    def sync(self) -> None:
        return None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self.let_go()


async def upload_file(session: SshSession, local: Path | Made, remote: str, options: TransferOptions, sink: Sink | None,
                      records: Path, arriving: Arriving | None = None, on_ranges=None) -> FileOutcome:
    """Local file → ``remote`` via ``remote.part`` and a rename, every range hashed on both ends.

    ``arriving``: the local file is a relay's spool still being filled; only ready ranges go, and the result is
    compared with the original's SHA-256 (``Arriving.whole``). ``on_ranges``: told the ranges verified on the
    server as they grow (a relay's first hop, so the agent can send them on). ``local`` may be a file made on
    demand (``core.made``: ``--pack``'s archive), read through the same streams."""
    control = session.control
    try:
        size, mode, mtime = (arriving.size, arriving.mode, arriving.mtime) if arriving else described(local)
    except OSError as exc:
        raise LocalError(f"Cannot read {local} ({exc.strerror}). Check the path.") from None
    part = remote + ".part"
    halt = threading.Event()  # set when this upload stops: the digest's thread ends then, not at the file's end
    local_sum = None if arriving else asyncio.ensure_future(asyncio.to_thread(whole_sha256, local, halt))
    record = UploadRecord(records, f"{session.target.display}|{remote}", told=on_ranges)
    identity = {"local": local.key if isinstance(local, Made) else str(local), "size": size, "mtime": int(mtime),
                "remote": remote}
    try:
        done = await _claimed(session, record, identity, remote, size)
        resumed = total(done)
        if resumed and sink:
            sink.note(f"Resuming {local.name}: {human_size(resumed)} of {human_size(size)} is already on the server.")
        if done and on_ranges:
            on_ranges(done)
        chunks = ChunkMap(size, done)
        streams = session.streams(options, size)
        moved, peak, verified_ranges, on_wire = await _send(session, local, part, chunks, record, sink, options,
                                                            (size, resumed, streams), arriving, remote)
        if sink:
            sink.stage("verifying")
        # a relay's spool: the original's digest, as its first hop computed it from the original file
        digest = await local_sum if local_sum is not None else await arriving.whole()
        if options.verify and not (verified_ranges and resumed == 0 and size > 0):
            # ranges written before a resume (or by SFTP alone) were not each checked: the part is, before the
            # rename, so damaged bytes never reach the final name
            compare(digest, await asyncio.to_thread(control.sha256, part), remote, None)
        await asyncio.to_thread(control.rename, part, remote)
        verified, method = (await asyncio.to_thread(final_check, control, remote, digest, size, session.target.host)
                            if options.verify else (False, NOT_COMPARED))
        if verified and verified_ranges:
            method += ("; every range matched on each hop as it went" if arriving is not None else
                       "; and every range as it was written")
        await asyncio.to_thread(control.finish_file, remote, mode, int(mtime))
        record.remove()
        await asyncio.to_thread(release, control, remote)
        return FileOutcome(size, moved, peak, digest, verified, method, resumed, on_wire)
    except BaseException:
        record.let_go()
        halt.set()
        if local_sum is not None:
            local_sum.cancel()
        raise


async def _claimed(session: SshSession, record: UploadRecord, identity: dict, remote: str, size: int) -> list:
    """The server's ``remote`` claimed for this upload (its lock, this record's token kept before the first
    byte, so a crash resumes as the owner) and the ranges an earlier run left that still stand; a part file that
    is not that run's is made anew."""
    control, part = session.control, remote + ".part"
    done = record.load(identity)
    record.hold(remote, session.target.host)
    await asyncio.to_thread(claim, control, remote, record.token, session.target.host)
    record.save_state(done, tell=False)
    existing = await asyncio.to_thread(control.stat, part)
    if not done or existing is None or existing.size != size:
        done = []
        await asyncio.to_thread(_prepare_part, control, part, size)
    return done


async def _send(session: SshSession, local: Path | Made, part: str, chunks: ChunkMap, record: UploadRecord,
                sink: Sink | None, options: TransferOptions, sizes: tuple[int, int, int | None],
                arriving: Arriving | None, remote: str) -> tuple[int, int, bool, int | None]:
    """The bytes still missing on the server: over OpenSSH streams (each range checked there, compressed where
    it pays), SFTP sessions over OpenSSH (an SFTP-only account), or one paramiko session. ``sizes``: the file's,
    what the server kept, the streams to start with. Returns the bytes moved, the most streams, whether every
    range was checked, and the bytes on the wire when compressed."""
    size, resumed, streams = sizes
    verified_ranges = 0
    on_wire = None
    gate = arriving
    if gate is not None and session.openssh is None:
        await gate.whole()  # the SFTP paths below read the file straight through: let it arrive first
        gate = None
    if session.openssh is not None and size > 0:
        run = SshUpload(session.openssh, local, part, chunks, record=record, sink=sink,
                        limiter=limiter_for(options), tuner=session.tuner(options, size), streams=streams,
                        max_streams=options.max_streams, rtt_s=session.rtt_s, arriving=gate)
        try:
            async with deciding(run, compress_file(session, options, remote, size - resumed, sink, local,
                                                   gate)):
                await run.run()
        finally:
            run.close()
        moved, peak, verified_ranges = run.moved, run.peak_streams, run.ranges_unverified == 0
        on_wire = run.on_wire if run.packed else None
    elif session.sftp_ssh is not None and size > 0:  # an SFTP-only account: SFTP sessions over OpenSSH
        from .sftpstreams import SftpUpload

        run = SftpUpload(session.sftp_ssh, local, part, chunks, record, sink=sink,
                         limiter=limiter_for(options), tuner=session.tuner(options, size), streams=streams,
                         max_streams=options.max_streams, rtt_s=session.rtt_s)
        await run.run()
        moved, peak = run.moved, run.peak_streams
    else:
        from .sftpdata import sftp_upload

        moved, peak = await sftp_upload(session, local, part, chunks, record, sink, streams or 4,
                                        limiter_for(options))
    return moved, peak, bool(verified_ranges), on_wire


def final_check(control, remote: str, digest: str, size: int, where: str) -> tuple[bool, str]:
    """The word "verified" for an upload: the whole file at its final name, after the rename, against this
    side's SHA-256, computed by the server; where it has no shell (an SFTP-only account), its size there, and the
    word is not said. What is there and is not what this upload wrote is ``Corrupt`` (exit 6): a second writer,
    or a program that replaced it after the rename."""
    server = control.sha256(remote)
    if server is None:
        there = control.stat(remote)
        if there is None or there.size != size:
            raise replaced(remote, where, f"{there.size if there else 'no'} bytes there, {size} sent")
        return False, "the server computes no sha256 (no shell access); the size at the final name checked"
    if server != digest:
        raise replaced(remote, where, f"sha256 {server[:16]}… there, {digest[:16]}… sent")
    return True, "sha256 of the whole file at its final name, computed by the server, matched"


def _prepare_part(control, part: str, size: int) -> None:
    """An empty remote part file of the final size (sparse), after checking there is room."""
    free = control.free_bytes(os.path.dirname(part) or ".")
    if free is not None and free < size:
        raise NoSpace(f"The server has only {human_size(free)} free where {part} goes; the file needs "
                      f"{human_size(size)}. Free some space there or choose another folder.")
    try:
        with control.lock, control.sftp.open(part, "w") as fh:
            fh.truncate(size)
    except OSError as exc:
        from .control import sftp_error

        raise sftp_error(exc, "create", part) from None


__all__ = ["FileOutcome", "upload_file", "TransferError"]
