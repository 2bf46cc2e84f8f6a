"""The files of a plan through the engine as one job: one queue row, one history entry, one session.

The plan's files go through the front door as one list request (``app.requests.resolve_list``) that the HTTPS
backend fetches as a ``ListFetcher``: small files many at a time over reused connections, large ones split
and a few at once, all within one budget of connections to the host (``--host-connections``), each checked
against its published MD5 and size while it arrives. A file already here and verified is not fetched again; a
mismatch leaves nothing under the final name and fails that file only; resume, retries, the rate cap and the
history work as for any copy.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.requests import Defaults, Overrides, resolve_list
from app.stops import STOPS
from backends.core.base import FILE_DONE, FILE_FAILED, FILE_KEPT, Checksum, ListedFile
from backends.core.errors import LocalError
from backends.destination import Destination, room_for
from backends.host import portable

from .ena import Plan, RemoteFile

if TYPE_CHECKING:  # the engine (~50 ms of imports) is loaded while ENA's portal is asked (``app/cli/accession``)
    from app.engine import Engine, RetryPolicy

#: connections to the files' host that the study's files share (``--host-connections``): 32, half what
#: ``aria2c -j4 -x16`` may open; a thousand small runs went 1.06× aria2c at 16 and 1.21× at 32 (docs/benchmarks.md)
BUDGET = 32
#: the most ``--host-connections`` takes: each small file's lane is a thread, and an archive is one host
HOST_CONNECTIONS_MOST = 256


@dataclass
class Outcome:
    done: list[RemoteFile] = field(default_factory=list)
    kept: list[RemoteFile] = field(default_factory=list)  # already here and verified: not fetched again
    failed: list[tuple[RemoteFile, str, str]] = field(default_factory=list)  # (file, sentence, error kind)
    bytes_moved: int = 0
    seconds: float = 0.0
    job_id: int | None = None
    stopped: bool = False  # a signal ended it before the end
    left_running: bool = False  # an engine's thread outlived its close (the process then ends the usual way)

    @property
    def verified_names(self) -> set[str]:
        return {f.name for f in (*self.done, *self.kept)}

    def add(self, other: Outcome) -> None:
        """A later job's outcome (the runs completed from NCBI) counted in with this one's."""
        self.done += other.done
        self.kept += other.kept
        self.failed += other.failed
        self.bytes_moved += other.bytes_moved
        self.seconds += other.seconds
        self.stopped = self.stopped or other.stopped
        self.left_running = self.left_running or other.left_running


@dataclass
class Progress:
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    rate: float  # bytes/s over the whole run


#: who published each file's MD5
SAID_BY = {"ena": "ENA's report", "ncbi": "NCBI's SRA Data Locator"}


def listed(files: list[RemoteFile], *, other_route: bool = False) -> list[ListedFile]:
    """The files as the list job takes them: address (or the other route's), name, the report's size and MD5."""
    return [ListedFile(f.other_url if other_route else f.url, f.name, f.size or None,
                       Checksum("md5", f.md5.lower(), SAID_BY[f.source]) if f.md5 else None, f.run)
            for f in files]


#: a second job's label ends so (the accession's own label before it): it is not sent round again
OTHER_ROUTE = " (other route)"
#: what may go better by the other route: the server or the path, not the bytes or this computer
OTHER_ROUTE_FOR = ("not-found", "unreachable", "transient", "remote-changed", "tls", "permission-denied",
                   "web-page", "unavailable", "error")


def fetch(plan: Plan, folder: Path, overrides: Overrides, *, defaults: Defaults | None = None, store=None,
          budget: int = BUDGET, on_progress: Callable[[Progress], None] | None = None,
          on_switch: Callable[[int, str], None] | None = None, retry: RetryPolicy | None = None,
          outcome: Outcome | None = None) -> Outcome:
    """The plan's files as one job; the files that failed for a reason the other route may not have (a 550 on
    one mirror, an FTP reset, a proxy refusing HTTPS) are tried once more by it, as a second job. ``outcome``:
    filled as the jobs end, so a caller stopped by a signal still knows what was verified."""
    outcome = outcome if outcome is not None else Outcome()
    began = time.monotonic()
    try:
        return _fetch(plan, folder, overrides, defaults, store, budget, on_progress, on_switch, retry, outcome,
                      began)
    finally:
        outcome.bytes_moved = sum(f.size for f in outcome.done)
        outcome.seconds = time.monotonic() - began


def _fetch(plan: Plan, folder: Path, overrides: Overrides, defaults, store, budget: int, on_progress, on_switch,
           retry: RetryPolicy | None, outcome: Outcome, began: float) -> Outcome:
    Destination(folder).folder("")  # made, or why not in a sentence (read-only, permission, a file there)
    check_refusals(folder)
    check_room(plan, folder)
    overrides = replace(overrides, max_streams=budget)
    _run(plan.label, listed(plan.files), plan, folder, overrides, defaults, store, outcome, on_progress, began,
         retry)
    again = [f for f, _, kind in outcome.failed if kind in OTHER_ROUTE_FOR and f.other_url]
    if again:
        other = "ftp" if plan.route == "https" else "https"
        if on_switch:
            on_switch(len(again), other)
        outcome.failed = [entry for entry in outcome.failed if entry[0] not in again]
        _run(plan.label + OTHER_ROUTE, listed(again, other_route=True), plan, folder, overrides, defaults, store,
             outcome, on_progress, began, retry)
    return outcome


def _run(label: str, files: list[ListedFile], plan: Plan, folder: Path, overrides: Overrides, defaults, store,
         outcome: Outcome, on_progress, began: float, retry: RetryPolicy | None = None) -> None:
    """One list job to its end; its files' fates added to ``outcome``."""
    from app.engine import Engine, JobState

    request = resolve_list(label, files, folder, overrides, defaults=defaults, store=store)
    names = {f.name for f in files}
    engine = Engine(run_queue=False, max_jobs=1, retry=retry).start()
    view = None
    try:
        job_id = outcome.job_id = request.submit_to(engine).id
        view = engine.job(job_id)
        while True:
            try:
                view = engine.wait(job_id, timeout=0.25)
            except TimeoutError:
                view = engine.job(job_id)
            ended = view.state.terminal or view.state == JobState.PAUSED
            if on_progress and not ended:
                here = sum(f.size for f in plan.files if view.files.get(f.name, ("",))[0] == FILE_KEPT)
                before = sum(f.size for f in outcome.done)
                done = len(outcome.done) + len(outcome.kept) + sum(
                    1 for state, *_ in view.files.values() if state in (FILE_DONE, FILE_KEPT))
                on_progress(Progress(done, len(plan.files), before + view.bytes_done + here, plan.total_bytes,
                                     (before + view.bytes_done) / max(1e-3, time.monotonic() - began)))
            if ended:
                break
    except STOPS:  # Ctrl-C or SIGTERM: the job pauses (resumable); what it verified so far is counted
        outcome.stopped = True
        view = _last(engine, view)
        raise
    finally:
        _record(plan, names, view, outcome)
        try:
            engine.close(timeout=20)
        except (*STOPS, TimeoutError):
            pass
        outcome.left_running = outcome.left_running or engine.running


def _last(engine: Engine, view):
    """The job paused, as it stands now (a second signal while it pauses keeps the view already had)."""
    if view is None:
        return None
    try:
        return engine.pause(view.id)
    except (*STOPS, TimeoutError):
        return view


def _record(plan: Plan, names: set[str], view, outcome: Outcome) -> None:
    """Each file's fate in ``outcome`` (from the job's last view): fetched, kept, or failed with its sentence;
    a job stopped before the end counts only what it verified."""
    if view is None:
        return
    from app.engine import JobState

    for f in plan.files:
        if f.name not in names:
            continue
        state, error, kind = view.files.get(f.name, (None, None, None))
        if state == FILE_DONE or (state is None and view.state == JobState.DONE):
            outcome.done.append(f)
        elif state == FILE_KEPT:
            outcome.kept.append(f)
        elif outcome.stopped:
            continue  # not a failure: the same command resumes it
        else:
            why = error or view.error or "did not finish."
            kind = (kind if state == FILE_FAILED else None) or view.error_kind or ""
            outcome.failed.append((f, f"{f.run + ': ' if f.run else ''}{f.name}: {why}", kind))


def check_refusals(folder: Path) -> None:
    """A folder no file can be written to is said before the portal's files are asked for, not found out by each
    file: read-only, or not this user's to write."""
    if portable.read_only_fs(folder):
        raise LocalError(f"{folder} is on a read-only file system. Choose another destination folder.")
    if not os.access(folder, os.W_OK):
        raise LocalError(f"Ferry cannot write to {folder} (permission denied). Choose a folder you can write to.")


def check_room(plan: Plan, folder: Path) -> None:
    """Refuse in a sentence when ``folder``'s disk cannot take what the plan still needs: the files not yet here
    at their size, less what earlier runs left in their ``NAME.part``."""
    if not holds_anything(folder):  # a new folder (the usual first fetch): two looks a file spared, ~20 ms a thousand
        room_for(folder / ".space", plan.total_bytes)
        return
    missing = [f for f in plan.files if not _same_size_here(f, folder)]
    room_for(folder / ".space", sum(f.size for f in missing), already=_partial_bytes(missing, folder))


def holds_anything(folder: Path) -> bool:
    """Whether ``folder`` holds any entry (one that cannot be looked at counts as holding: looked at closely)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _same_size_here(f: RemoteFile, folder: Path) -> bool:
    try:
        return (folder / f.name).stat().st_size == f.size
    except OSError:
        return False


def _partial_bytes(todo: list[RemoteFile], folder: Path) -> int:
    """What earlier runs left in ``NAME.part`` files: space already taken."""
    total = 0
    for f in todo:
        try:
            total += min(f.size, (folder / (f.name + ".part")).stat().st_blocks * 512)
        except OSError:
            pass
    return total
