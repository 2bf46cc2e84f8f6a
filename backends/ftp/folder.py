"""An FTP folder: its files and sub-folders, several at once (``streams/folder.py`` sets the pace).

The tree is listed over the lead connection (``MLSD`` when announced, else ``LIST``). Small files come over a
small pool of logged-in connections, each ``RETR`` on a new data connection of a connection already logged
in, so a folder of a thousand files is not a thousand logins; large ones through ``download.py`` with its
own parallel ranges and resume. A ``LIST`` gives exact sizes but no exact dates: dates then come from
``MDTM`` when ``--sync`` needs them (one round trip per file), and copies keep them when known. Symbolic
links are not followed (a link may lead anywhere on the server); the summary says how many were left.
"""

from __future__ import annotations

import asyncio
import posixpath
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.base import NOT_COMPARED, Result, Sink, TransferRequest
from ..core.depth import MAX_DEPTH, too_deep
from ..core.errors import BadRequest, TransferError
from ..core.words import counted
from ..destination import Destination, WholeFile
from ..destination.names import shown
from ..streams.floor import RateFloor
from ..streams.folder import (
    FileDone,
    RemoteFile,
    Totals,
    check_published,
    fetch_folder,
    hashers_for,
    plan,
    published_sidecars,
)
from ..streams.ratelimit import limiter_for, piece
from .address import FtpAddress
from .control import Entry, FtpControl, entry_mtime
from .download import download_file, read_text
from .faults import ServerFull, ftp_error

SMALL_AT_ONCE = 4  # FTP servers often allow few connections per client (vsftpd's max_per_ip)
LARGE_FROM = 16 * 1024 * 1024
MAX_LISTINGS = 100_000  # folders listed in one walk
MAX_FILES = 1_000_000


class Pool:
    """Up to ``size`` logged-in connections for small files, made as needed; a server that says it is full
    (421) keeps the pool at the connections it already took."""

    def __init__(self, connect, size: int) -> None:
        self.connect, self.size = connect, size
        self.idle: list[FtpControl] = []
        self.made = 0
        self.freed = asyncio.Condition()

    async def take(self) -> FtpControl:
        async with self.freed:
            while True:
                if self.idle:
                    return self.idle.pop()
                if self.made < self.size:
                    break
                await self.freed.wait()
        self.made += 1
        try:
            return await self.connect()
        except ServerFull:
            self.made -= 1
            if self.made == 0:
                raise
            self.size = self.made  # the server's limit: share the connections it took
            return await self.take()
        except BaseException:
            self.made -= 1
            raise

    async def give_back(self, control: FtpControl | None) -> None:
        async with self.freed:
            if control is not None:
                self.idle.append(control)
            else:
                self.made -= 1  # broken: a new one may be made in its place
            self.freed.notify()

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.idle), return_exceptions=True)
        self.idle.clear()


@dataclass
class Walked:
    """An FTP folder read to its end: (rel, entry) of every file, the sub-folders, what was left out."""

    files: list[tuple[str, Entry]] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    links: int = 0  # symbolic links, never followed
    #: names holding a line break, a NUL or a slash: asked for over FTP, a line break would end the command early
    #: (a second command injected into the control connection) and a slash would name another file than the one
    #: listed (``../x``), so they are left out and named
    unsafe: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # folders whose listing repeats one above them


    def notes(self, files: int, todo: int) -> list[str]:
        """The folder in a sentence, and one for each kind of entry left out."""
        said = [f"An FTP folder: {counted(files, 'file')} in {counted(len(self.folders) + 1, 'folder')}"
                + (f", {files - todo} of them already here" if todo < files else "") + "."]
        if self.links:
            said.append(f"{counted(self.links, 'symbolic link')} on the server {'was' if self.links == 1 else 'were'} "
                        "not followed (a link may lead anywhere); copy what they point to by its own address.")
        if self.skipped:
            said.append(f"{counted(len(self.skipped), 'folder')} left out: the server lists "
                        f"{'it' if len(self.skipped) == 1 else 'them'} as the same as a folder above (a loop): "
                        + ", ".join(self.skipped[:3]) + ".")
        if self.unsafe:
            verb = "holds" if len(self.unsafe) == 1 else "hold"
            said.append(f"{counted(len(self.unsafe), 'name')} on the server {verb} a line break or a slash, which "
                        "FTP cannot ask for safely (it would end the command, or name another file); left out: "
                        + ", ".join(repr(n) for n in self.unsafe[:3]) + ". Ask the server's owner to rename them.")
        return said


def _signature(entries: list[Entry]) -> tuple:
    """What a listing holds: names, kinds, sizes and times. Only a listing identical to an ancestor's in all of
    them is a link back; a real ``run/run/`` beside its parent's ``reads.txt`` differs at least in times."""
    return tuple(sorted((e.name, e.kind, e.size or -1, e.modified or "") for e in entries
                        if e.name not in (".", "..")))


async def walk(lead: FtpControl, top: FtpAddress, max_depth: int = MAX_DEPTH) -> Walked:
    """Every file below ``top``, listed over the lead connection. Every walk ends: links are not followed, a
    folder is listed once by its path, a listing that repeats one of its ancestors' is an alias leading back
    (a server's own loop), and the depth, the folders listed and the files found are bounded."""
    walked = Walked()
    seen = {posixpath.normpath(top.path)}
    pending: list[tuple[str, int, tuple]] = [("", 0, ())]
    listings = 0
    while pending:
        rel, depth, above = pending.pop()
        if depth > max_depth:
            raise too_deep(top.shown, max_depth)
        listings += 1
        if listings > MAX_LISTINGS or len(walked.files) > MAX_FILES:
            raise BadRequest(f"{top.shown} holds more than {MAX_LISTINGS:,} folders or {MAX_FILES:,} files; Ferry "
                             "stopped. Copy its sub-folders one by one.")
        path = top.child(rel).path if rel else top.path
        entries = await lead.listing(path)
        signature = _signature(entries)
        if rel and signature in above:
            walked.skipped.append(rel)
            continue
        if rel:
            walked.folders.append(rel)
        for entry in entries:
            if entry.name in (".", "..", ""):
                continue
            if any(c in entry.name for c in "\r\n\0/"):
                walked.unsafe.append(shown(f"{rel}/{entry.name}" if rel else entry.name))
                continue
            name = entry.name
            child = f"{rel}/{name}" if rel else name
            if entry.kind == "dir":
                key = posixpath.normpath(top.child(child).path)
                if key in seen:
                    walked.skipped.append(child)
                    continue
                seen.add(key)
                pending.append((child, depth + 1, above + (signature,)))
            elif entry.kind == "link":
                walked.links += 1
            else:
                walked.files.append((child, replace(entry, name=name)))
    return walked


class FtpFolder:
    def __init__(self, top: FtpAddress, request: TransferRequest, sink: Sink, connect, lead: FtpControl) -> None:
        self.top, self.request, self.sink, self.connect, self.lead = top, request, sink, connect, lead
        self.options = request.options
        self.limiter = limiter_for(self.options)
        self.pool = Pool(connect, SMALL_AT_ONCE)
        self.sidecars: dict[str, tuple[str, str]] = {}

    async def run(self) -> Result:
        began = time.monotonic()
        if self.options.checksum:
            raise BadRequest("--checksum names one file's checksum, but the address is a folder. Copy the file on "
                             "its own to check it against a checksum.")
        walked = await walk(self.lead, self.top, self.options.max_depth)
        folders = walked.folders
        exact_dates = "MLST" in self.lead.features
        files = []
        for rel, entry in walked.files:
            mtime = entry_mtime(entry) if exact_dates else None
            if mtime is None and self.options.sync and "MDTM" in self.lead.features:
                mtime = entry_mtime(await self.lead.entry(self.top.child(rel).path))
            files.append(RemoteFile(rel, entry.size, mtime, self.top.child(rel).path))
        if self.options.verify:
            self.sidecars = published_sidecars(f.rel for f in files)
        destination = Destination(self.request.dest, named_here=self.options.name_from_source)
        todo = plan(files, folders, destination, self.options, self.sink)
        totals = Totals(sum(f.size or 0 for f in todo), limiter=self.limiter)
        self.sink.stage("transferring")
        try:
            outcome = await fetch_folder(todo, destination, self.sink, small=self._small, large=self._large,
                                         large_from=LARGE_FROM, at_once=SMALL_AT_ONCE, totals=totals)
        finally:
            await self.pool.close()
        notes = walked.notes(len(files), len(todo)) + [n for n in [destination.renamed_note()] if n]
        for note in notes:
            self.sink.note(note)
        return Result(bytes=outcome.bytes, seconds=time.monotonic() - began, streams=outcome.streams,
                      sha256=outcome.sha256, verified=outcome.verified, verify_method=outcome.verify_method,
                      peer_host=self.top.host, bytes_fetched=outcome.moved, notes=notes)

    async def _large(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        address = replace(self.top, path=file.address, folder=False)
        entry = await self.lead.entry(file.address)
        request = replace(self.request, source=address.url(), dest=str(path), options=self._large_options(file))
        result = await download_file(address, entry, request, sink, self.connect, self.lead)
        return FileDone(result.sha256, result.verified, self._said(result), result.bytes_fetched, result.streams)

    def _large_options(self, file: RemoteFile):
        return replace(self.options, overwrite=True)

    def _said(self, result: Result) -> str:
        if not self.options.verify:
            return NOT_COMPARED
        return (f"{result.verify_method.split()[0]} from the server matched" if result.verified
                else "no checksum offered or published; size and modification time checked")

    def _hashers(self, file: RemoteFile) -> dict:
        return hashers_for(self.sidecars.get(file.rel))

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int,
                     control: FtpControl) -> tuple[bool, str]:
        """A small file's digests against the checksum file published beside it (read over ``control``)."""
        side = self.sidecars.get(file.rel)
        try:
            text = await read_text(control, self.top.child(side[1]).path) if side else None
        except (TransferError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise ftp_error(exc, self.top, step="read", path=side[1], started=True) from exc
        return check_published(file.rel, digests, side, text, self.options.verify)

    async def _small(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        """The whole file with one ``RETR`` over a pooled connection, hashed as it comes, renamed once whole;
        never more than the size the listing gave (``WholeFile``); a trickle ends as a stall (``RateFloor``)."""
        digests = self._hashers(file)
        control = await self.pool.take()
        floor = RateFloor(self.lead.stall_seconds, f"{self.top.host} (for {file.rel})")
        try:
            with WholeFile(path, file.size, self.top.child(file.rel).shown) as out:
                try:
                    stream = await control.read_from(file.address, 0)
                    while data := await stream.read(piece(self.limiter, 1 << 20)):
                        out.write(data)
                        floor.feed(len(data))
                        for h in digests.values():
                            h.update(data)
                        sink.progress(out.written, file.size, 1)
                        if self.limiter:
                            await self.limiter.consume(len(data))
                    await control.end_read(stream, complete=True)
                except (TransferError, asyncio.CancelledError):
                    raise
                except Exception as exc:
                    raise ftp_error(exc, self.top, step="read", path=file.address, started=True) from exc
                if file.size is not None and out.written != file.size:
                    raise ftp_error(ConnectionError(f"{out.written} of {file.size} bytes came"), self.top,
                                    step="read", path=file.address, started=True)
                verified, method = await self._check(file, {k: h.hexdigest() for k, h in digests.items()},
                                                     out.written, control)
                out.commit()
        except BaseException:
            await self.pool.give_back(None)
            control.abandon()
            raise
        await self.pool.give_back(control)
        return FileDone(digests["sha256"].hexdigest(), verified, method, out.written)
