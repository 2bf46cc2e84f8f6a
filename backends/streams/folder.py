"""Folders for protocols that move one file per request (HTTP listings, FTP): the plan and the pace.

SSH sends a folder's small files as one tar stream; a web server or an FTP server cannot, so a folder is many
files at once: the small ones ``at_once`` at a time over connections the backend reuses, the large ones one
after another with the backend's parallel ranges, both lanes running together (as ``ssh/folder.py`` runs its
tar stream beside its large files). A file arrives as ``NAME.part`` and takes its name once whole and
checked, so what a failed run finished stays, and the runner's retry (``--sync``) keeps it.

The folder's ``sha256`` in history is that of its manifest (``manifest_digest``), as for SSH folders.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat as statmod
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.base import FILE_DONE, FILE_FAILED, FILE_MOVING, NOT_COMPARED, Sink, TransferOptions
from ..core.checksums import SIDECARS, parse_sidecar
from ..core.errors import Corrupt, LocalError, TransferError
from ..core.words import counted
from ..destination import Destination, room_for
from ..destination.tally import missing_error, unaccounted
from .hashing import manifest_digest


@dataclass
class Totals:
    """Progress across a folder: finished bytes plus the bytes of files in flight."""

    total: int
    done: int = 0
    live: dict[str, int] = field(default_factory=dict)
    live_streams: dict[str, int] = field(default_factory=dict)  # each large file in flight: its streams now
    streams: int = 0
    peak: int = 0  # the most streams at once
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the job's rate cap (its own and the global one), paid by the small-file paths in their threads; large
    #: files pay through their own streams
    limiter: object | None = None

    def pay(self, nbytes: int) -> None:
        if self.limiter is not None and nbytes > 0:
            self.limiter.consume_blocking(nbytes)

    def add(self, nbytes: int, sink: Sink | None) -> None:
        """Bytes of small files done (may be called from several threads)."""
        with self.lock:
            self.done += nbytes
        self.report(sink)

    def report(self, sink: Sink | None) -> None:
        if sink:
            sink.progress(self.done + sum(self.live.values()), self.total, max(1, self.streams))


class FileSink:
    """A sink for one large file inside a folder job: reports into the folder's totals."""

    def __init__(self, totals: Totals, key: str, outer: Sink | None, others: int = 1,
                 tailing: asyncio.Event | None = None) -> None:
        self.totals, self.key, self.outer, self.others = totals, key, outer, others
        self.tailing = tailing

    def tail(self) -> None:
        """The file's last bytes are in flight on connections it is giving back: its lane may start the next
        file (a fetch that shares its lane's connections says so: ``handoff.Handoff``)."""
        if self.tailing is not None:
            self.tailing.set()

    def progress(self, done: int, total: int | None, streams: int) -> None:
        self.totals.live[self.key] = done
        self.totals.live_streams[self.key] = streams
        self.totals.streams = sum(self.totals.live_streams.values()) + self.others
        self.totals.peak = max(self.totals.peak, self.totals.streams)
        self.totals.report(self.outer)

    def note(self, message: str) -> None:
        if self.outer:
            self.outer.note(message)

    def stage(self, stage: str) -> None:
        return None


@dataclass
class RemoteFile:
    """One file of a remote folder: where it goes below DEST and what the server said of it."""

    rel: str  # its path below the folder, as the server gave it
    size: int | None
    mtime: float | None = None  # seconds since the epoch, when the server says
    address: str = ""  # the backend's own address of the file (a URL, a server path)
    saved: str = ""  # the path below DEST it is saved as (``Destination.claim``: made safe, set by ``plan``)


@dataclass
class FileDone:
    sha256: str
    verified: bool
    method: str  # how this file was checked, in a few words
    moved: int  # bytes that crossed the network for it
    streams: int = 1


@dataclass
class FileOutcome:
    """What moving one file or one folder came to (a folder's sha256 is its manifest's)."""

    bytes: int
    moved: int
    streams: int
    sha256: str
    verified: bool
    verify_method: str
    resumed_from: int = 0
    on_wire: int | None = None  # bytes that crossed the wire, when some travelled compressed


def wire_of(plain: int, tar_wire: list[int] | None, outcomes: list[FileOutcome]) -> int | None:
    """A folder's bytes on the wire when some of it travelled compressed, else None. ``plain``: its small files'
    bytes; ``tar_wire``: what each of their tar streams carried when they were compressed (None: they were not);
    ``outcomes``: its large files'."""
    if tar_wire is None and not any(o.on_wire is not None for o in outcomes):
        return None
    small = plain if tar_wire is None else sum(tar_wire)
    return small + sum(o.moved if o.on_wire is None else o.on_wire for o in outcomes)


def unchanged_here(path: Path, file) -> bool:
    """Already here with the server's size and modification time (what ``--sync size-mtime`` compares); a link
    there is never unchanged (it is refused when the file is written)."""
    if file.size is None or file.mtime is None:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return statmod.S_ISREG(st.st_mode) and st.st_size == file.size and int(st.st_mtime) == int(file.mtime)


def _same_size(path: Path, size: int | None) -> bool:
    try:
        return size is not None and os.lstat(path).st_size == size
    except OSError:
        return False


def claim_all(files: list, folders: list[str], destination: Destination) -> None:
    """Give every file (anything with ``rel`` and ``saved``) and folder its safe path below DEST, in sorted
    order, so a name a case-insensitive disk would clash on is numbered the same way on every run."""
    destination.claim_all([f.rel for f in files], folders)
    for f in files:
        f.saved = destination.claim(f.rel)


def choose(files: list, destination: Destination, options: TransferOptions, sink: Sink | None) -> list:
    """Leave out what ``--sync`` finds unchanged here (same size and modification time); refuse files that are
    already here unless asked to replace or sync them. ``files``: claimed (``claim_all``), with ``size`` and
    ``mtime``."""
    if options.sync:
        wanted = [f for f in files if not unchanged_here(destination.path(f.saved), f)]
        if len(wanted) < len(files) and sink:
            skipped = len(files) - len(wanted)
            sink.note(f"Sync: {counted(skipped, 'file')} {'is' if skipped == 1 else 'are'} already here with the "
                      "same size and time; skipped.")
        undated = [f for f in wanted if f.mtime is None and _same_size(destination.path(f.saved), f.size)]
        if undated and sink:
            sink.note(f"Sync: {counted(len(undated), 'file')} here {'has' if len(undated) == 1 else 'have'} the "
                      "server's size, but the server gives no date to compare, and a size alone does not show the "
                      "same content: fetched again.")
        files = wanted
    elif not options.overwrite:
        clashes = [f.saved for f in files if os.path.lexists(destination.path(f.saved))]
        if clashes:
            raise LocalError(f"{counted(len(clashes), 'file')} of the folder already "
                             f"{'exists' if len(clashes) == 1 else 'exist'} in {destination.root} (for example "
                             f"{clashes[0]}). Use --sync (in the app: Skip unchanged files) to keep those that are "
                             "unchanged, or --overwrite (Replace them) to replace them.")
    return files


def plan(files: list[RemoteFile], folders: list[str], destination: Destination, options: TransferOptions,
         sink: Sink | None) -> list[RemoteFile]:
    """Give every name its safe path, leave out or refuse what is here already (``choose``), make the folders
    (no link entered), and check the space."""
    claim_all(files, folders, destination)
    files = choose(files, destination, options, sink)
    for saved in [""] + sorted({destination.claim(rel, folder=True) for rel in folders} | {f.saved.rpartition("/")[0]
                                                                              for f in files}):
        destination.folder(saved)
    room_for(destination.root / "x", sum(f.size or 0 for f in files))
    return files


def published_sidecars(rels) -> dict[str, tuple[str, str]]:
    """For each file, a checksum file beside it in the same listing: rel → (algorithm, the sidecar's rel), so
    no request is spent looking for sidecars that are not there."""
    names = set(rels)
    found: dict[str, tuple[str, str]] = {}
    for rel in names:
        side = next(((algorithm, rel + suffix) for algorithm, suffix in SIDECARS if rel + suffix in names), None)
        if side:
            found[rel] = side
    return found


def hashers_for(side: tuple[str, str] | None) -> dict:
    """SHA-256 always, plus the sidecar's algorithm (MD5) when it is another."""
    digests = {"sha256": hashlib.sha256()}
    if side and side[0] != "sha256":
        digests[side[0]] = hashlib.new(side[0])
    return digests


def check_published(rel: str, digests: dict[str, str], side: tuple[str, str] | None, text: str | None,
                    verify: bool) -> tuple[bool, str]:
    """A small file's digests against the checksum file published beside it (its ``text``), in words; a
    mismatch is ``Corrupt``."""
    if not verify:
        return False, NOT_COMPARED
    if side is None:
        return False, "no checksum published; size checked"
    algorithm, sidecar = side
    expected = parse_sidecar(text or "", algorithm, rel.rsplit("/", 1)[-1])
    if expected is None:
        return False, "the published checksum file did not name it; size checked"
    if digests[algorithm] != expected.lower():
        raise Corrupt(f"{rel} does not match the {algorithm} in the server's {sidecar} (expected {expected[:16]}…, "
                      f"got {digests[algorithm][:16]}…). Run the transfer again; if it fails again, ask the server's "
                      "owner whether the checksum is current.")
    return True, f"{algorithm} published beside it matched"


def set_mtime(path: Path, mtime: float | None) -> None:
    if mtime is not None:
        try:
            os.utime(path, (mtime, mtime))
        except OSError:
            pass


def _account(files: list, done: dict, destination: Destination, failures: dict | None, said) -> None:
    """Every file counted done is on disk at its own saved name with its listed size (``destination.tally``);
    one that is not fails the job (exit 6), or, in a list job, fails alone and is no longer counted done."""
    wrong = unaccounted(destination, [(f.rel, f.size) for f in files if f.rel in done])
    if not wrong:
        return
    if failures is None:
        raise missing_error(wrong, destination.root)
    for rel in wrong:
        done.pop(rel)
        failures[rel] = missing_error({rel: wrong[rel]}, destination.root)
        said(rel, FILE_FAILED, failures[rel])


Fetch = Callable[[RemoteFile, Path, Sink], Awaitable[FileDone]]
#: (the file's rel, its new state, the error when it failed): a list job's per-file states (``FileStatesSink``)
OnState = Callable[[str, str, TransferError | None], None]


async def fetch_folder(files: list[RemoteFile], destination: Destination, sink: Sink | None, *, small: Fetch,
                       large: Fetch,
                       large_from: int, at_once: int, totals: Totals, large_at_once: int = 1,
                       failures: dict[str, TransferError] | None = None,
                       on_state: OnState | None = None, connections: int | None = None) -> FileOutcome:
    """Small files ``at_once`` at a time, large ones (``large_from`` bytes and up) ``large_at_once`` at a time,
    both lanes at once; each fetch reports into ``totals`` through the sink it is given. With ``failures`` a
    file that fails is noted there and the others go on (a list job); without, the first failure ends it.
    ``connections``: what the small files use when fewer than the files in flight (two files a connection on
    HTTPS's lean path), so the streams said are connections."""
    smalls = [f for f in files if f.size is not None and f.size < large_from]
    larges = [f for f in files if f.size is None or f.size >= large_from]
    run = _FolderRun(destination, sink, totals, failures, on_state or (lambda rel, state, error: None))
    gate = asyncio.Semaphore(max(1, at_once))
    queue = iter(larges)  # the large lanes share it: each takes the next file when it is free
    lanes = [run.large_lane(queue, large, min(at_once, len(smalls))) for _ in range(max(1, min(large_at_once,
                                                                                                 len(larges))))]
    await asyncio.gather(*lanes, *(run.small_one(f, small, gate, connections) for f in smalls))
    _account(files, run.done, destination, failures, run.said)
    return run.outcome(files, len(smalls), len(larges))


class _FolderRun:
    """One folder's fetch under way: what each file's fetch reports, and the files done."""

    def __init__(self, destination: Destination, sink: Sink | None, totals: Totals,
                 failures: dict[str, TransferError] | None, said: OnState) -> None:
        self.destination, self.sink, self.totals, self.failures, self.said = destination, sink, totals, failures, said
        self.done: dict[str, FileDone] = {}
        self.arrived: dict[str, int] = {}  # rel → bytes of the file as it landed
        self.busy = 0

    async def one(self, file: RemoteFile, fetch: Fetch, others: int, tailing: asyncio.Event | None = None) -> None:
        totals = self.totals
        file_sink = FileSink(totals, file.rel, self.sink, others, tailing)
        self.said(file.rel, FILE_MOVING, None)
        try:
            path = self.destination.file(file.saved or self.destination.claim(file.rel))
            outcome = await fetch(file, path, file_sink)
        except TransferError as exc:
            totals.live.pop(file.rel, None)
            totals.live_streams.pop(file.rel, None)
            if self.failures is None:
                raise
            self.failures[file.rel] = exc
            self.said(file.rel, FILE_FAILED, exc)
            return
        set_mtime(path, file.mtime)
        self.done[file.rel] = outcome
        self.arrived[file.rel] = os.path.getsize(path)
        totals.live.pop(file.rel, None)
        totals.live_streams.pop(file.rel, None)
        totals.done += self.arrived[file.rel]
        totals.report(self.sink)
        self.said(file.rel, FILE_DONE, None)

    async def small_one(self, file: RemoteFile, fetch: Fetch, gate: asyncio.Semaphore,
                        connections: int | None) -> None:
        async with gate:
            self.busy += 1
            self.totals.streams = max(self.totals.streams, min(self.busy, connections or self.busy))
            try:
                await self.one(file, fetch, 0)
            finally:
                self.busy -= 1

    async def large_lane(self, queue, fetch: Fetch, others: int) -> None:
        """The lanes share one iterator: each takes the next file when it is free, or once the one it fetches
        is in its tail (``FileSink.tail``); then two files of a lane are in flight at most."""
        flying: list[asyncio.Future] = []
        try:
            for file in queue:
                tailing = asyncio.Event()
                current = asyncio.ensure_future(self.one(file, fetch, others, tailing))
                flying.append(current)
                told = asyncio.ensure_future(tailing.wait())
                try:
                    await asyncio.wait([current, told], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    told.cancel()
                for earlier in flying[:-1]:  # the file before, in its tail: done before a third begins
                    await earlier
                if current.done():
                    await current  # a failure that ends the job ends it here, as it did file by file
                flying = [current]
            for last in flying:
                await last
        finally:
            for task in flying:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*flying, return_exceptions=True)

    def outcome(self, files: list[RemoteFile], smalls: int, larges: int) -> FileOutcome:
        done, totals = self.done, self.totals
        streams = max([totals.streams, totals.peak] + [d.streams + (1 if smalls else 0) for d in done.values()])
        methods = Counter(d.method for d in done.values())
        shape = f"{counted(len(files), 'file')} ({smalls} one request each, {larges} in parallel streams)"
        how = "; ".join(f"{m} ({counted(n, 'file')})" for m, n in methods.most_common())
        return FileOutcome(
            bytes=sum(self.arrived.values()), moved=sum(d.moved for d in done.values()),
            streams=streams, sha256=manifest_digest({rel: d.sha256 for rel, d in done.items()}),
            verified=bool(done) and all(d.verified for d in done.values()),
            verify_method=shape + ("; " + how if how else ""),
        )
