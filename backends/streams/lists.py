"""List jobs: the files a catalogue names (an accession's runs), fetched into one folder as one job.

A catalogue gives each file's address, size and checksum, so nothing is listed or probed: the backend only
fetches (``ListFetcher``). This module holds what every such backend shares:

* which files are here already and verified (``split_kept``): the same size and checksum, read again, except
  for a file this folder's ``VerifiedRecord`` says Ferry checked and that still has the size and time it had
  then (rsync's quick check), so a second run over a 2 TB study does not read 2 TB back;
* the budget of connections to the host, shared between the small-file lane and the large-file lanes
  (``budget_split``);
* the job's one error when files failed (``failure``): the worst kind among them, and a sentence naming them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path

from ..core.base import (
    FILE_DONE,
    FILE_KEPT,
    FILE_WAITING,
    FileStatesSink,
    ListedFile,
    Result,
    Sink,
    TransferRequest,
)
from ..core.errors import Corrupt, TransferError, Transient, Unreachable
from ..core.urls import host_of
from .folder import Fetch, RemoteFile, Totals, fetch_folder, hashers_for, plan, safe_rel
from .hashing import hash_file

#: large files fetched at once, each with its share of the budget (start-up overlaps; one slow file does not
#: hold the others)
LARGE_AT_ONCE = 4
#: failed files a job's sentence names one by one; the rest are counted
NAMED = 4
SAVE_EVERY = 32  # verified files between writes of the record


class VerifiedRecord:
    """The files of one destination folder that Ferry fetched and checked: name → size, mtime, checksum."""

    def __init__(self, request: TransferRequest) -> None:
        self.path: Path | None = None
        self.entries: dict[str, list] = {}
        self.unsaved = 0
        if request.state_dir:
            key = hashlib.sha256(os.path.abspath(request.dest).encode()).hexdigest()[:20]
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
        return entry == [st.st_size, st.st_mtime_ns, _said(file)]

    def add(self, file: ListedFile, path: Path) -> None:
        if not file.checksum:
            return
        try:
            st = path.stat()
        except OSError:
            return
        self.entries[file.name] = [st.st_size, st.st_mtime_ns, _said(file)]
        self.unsaved += 1
        if self.unsaved >= SAVE_EVERY:
            self.save()

    def save(self) -> None:
        if self.path is None or not self.unsaved:
            return
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"folder": os.path.dirname(str(self.path)), "files": self.entries}))
            os.replace(tmp, self.path)
            self.unsaved = 0
        except OSError:
            pass  # the record only saves reading files again; without it they are read again


def _said(file: ListedFile) -> str:
    return f"{file.checksum.algorithm}:{file.checksum.hexdigest.lower()}" if file.checksum else ""


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


async def split_kept(request: TransferRequest, record: VerifiedRecord,
                     sink: Sink) -> tuple[list[ListedFile], list[ListedFile]]:
    """(files already here and verified, files to fetch); each file's first state goes to the sink."""
    dest = Path(request.dest)
    kept, todo = [], []
    for file in request.options.files:
        safe_rel(file.name)
        path = dest / file.name
        here = record.holds(file, path) or await asyncio.to_thread(verified_here, path, file)
        if here:
            record.add(file, path)
        (kept if here else todo).append(file)
        tell(sink, file.name, FILE_KEPT if here else FILE_WAITING)
    return kept, todo


def tell(sink: Sink, name: str, state: str, error: TransferError | None = None) -> None:
    if isinstance(sink, FileStatesSink):
        sink.file_state(name, state, str(error) if error else None, error.kind if error else None)


def budget_split(budget: int, smalls: int, larges: int) -> tuple[int, int, int]:
    """(small files at once, large files at once, streams for each large file) within ``budget`` connections
    (at least one for each lane that has files)."""
    budget = max(1, budget)
    if not larges:
        return min(budget, max(1, smalls)), 0, 0
    small_share = min(smalls, budget // 2)
    lanes = max(1, min(LARGE_AT_ONCE, larges, budget - small_share))
    each = max(1, (budget - small_share) // lanes)
    return (max(1, small_share) if smalls else 0), lanes, each


def failure(failed: dict[str, TransferError], files: dict[str, ListedFile], fetched: int,
            kept: int) -> TransferError:
    """One error for the job: a sentence naming the files that failed (and what they belong to) and how the
    others fared, of the worst kind among them (a wrong checksum is not retried; a server that went away is)."""
    total = len(failed) + fetched + kept
    named = []
    for name, exc in list(failed.items())[:NAMED]:
        label = files[name].label
        named.append(f"{label + ': ' if label else ''}{name}: {str(exc).rstrip('.')}")
    more = f"; and {len(failed) - NAMED} more" if len(failed) > NAMED else ""
    others = f"{fetched} fetched and checked" + (f", {kept} already here and verified" if kept else "")
    text = (f"{len(failed)} of {total} files did not arrive ({others}): " + "; ".join(named) + more + ". Run the "
            "same command again to fetch what failed; verified files are kept.")
    errors = list(failed.values())
    final = [e for e in errors if not e.retryable and not isinstance(e, Unreachable)]
    if final:
        cls = type(final[0])
    elif all(isinstance(e, Unreachable) for e in errors):
        cls = Unreachable
    else:
        cls = Transient
    try:
        return cls(text)
    except TypeError:
        return Corrupt(text) if isinstance(final[0], Corrupt) else TransferError(text)


async def fetch_listed(request: TransferRequest, sink: Sink, *, small: Fetch, large: Fetch, large_from: int,
                       limiter, small_cap: int | None = None) -> tuple[Result, int]:
    """The list job every ``ListFetcher`` runs with its own ``small`` and ``large`` fetches: what is here and
    verified is kept, the rest fetched within the budget (``max_streams``; ``small_cap``: at most this many
    small files at once, for servers that take few connections), each file's state told, the record kept.
    Returns the result and the streams each large file may use."""
    began = time.monotonic()
    record = VerifiedRecord(request)
    listed = {f.name: f for f in request.options.files}
    dest = Path(request.dest)
    try:
        kept, todo = await split_kept(request, record, sink)
        files = [RemoteFile(f.name, f.size, None, f.address) for f in todo]
        folders = sorted({str(Path(f.name).parent) for f in todo} - {"."})
        plan(files, folders, dest, replace(request.options, overwrite=True), None)  # names checked, room made
        smalls = sum(1 for f in files if f.size is not None and f.size < large_from)
        at_once, large_at_once, _ = budget_split(request.options.max_streams, smalls, len(files) - smalls)
        failures: dict[str, TransferError] = {}

        def on_state(name: str, state: str, error: TransferError | None) -> None:
            if state == FILE_DONE:
                record.add(listed[name], dest / name)
            tell(sink, name, state, error)

        sink.stage("transferring")
        outcome = await fetch_folder(files, dest, sink, small=small, large=large, large_from=large_from,
                                     at_once=min(at_once, small_cap or at_once),
                                     totals=Totals(sum(f.size or 0 for f in files), limiter=limiter),
                                     large_at_once=large_at_once, failures=failures, on_state=on_state)
    finally:
        record.save()
    fetched = len(files) - len(failures)
    if failures:
        raise failure(failures, listed, fetched, len(kept))
    sink.stage("verifying")
    notes = [f"{len(listed)} listed files: {fetched} fetched"
             + (f", {len(kept)} already here and verified (not fetched again)" if kept else "") + "."]
    first = next(iter(listed.values()), None)
    return Result(bytes=outcome.bytes, seconds=time.monotonic() - began, streams=outcome.streams,
                  sha256=outcome.sha256, verified=outcome.verified or not files,
                  verify_method=outcome.verify_method if files else "every file already here and verified",
                  peer_host=host_of(first.address) if first else None, bytes_fetched=outcome.moved, notes=notes)


def large_streams(request: TransferRequest, large_from: int) -> int:
    """The streams each large file of this list may use (its share of the budget)."""
    files = request.options.files
    smalls = sum(1 for f in files if f.size is not None and f.size < large_from)
    return budget_split(request.options.max_streams, smalls, len(files) - smalls)[2] or 1


def large_options(request: TransferRequest, file: ListedFile, streams: int):
    """A large listed file's options: its published checksum, its share of the budget, no list."""
    options = request.options
    return replace(options, overwrite=True, name_from_source=False, files=(), checksum=file.checksum,
                   max_streams=streams,
                   streams=min(options.streams, streams) if isinstance(options.streams, int) else "auto")


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


def listed_hashers(file: ListedFile) -> tuple[str, str] | None:
    """The sidecar-shaped hint ``hashers_for`` takes: SHA-256 always, plus the published algorithm."""
    return (file.checksum.algorithm, "") if file.checksum else None


class ListedChecks:
    """What every backend's list fetch shares, as a mix-in over its folder fetch: a small file hashed for the
    checksum its catalogue published, and a large file's check in the words the job's summary groups by.
    Needs ``listed`` (name → ``ListedFile``)."""

    listed: dict[str, ListedFile]

    def _hashers(self, file) -> dict:
        return hashers_for(listed_hashers(self.listed[file.rel]))

    def _said(self, result: Result) -> str:
        if result.verified:
            return result.verify_method.split("; ")[0]
        return "size checked; " + result.verify_method.split("; ", 1)[-1]
