"""One file from a GridFTP server: started at once, resumed after a stop, checked against the server.

* **Started at once.** The control connection's login and ``MLST`` take four round trips;
  waiting for them would cost 0.2 s at 50 ms, so globus-url-copy starts while they run
  (unless an earlier run left a record: then only the server's answer says whether its
  bytes may be kept).
* **Resumed.** ``resume.Record`` keeps the hashed prefix of ``NAME.part`` against the
  server file's size and time; the next run asks for the rest with ``-off``.
* **Verified without a second pass.** The server hashes its file (``CKSM SHA256``) on a
  control connection of its own while the data moves, and ``Follower`` hashes the part file
  right behind the writes (``hashing.written_prefix`` finds how far parallel streams have
  filled it in). The same connection asks for the file's size and time again at the end:
  a file replaced during the copy is fetched again, never kept as a splice of two versions.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.base import NOT_COMPARED, Result, Sink, TransferOptions
from ..core.errors import Corrupt, LocalError, NotFound, TransferError, Transient
from ..destination import check_destination, move_into_place, os_error, room_for
from ..host import portable
from ..streams.hashing import FollowingHasher, hash_file, manifest_digest, written_prefix
from . import folder, resume
from .address import GridUrl, local_url
from .checks import IsFolder, compare, guc_options, part_path
from .control import Entry, open_control
from .copy import Copy
from .tuning import Plan

#: how far behind the written prefix the follower stays (a page may still be being copied in)
MARGIN = 1 << 20
FOLLOW_EVERY = 0.25
#: a file replaced during this many copies in a row is left for later
COPIES = 4


@dataclass
class Copied:
    """One copy's outcome: the server file it started from, and what the server said at its end."""

    entry: Entry
    after: Entry | None
    digest: str = ""
    verified: bool = False
    method: str = NOT_COMPARED


async def download(remote: GridUrl, looked_up: asyncio.Future, dest: Path, plan: Plan, options: TransferOptions,
                   sink: Sink) -> Result:
    """``looked_up`` resolves to the ``Entry`` at ``remote`` (None: nothing there); a folder raises ``IsFolder``."""
    began = time.monotonic()
    check_destination(dest, options.overwrite)
    record = resume.Record(dest, remote.text())
    entry: Entry | None = None
    offset = fetched = 0
    notes: list[str] = []
    try:
        if record.hint():
            entry = _file_entry(await looked_up, remote)
            offset = record.trusted(entry)
        resumed_from = offset
        for _ in range(COPIES):
            _prepare(record.part, offset, dest)
            copied = await _copy_once(remote, looked_up, entry, offset, record, plan, options, sink)
            fetched += copied.entry.size - offset
            if not resume.replaced(copied.entry, copied.after):
                break
            _forget(record)
            if copied.after is None or copied.after.is_dir:
                raise NotFound(f"{remote.path} on {remote.where} was removed (or replaced by a folder) during the "
                               "copy, so Ferry kept nothing of it. Check the path.")
            notes.append(f"{remote.path} changed on the server during the copy; Ferry fetched it again.")
            entry, offset, resumed_from = copied.after, 0, 0
        else:
            _forget(record)
            raise Transient(f"{remote.path} on {remote.where} changed on the server during each of {COPIES} "
                            "copies. Run the transfer again once it is completely written.")
        move_into_place(record.part, dest, copied.entry.mtime or None)  # a plain file, never onto a link
        record.drop()
    except BaseException as exc:
        if isinstance(exc, Corrupt) or not record.saved:
            _forget(record)  # else the part file and its record stay for the next run
        raise
    result = Result(copied.entry.size, time.monotonic() - began, plan.streams, copied.digest, copied.verified,
                    copied.method, peer_host=remote.host, bytes_fetched=fetched, resumed_from=resumed_from)
    if resumed_from:
        notes.append(f"Resumed: {resumed_from} bytes from an earlier run were kept (the server's file had the same "
                     "size and time).")
    result.notes.extend(notes)
    return result


def _file_entry(entry: Entry | None, remote: GridUrl) -> Entry:
    if entry is None:
        raise NotFound(f"There is no file or folder {remote.path} on {remote.where}. Check the path.")
    if entry.is_dir:
        raise IsFolder(entry)
    return entry


def _prepare(part: Path, offset: int, dest: Path) -> None:
    """Keep the trusted prefix of the part file, or start without one (globus-url-copy creates it)."""
    try:
        if offset:
            resume.cut_back(part, offset)
        else:
            part.unlink(missing_ok=True)
    except OSError as exc:
        raise os_error(exc, dest, "create") from exc


def _forget(record: resume.Record) -> None:
    record.part.unlink(missing_ok=True)
    record.drop()


async def _copy_once(remote: GridUrl, looked_up: asyncio.Future, entry: Entry | None, offset: int,
                     record: resume.Record, plan: Plan, options: TransferOptions, sink: Sink) -> Copied:
    part = record.part
    ended = threading.Event()
    server = asyncio.ensure_future(asyncio.to_thread(_server_side, remote, options.verify, ended))
    server.add_done_callback(lambda done: done.cancelled() or done.exception())  # read here or never
    follower = Follower(part, record)
    opts = guc_options(plan, options)
    opts.offset = offset
    copy = Copy(remote.text(), local_url(part), opts, sink, entry.size if entry else None)
    running = asyncio.ensure_future(copy.run())
    try:
        if entry is None:
            await asyncio.wait([running, looked_up], return_when=asyncio.FIRST_COMPLETED)
            entry = _file_entry(await looked_up, remote)  # its answer explains a failure better than the tool's
        room_for(part, entry.size, already=offset)  # globus-url-copy would fill the disk, then say "no space left"
        copy.total = entry.size
        record.start(entry)
        await running
        ended.set()
        sink.stage("verifying")
        size = os.stat(part).st_size
        if size != entry.size:
            raise Corrupt(f"The copy has {size} bytes but the server's file has {entry.size}. "
                          "Ferry will not keep it; run the transfer again.")
        digest = await follower.finish(size)
        try:
            expected, after = await server
        except TransferError:  # its connection died with a restart: ask on a new one
            expected, after = await asyncio.to_thread(_server_side, remote, options.verify, None)
        if resume.replaced(entry, after):
            return Copied(entry, after)
        if expected is not None and expected != digest:
            digest = (await asyncio.to_thread(hash_file, part))["sha256"]  # re-read before calling it damage
        verified, method = compare(expected, digest, "server", options)
        if not options.verify:
            verified, method = False, NOT_COMPARED
        elif expected is None:
            method += " (the server could not compute sha256)"
        return Copied(entry, after, digest, verified, method)
    finally:
        ended.set()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        server.cancel()
        follower.stop()


def _server_side(url: GridUrl, checksum: bool, ended: threading.Event | None) -> tuple[str | None, Entry | None]:
    """The server's sha256 of the file (computed while the data moves), then, once the copy
    has ``ended``, its size and time again (blocking, on a control connection of its own)."""
    control = open_control(url)
    if control is None:
        return None, None
    try:
        try:
            digest = control.checksum(url.path, "SHA256") if checksum else None
        except TransferError:
            digest = None  # a server that cannot hash: the copy is checked by size
        if ended is not None:
            ended.wait()
        return digest, control.stat(url.path)
    finally:
        control.close()


class Follower:
    """Hashes the part file right behind globus-url-copy's writes, from the moment it appears,
    and records the hashed prefix for a later run.

    Ferry must not create the file first: an existing destination makes globus-url-copy
    0.3–0.4 s slower on a 1 GiB copy (measured at 50 ms, -p 8), so the follower waits for it.
    """

    def __init__(self, path: Path, record: resume.Record) -> None:
        self.path, self.record = path, record
        self.hasher: FollowingHasher | None = None
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        fd = -1
        saved = time.monotonic()
        try:
            while True:
                await asyncio.sleep(FOLLOW_EVERY)
                if self.hasher is None:
                    if not self.path.exists():
                        continue
                    self.hasher = FollowingHasher(self.path)
                    fd = os.open(self.path, os.O_RDONLY | portable.O_CLOEXEC | portable.O_BINARY)
                self.hasher.advance(max(0, written_prefix(fd) - MARGIN))
                if time.monotonic() - saved >= resume.SAVE_EVERY:
                    self.record.save(self.hasher.position)
                    saved = time.monotonic()
        finally:
            if fd >= 0:
                os.close(fd)

    async def finish(self, size: int) -> str:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        if self.hasher is None:
            self.hasher = FollowingHasher(self.path)
        return (await asyncio.to_thread(self.hasher.finish, size))["sha256"]

    def stop(self) -> None:
        self.task.cancel()
        if self.hasher is not None:
            self.hasher.stop()


async def download_blind(remote: GridUrl, dest: Path, plan: Plan, options: TransferOptions, sink: Sink,
                         is_folder: bool) -> Result:
    """gsiftp:// or sshftp://, which Ferry cannot stat or list itself: sizes known only at the end.

    A file is checked by globus-url-copy's ``-verify-checksum``; a folder cannot be
    (that option fails with ``-r``), so only Ferry's local manifest is recorded.
    """
    began = time.monotonic()
    part = part_path(dest)
    if is_folder:
        if dest.exists():
            raise LocalError(f"{dest} already exists. Choose another destination.")
        opts = folder.folder_options(plan, options, 8, None)
        copy = Copy(remote.text(folder=True), local_url(part, folder=True), opts, sink, None)
    else:
        check_destination(dest, options.overwrite)
        copy = Copy(remote.text(), local_url(part), guc_options(plan, options, "SHA256"), sink, None)
    try:
        await copy.run()
        sink.stage("verifying")
        if is_folder:
            rels = [str(p.relative_to(part)) for p in part.rglob("*") if p.is_file()]
            hashes = await asyncio.to_thread(folder.hash_tree, part, rels)
            digest, size = manifest_digest(hashes), sum((part / rel).stat().st_size for rel in rels)
        else:
            digest = (await asyncio.to_thread(hash_file, part))["sha256"]
            size = part.stat().st_size
        part.replace(dest)
    except BaseException:
        if part.is_dir():
            shutil.rmtree(part, ignore_errors=True)
        else:
            part.unlink(missing_ok=True)
        raise
    method = ("sha256 computed here; sizes not checked (Ferry cannot list this server itself)" if is_folder
              else "sha256 checked by globus-url-copy (-verify-checksum)")
    return Result(size, time.monotonic() - began, plan.streams, digest, not is_folder, method,
                  peer_host=remote.host, bytes_fetched=size)
