"""A web folder (an autoindex listing) downloaded as a folder: its files and sub-folders, below the start.

The listings are read first (``index.py``), then every file's HEAD, ``HEADS_AT_ONCE`` at a time, gives
the sizes for progress and ``--sync`` and the dates the copies keep. Small files come with one GET each,
``SMALL_AT_ONCE`` at a time over the session's reused connections; large ones with the parallel ranged
download of a single file (``download.py``: resume, identity checks, its own sidecar lookup). A small
file's ``NAME.sha256``/``NAME.md5`` is taken from the listing itself, so no request is spent looking for
sidecars that are not there.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from email.utils import parsedate_to_datetime
from pathlib import Path

import aiohttp

from ..core.base import NOT_COMPARED, Result, Sink, TransferRequest
from ..core.errors import BadRequest, TransferError, Transient
from ..core.options import read_options
from ..core.urls import host_of, redact
from ..core.words import counted
from ..destination import Destination, WholeFile
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
from ..streams.hashing import finished_in_thread, read_back
from ..streams.ratelimit import limiter_for, pieces
from .faults import answer_error, map_error
from .index import Listing, walk
from .options import LARGE_FROM, TELL_EVERY, HttpsOptions
from .remote import SIDECAR_LIMIT, head
from .session import read_up_to
from .whole import inflater_for

HEADS_AT_ONCE = 16
SMALL_AT_ONCE = 8


def _mtime(last_modified: str | None) -> float | None:
    try:
        return parsedate_to_datetime(last_modified).timestamp() if last_modified else None
    except (TypeError, ValueError):
        return None


async def _described(session: aiohttp.ClientSession, found) -> list[RemoteFile]:
    gate = asyncio.Semaphore(HEADS_AT_ONCE)

    async def one(item) -> RemoteFile:
        async with gate:
            info, _ = await head(session, item.url)
        return RemoteFile(item.rel, info.size, _mtime(info.last_modified), item.url)

    return list(await asyncio.gather(*(one(item) for item in found)))


class FolderDownload:
    def __init__(self, session: aiohttp.ClientSession, listing: Listing, request: TransferRequest,
                 sink: Sink) -> None:
        self.session, self.listing, self.request, self.sink = session, listing, request, sink
        self.options = request.options
        self.limiter = limiter_for(self.options)
        self.settings = read_options(HttpsOptions, self.options.backend_options)
        self.sidecars: dict[str, tuple[str, str]] = {}  # rel → (algorithm, the sidecar's rel)

    async def run(self) -> Result:
        began = time.monotonic()
        if self.options.checksum:
            raise BadRequest("--checksum names one file's checksum, but the address is a web folder. Copy the file "
                             "on its own to check it against a checksum; a folder's files are checked against the "
                             "NAME.sha256 or NAME.md5 published beside them.")
        walked = await walk(self.session, self.listing, self.options.max_depth)
        found, folders = walked.files, walked.folders
        files = await _described(self.session, found)
        self.sidecars = published_sidecars(f.rel for f in files) if self.options.verify else {}
        self.urls = {f.rel: f.address for f in files}
        destination = Destination(self.request.dest, named_here=self.options.name_from_source)
        destination.note_renamed(walked.renamed)
        todo = plan(files, folders, destination, self.options, self.sink)
        totals = Totals(sum(f.size or 0 for f in todo), limiter=self.limiter)
        self.sink.stage("transferring")
        outcome = await fetch_folder(todo, destination, self.sink, small=self._small, large=self._large,
                                     large_from=LARGE_FROM, at_once=SMALL_AT_ONCE, totals=totals)
        self.sink.stage("verifying")
        notes = [f"A web folder: {counted(len(files), 'file')} in {counted(len(folders) + 1, 'folder')}"
                 + (f", {len(files) - len(todo)} of them already here" if len(todo) < len(files) else "") + "."]
        notes += [n for n in (walked.skipped_note(), destination.renamed_note()) if n]
        for note in notes[1:]:
            self.sink.note(note)
        return Result(bytes=outcome.bytes, seconds=time.monotonic() - began, streams=outcome.streams,
                      sha256=outcome.sha256, verified=outcome.verified, verify_method=outcome.verify_method,
                      peer_host=host_of(self.listing.url), bytes_fetched=outcome.moved, notes=notes)

    async def _large(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        from .download import Download

        result = await Download(self.session, self._large_request(file, path), sink).run()
        return FileDone(result.sha256, result.verified, self._said(result), result.bytes_fetched,
                        result.streams)

    def _large_request(self, file: RemoteFile, path: Path) -> TransferRequest:
        return replace(self.request, source=file.address, dest=str(path),
                       options=replace(self.options, overwrite=True, name_from_source=False))

    async def _small(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        """One GET into ``NAME.part``, read back and hashed in a worker thread once whole (what is on the disk is
        what is checked; one hand-over to a thread a file, where a hasher following the body cost a dozen: a
        thousand small runs spent a fifth of the event loop's time on them), renamed once its size (and any
        sidecar) agrees. A file within ``TELL_EVERY`` is held until whole, then made, written and read back in
        that same hand-over: no file system call of its own on the event loop. Never more than the size the
        server announced (``WholeFile``); a body it compressed unasked is inflated within bounds (``Inflater``);
        a trickle ends as a stall."""
        algorithms = tuple(self._hashers(file))
        floor = RateFloor(self.settings.stall_seconds, redact(file.address))
        with WholeFile(path, file.size, redact(file.address), buffer=TELL_EVERY) as out:
            try:
                async with self.session.get(file.address) as resp:
                    if resp.status != 200:
                        raise answer_error(resp, file.address)
                    expected, wire, told = resp.content_length, 0, 0
                    inflater = inflater_for(resp.headers, str(resp.url))
                    if inflater is not None:
                        out.limit = None  # the size said was of the compressed body: the inflater bounds it
                    async for data in pieces(resp.content, self.limiter):
                        wire += len(data)
                        floor.feed(len(data))
                        for piece in inflater.feed(data) if inflater else (data,):
                            out.write(piece)
                        if out.written - told >= TELL_EVERY:
                            told = out.written
                            sink.progress(told, file.size, 1)
                        if self.limiter:
                            await self.limiter.consume(len(data))
                    if inflater is not None:
                        out.write(inflater.end())
            except (TransferError, asyncio.CancelledError):
                raise
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                raise map_error(exc, file.address, started=out.written > 0) from exc
            if expected is not None and wire != expected:
                raise Transient(f"{redact(file.address)} ended after {wire} of {expected} bytes; Ferry will retry.")

            def settle() -> dict[str, str]:  # made (if it was all held), written out, read back and hashed
                out.flush()
                return read_back(out.part, algorithms)

            digests = await finished_in_thread(settle)
            sink.progress(out.written, file.size, 1)
            verified, method = await self._check(file, digests, out.written)
            out.commit()
        return FileDone(digests["sha256"], verified, method, out.written)

    def _hashers(self, file: RemoteFile) -> dict:
        return hashers_for(self.sidecars.get(file.rel))

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int) -> tuple[bool, str]:
        """A small file's digests against the checksum file published beside it in the listing."""
        side = self.sidecars.get(file.rel)
        text = await self._text(self.urls[side[1]]) if side else None
        return check_published(file.rel, digests, side, text, self.options.verify)

    def _said(self, result: Result) -> str:
        return _short(result) if self.options.verify else NOT_COMPARED

    async def _text(self, url: str) -> str | None:
        try:
            async with self.session.get(url) as resp:
                if resp.status != 200:
                    return None
                return (await read_up_to(resp, SIDECAR_LIMIT)).decode("utf-8", "replace")
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return None


def _short(result: Result) -> str:
    """A large file's check in the words the folder summary groups by."""
    if result.verified:
        return f"{result.verify_method.split()[0]} published beside it matched"
    return "no checksum published; " + result.verify_method.split("; ", 1)[-1]


class ListedFiles(FolderDownload):
    """The full client's GET for a list job's small file (``listed.py``): the list's hashers and checks."""

    def __init__(self, session: aiohttp.ClientSession, job) -> None:
        super().__init__(session, None, job.request, job.sink)
        self.job = job

    def _hashers(self, file: RemoteFile) -> dict:
        return self.job._hashers(file)

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int) -> tuple[bool, str]:
        return await self.job._check(file, digests, written)
