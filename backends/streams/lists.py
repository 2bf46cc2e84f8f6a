"""List jobs: the files a catalogue names (an accession's runs), fetched into one folder as one job.

A catalogue gives each file's address, size and checksum, so nothing is listed or probed: the backend only
fetches (``ListFetcher``). This module holds what every such backend shares:

* which files are here already and verified (``split_kept``): the same size and checksum, read again, except
  for a file this folder's ``VerifiedRecord`` says Ferry checked and that still has the size and time it had
  then (rsync's quick check), so a second run over a 2 TB study does not read 2 TB back;
* the budget of connections to the host, shared between the small-file lane and the large-file lanes
  (``budget.py``);
* the job's one error when files failed (``failure``): the worst kind among them, and a sentence naming them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from dataclasses import replace
from functools import cached_property, lru_cache
from pathlib import Path

from ..core.abilities import FileStatesSink
from ..core.base import FILE_DONE, FILE_KEPT, FILE_WAITING, ListedFile, Result, Sink, TransferOptions, TransferRequest
from ..core.errors import Corrupt, TransferError, Transient, Unreachable
from ..core.urls import host_of
from ..core.words import counted, some_of
from ..destination import Destination
from .budget import WARM_AT_ONCE, WARM_FROM, budget_split
from .folder import RemoteFile, Totals, fetch_folder, hashers_for, plan
from .hashing import hash_file

#: failed files a job's sentence names one by one; the rest are counted
NAMED = 4
#: the record is written after this many verified files, and at most once in SAVE_SECONDS (it is rewritten
#: whole: a thousand small runs saved every 32 files spent ~0.1 s of the event loop encoding it)
SAVE_EVERY = 32
SAVE_SECONDS = 2.0


class VerifiedRecord:
    """The files of one destination folder that Ferry fetched and checked: name → size, mtime, checksum."""

    def __init__(self, request: TransferRequest) -> None:
        self.path: Path | None = None
        self.entries: dict[str, list] = {}
        self.unsaved = 0
        self.saved_at = time.monotonic()
        self.dest = os.path.abspath(request.dest)  # the folder it describes, for whoever reads the record
        if request.state_dir:
            key = hashlib.sha256(self.dest.encode()).hexdigest()[:20]
            self.path = request.state_folder("verified") / f"{key}.json"
            try:
                self.entries = json.loads(self.path.read_text()).get("files", {})
            except (OSError, ValueError, AttributeError):
                self.entries = {}

    def holds(self, file: ListedFile, path: Path) -> bool:
        entry = self.entries.get(file.name)
        if not entry or not file.checksum:
            return False
        try:
            st = path.stat()
        except OSError:
            return False
        return entry == record_entry(file, st)

    def add(self, file: ListedFile, path: Path) -> None:
        if not file.checksum:
            return
        try:
            st = path.stat()
        except OSError:
            return
        self.entries[file.name] = record_entry(file, st)
        self.unsaved += 1
        if self.unsaved >= SAVE_EVERY and time.monotonic() - self.saved_at >= SAVE_SECONDS:
            self.save()

    def save(self) -> None:
        if self.path is None or not self.unsaved:
            return
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"folder": self.dest, "files": self.entries}))
            os.replace(tmp, self.path)
            self.unsaved = 0
            self.saved_at = time.monotonic()
        except OSError:
            pass  # the record only saves reading files again; without it they are read again


def record_entry(file: ListedFile, st: os.stat_result) -> list:
    """What the record keeps of a checked file (and what a later look compares): size, time, the checksum."""
    said = f"{file.checksum.algorithm}:{file.checksum.hexdigest.lower()}" if file.checksum else ""
    return [st.st_size, st.st_mtime_ns, said]


def verified_here(path: Path, file: ListedFile) -> bool:
    """The final name holds the published bytes: the same size, and the same checksum, read again."""
    try:
        if not path.is_file() or (file.size is not None and path.stat().st_size != file.size):
            return False
    except OSError:
        return False
    if not file.checksum:
        return False  # no way to know it is the same file: fetched again
    algorithm = file.checksum.algorithm
    return hash_file(path, (algorithm,))[algorithm] == file.checksum.hexdigest.lower()


async def split_kept(request: TransferRequest, record: VerifiedRecord, destination: Destination,
                     sink: Sink) -> tuple[list[ListedFile], list[ListedFile]]:
    """(files already here and verified, files to fetch); each file's first state goes to the sink. Every name
    the catalogue gave is claimed here, in the catalogue's order (``Destination``). The files are looked at in
    one worker thread, where a hand-over a file cost a study of a thousand runs ~0.1 s before its first GET."""
    files = request.options.files
    paths = [destination.path(destination.claim(file.name)) for file in files]
    stop = threading.Event()
    try:
        here = await asyncio.to_thread(_kept_here, record, files, paths, stop)
    finally:
        stop.set()  # a cancel ends the look after the file it is reading
    kept, todo = [], []
    for file, path, held in zip(files, paths, here, strict=True):
        if held:
            record.add(file, path)
        (kept if held else todo).append(file)
        tell(sink, file.name, FILE_KEPT if held else FILE_WAITING)
    return kept, todo


def _kept_here(record: VerifiedRecord, files, paths: list[Path], stop: threading.Event) -> list[bool]:
    """Whether each file is here and verified: in the record, or read again (a blocking helper)."""
    held = []
    for file, path in zip(files, paths, strict=True):
        if stop.is_set():
            break
        held.append(record.holds(file, path) or verified_here(path, file))
    return held


def tell(sink: Sink, name: str, state: str, error: TransferError | None = None) -> None:
    if _follows_files(type(sink)):
        sink.file_state(name, state, str(error) if error else None, error.kind if error else None)


@lru_cache(maxsize=32)
def _follows_files(kind: type) -> bool:
    """Whether sinks of this class take each file's state: asked once a class, where a runtime Protocol's
    ``isinstance`` walks its members every time (three times a file, ~1 % of a thousand small runs)."""
    return issubclass(kind, FileStatesSink)


def failure(failed: dict[str, TransferError], files: dict[str, ListedFile], fetched: int,
            kept: int) -> TransferError:
    """One error for the job: a sentence naming the files that failed (and what they belong to) and how the
    others fared, of the worst kind among them (a wrong checksum is not retried; a server that went away is)."""
    total = len(failed) + fetched + kept
    named = some_of([f"{files[name].label + ': ' if files[name].label else ''}{name}: {str(exc).rstrip('.')}"
                     for name, exc in failed.items()], NAMED)
    others = f"{fetched} fetched and checked" + (f", {kept} already here and verified" if kept else "")
    text = (f"{len(failed)} of {total} files did not arrive ({others}): {named}. Run the same command again to fetch "
            "what failed; verified files are kept.")
    errors = list(failed.values())
    final = [e for e in errors if not e.retryable and not isinstance(e, Unreachable)]
    if final:
        cls = type(final[0])
    elif all(isinstance(e, Unreachable) for e in errors):
        cls = Unreachable
    else:
        cls = Transient
    return cls(text)  # every TransferError takes its sentence alone (as ``given_up`` relies on too)


def check_listed(file: ListedFile, digests: dict[str, str], written: int) -> tuple[bool, str]:
    """A small listed file against the size and checksum its catalogue published (a mismatch is ``Corrupt``)."""
    where = f"{file.label}: {file.name}" if file.label else file.name
    if file.size is not None and written != file.size:
        raise Corrupt(f"{where} came with {written} bytes where the catalogue says {file.size}. Run the same "
                      "command again; if it happens again the archive's copy differs from its report.")
    checksum = file.checksum
    if checksum is None:
        return False, "no checksum published; size checked"
    actual = digests[checksum.algorithm]
    if actual != checksum.hexdigest.lower():
        raise Corrupt(f"The downloaded data does not match the {checksum.algorithm} checksum in {checksum.source} "
                      f"(expected {checksum.hexdigest[:16]}…, got {actual[:16]}…); nothing was kept under its "
                      "name. Run the same command again, and if it fails again ask the archive whether the "
                      "checksum is current.")
    return True, f"{checksum.algorithm} in {checksum.source} matched"


class ListedChecks:
    """The list job every ``ListFetcher`` runs, as a mix-in over its folder fetch (``_small``, ``_large``,
    ``request``, ``sink``, ``limiter``): what is here and verified is kept, the rest fetched within the budget
    (``max_streams``), each file's state told and the record kept; a small file hashed for and checked against
    what its catalogue published, a large one given its checksum and its share of the budget."""

    request: TransferRequest
    sink: Sink
    limiter: object | None
    #: at most this many small files at once (servers that take few connections: FTP); None: the budget's share
    small_cap: int | None = None
    #: the streams each large file may use, set by ``fetch_listed`` from the budget
    large_streams: int = 1
    #: the connections the large files share, all lanes together (``handoff.Handoff``), set with it
    large_budget: int = 1

    @cached_property
    def listed(self) -> dict[str, ListedFile]:
        return {f.name: f for f in self.request.options.files}

    def _address(self, file: ListedFile) -> str:
        """What the backend's fetches take as a file's address (a URL; FTP: the server's path)."""
        return file.address

    async def fetch_listed(self, large_from: int) -> Result:
        request, sink = self.request, self.sink
        began = time.monotonic()
        record = VerifiedRecord(request)
        destination = Destination(request.dest)
        try:
            kept, todo = await split_kept(request, record, destination, sink)
            files = [RemoteFile(f.name, f.size, None, self._address(f)) for f in todo]
            folders = sorted({str(Path(f.name).parent) for f in todo} - {"."})
            plan(files, folders, destination, replace(request.options, overwrite=True), None)  # folders made
            small_files = [f for f in files if f.size is not None and f.size < large_from]
            small_sizes = [f.size or 0 for f in small_files]
            smalls = len(small_sizes)
            budget, larges = request.options.max_streams, len(files) - smalls
            at_once, large_at_once, each = budget_split(budget, smalls, larges)
            most = (budget - large_at_once * each) if smalls else 0  # what the large files leave of the budget
            if small_sizes and sum(small_sizes) / smalls >= WARM_FROM:
                at_once, most = min(at_once, WARM_AT_ONCE), min(most, WARM_AT_ONCE)
            self.large_streams = max(1, each)
            self.large_budget = max(1, large_at_once * each)
            failures: dict[str, TransferError] = {}

            def on_state(name: str, state: str, error: TransferError | None) -> None:
                if state == FILE_DONE:
                    record.add(self.listed[name], destination.path(destination.claim(name)))
                tell(sink, name, state, error)

            sink.stage("transferring")
            connections = min(at_once, self.small_cap or at_once)
            admitted, connections = self._small_at_once(connections, small_files, min(most, self.small_cap or most))
            outcome = await fetch_folder(files, destination, sink, small=self._small, large=self._large,
                                         large_from=large_from, at_once=admitted,
                                         totals=Totals(sum(f.size or 0 for f in files), limiter=self.limiter),
                                         large_at_once=large_at_once, failures=failures, on_state=on_state,
                                         connections=connections)
        finally:
            record.save()
        fetched = len(files) - len(failures)
        if failures:
            raise failure(failures, self.listed, fetched, len(kept))
        sink.stage("verifying")
        notes = [f"{counted(len(self.listed), 'listed file')}: {fetched} fetched"
                 + (f", {len(kept)} already here and verified (not fetched again)" if kept else "") + "."]
        renamed = destination.renamed_note()
        if renamed:
            notes.append(renamed)
            sink.note(renamed)
        first = next(iter(self.listed.values()), None)
        return Result(bytes=outcome.bytes, seconds=time.monotonic() - began, streams=outcome.streams,
                      sha256=outcome.sha256, verified=outcome.verified or not files,
                      verify_method=outcome.verify_method if files else "every file already here and verified",
                      peer_host=host_of(first.address) if first else None, bytes_fetched=outcome.moved, notes=notes)

    def _small_at_once(self, connections: int, smalls: list[RemoteFile], most: int) -> tuple[int, int]:
        """(small files admitted at once, connections they use): ``connections``, one file each, unless the fetch
        asks for the next file on a connection while the last one arrives, or fetches files in pieces, on up to
        ``most`` connections (``backends/https/lean.py``). ``smalls``: the small files, in the order they are
        fetched."""
        return connections, connections

    def _large_options(self, file) -> TransferOptions:
        """A large listed file's options: its published checksum, its share of the budget, no list."""
        options, streams = self.request.options, self.large_streams
        return replace(options, overwrite=True, name_from_source=False, files=(),
                       checksum=self.listed[file.rel].checksum, max_streams=streams,
                       streams=min(options.streams, streams) if isinstance(options.streams, int) else "auto")

    def _hashers(self, file) -> dict:
        checksum = self.listed[file.rel].checksum
        return hashers_for((checksum.algorithm, "") if checksum else None)  # SHA-256, and the published one

    def _said(self, result: Result) -> str:
        if result.verified:
            return result.verify_method.split("; ")[0]
        return "size checked; " + result.verify_method.split("; ", 1)[-1]
