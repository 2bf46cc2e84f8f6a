"""A list job over HTTPS: the files a catalogue names (an accession's runs), one job.

The small files come with one GET each, many at once over kept-alive connections (a study of 1,000 small
runs is not 1,000 cold starts): first by the lean path (``lean.py``: lanes of worker threads, each with a
connection of its own that asks for the next file while one arrives, no aiohttp), and what is not its plain
case by the full client (aiohttp, over the job's shared session). The large ones come with the parallel ranged
download of a single file, a few at once, each resumable, each lane starting its next file in the tail of the
last on the connections it gives back (``streams.handoff.Handoff``). The full client is imported and its
sessions opened only when a file needs them, so a list of small files never pays for aiohttp. Every file is
checked against the checksum and size the catalogue published; one that fails is named and the others go on
(``backends/streams/lists.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import replace
from pathlib import Path

from ..core.base import Result, Sink, TransferRequest
from ..core.options import read_options
from ..core.urls import redact
from ..destination import WholeFile
from ..streams.floor import RateFloor
from ..streams.folder import FileDone, RemoteFile
from ..streams.lists import ListedChecks, check_listed
from ..streams.ratelimit import limiter_for
from .lean import DEPTH, NotPlain, lean_for
from .options import CONNECT_SECONDS, LARGE_FROM, HttpsOptions
from .pieces import pieces_for

log = logging.getLogger(__name__)
#: the reasons logged for files the lean path handed to the full client (the count is always logged)
REASONS_LOGGED = 10


class ListDownload(ListedChecks):
    """``shared()``: the full client's session for small files, as an async context (the process's pool);
    ``fresh()``: a new session for a large file. A large file gets its own: a warm connection keeps the
    congestion window the last file's losses left it, where a fresh one starts a new slow start (four
    64–192 MiB files at once came at ~670 Mbit/s on shared connections and ~790 on fresh ones, 50 ms / 1e-3,
    docs/benchmarks.md)."""

    def __init__(self, request: TransferRequest, sink: Sink, shared: Callable[[], AbstractAsyncContextManager],
                 fresh: Callable[[], AbstractAsyncContextManager]) -> None:
        self.request, self.sink, self.options = request, sink, request.options
        self.limiter = limiter_for(self.options)
        self.settings = read_options(HttpsOptions, self.options.backend_options)
        self.shared, self.fresh = shared, fresh
        self.lean = None
        self._pieces: dict[str, int] = {}  # a small file's rel → the pieces it is asked for in (1: whole)
        self._full = None
        self._full_made = asyncio.Lock()
        self._full_gate = asyncio.Semaphore(self.options.max_streams)
        self._large_slots: asyncio.Semaphore | None = None  # the large files' connections, made at the first
        self._stack = AsyncExitStack()
        self.lean_took, self.handed = 0, []  # files the lean path fetched; (file, why) it handed on
        self.in_pieces = 0  # ... of which in pieces

    async def run(self) -> Result:
        async with self._stack:
            self.lean = lean_for(self.options.ca_file, bool(self.options.insecure), self.settings.proxy,
                                 self.limiter is not None, self.settings.stall_seconds, CONNECT_SECONDS)
            if self.lean is not None:
                self._stack.callback(self.lean.close)
                self._stack.callback(self._log_lean)
            return await self.fetch_listed(LARGE_FROM)

    async def _small(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        if self.lean is not None and self.lean.takes(file.address, file.size):
            try:
                done = await self._lean_small(file, path, sink)
                self.lean_took += 1
                self.in_pieces += self._pieces.get(file.rel, 1) > 1
                return done
            except NotPlain as why:  # nothing kept: the full client asks again, and follows or words what it gets
                self.handed.append((file.rel, str(why)))
        async with self._full_gate:  # the lean path admits DEPTH files a connection; the full client one
            return await (await self._full_client())._small(file, path, sink)

    def _small_at_once(self, connections: int, smalls: list[RemoteFile], most: int) -> tuple[int, int]:
        """A lane a connection, each holding the file arriving and the one asked for behind it; the list's last
        ``most`` files in pieces (``pieces.py``), and as many lanes as there are files and pieces for, up to
        ``most``: a single run of 4 MiB comes in four pieces on four lanes, not one after another on one."""
        self._full_gate = asyncio.Semaphore(connections)
        if self.lean is None:
            return connections, connections
        counts = pieces_for([f.size or 0 for f in smalls], most)
        self._pieces = dict(zip((f.rel for f in smalls), counts, strict=True))
        self.lean.lanes = lanes = max(1, min(most, max(connections, sum(counts))))
        return lanes * DEPTH, lanes

    async def _lean_small(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        """One GET on a worker thread into ``NAME.part``, read back and hashed there; renamed here once its size
        and checksum agree with the catalogue's."""
        algorithms = tuple(self._hashers(file))
        floor = RateFloor(self.settings.stall_seconds, redact(file.address))
        with WholeFile(path, file.size, redact(file.address)) as out:  # written by the lane, its buffer
            digests = await self.lean.fetch(file.address, out, algorithms, floor,
                                            lambda written: sink.progress(written, file.size, 1),
                                            self._pieces.get(file.rel, 1))
            sink.progress(out.written, file.size, 1)
            verified, method = await self._check(file, digests, out.written)
            out.commit()
        return FileDone(digests["sha256"], verified, method, out.written)

    def _log_lean(self) -> None:
        reasons = "; ".join(f"{rel} ({why})" for rel, why in self.handed[:REASONS_LOGGED])
        log.info("lean path: %d small files fetched (%d in pieces), %d handed to the full client%s",
                 self.lean_took, self.in_pieces, len(self.handed), f": {reasons}" if reasons else "")

    async def _full_client(self):
        """The full client's small-file GET over the shared session, made at the first file that needs it."""
        async with self._full_made:
            if self._full is None:
                from .folder import ListedFiles

                session = await self._stack.enter_async_context(self.shared())
                self._full = ListedFiles(session, self)
        return self._full

    async def _large(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        from ..streams.handoff import Handoff
        from .download import Download

        if self._large_slots is None:
            self._large_slots = asyncio.Semaphore(self.large_budget)
        # the next file starts in this one's tail; the last ones take the connections the others gave back
        handoff = Handoff(self._large_slots, getattr(sink, "tail", None), self.large_budget)
        async with self.fresh() as session:
            result = await Download(session, self._large_request(file, path), sink, handoff).run()
        return FileDone(result.sha256, result.verified, self._said(result), result.bytes_fetched, result.streams)

    def _large_request(self, file: RemoteFile, path: Path) -> TransferRequest:
        return replace(self.request, source=file.address, dest=str(path), options=self._large_options(file))

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int) -> tuple[bool, str]:
        return check_listed(self.listed[file.rel], digests, written)
