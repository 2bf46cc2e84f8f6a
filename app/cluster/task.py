"""One task of a cluster job, on its node (``labferry cluster-task WORK ROUND K``, run by the batch script).

It takes its share of the plan and fetches it as one ordinary list job of this node's engine: through the
destination module into the shared DEST, each file checked as a single-node copy checks it, part files kept on a
stop so a requeued or resubmitted task resumes them. Its engine keeps its database and records in the work
folder (``task-R-K/``), never in the user's home, where several nodes would share one SQLite file.

Every second it writes ``progress-R-K.json`` (node, state, bytes, rate, files), which the watcher on the login
node reads; SIGTERM (Slurm's warning before the time limit, ``scancel``, a preemption) pauses the job, writes
the state ``stopped`` and exits 143.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import replace
from pathlib import Path

from app import stops
from app.requests import overrides_from_wire, resolve_list
from backends.core.base import FILE_DONE, FILE_KEPT
from backends.core.errors import TransferError
from backends.destination import write_atomic

from .plan import load, share_of

#: seconds between two progress files
EVERY = 1.0


def progress_path(work: Path, number: int, task: int) -> Path:
    return work / f"progress-{number}-{task}.json"


class Progress:
    """This task's progress file, rewritten whole (small, atomic: the watcher never reads half of one)."""

    def __init__(self, work: Path, number: int, task: int, files: int, total: int) -> None:
        self.path = progress_path(work, number, task)
        self.base = {"round": number, "task": task, "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                     "job": os.environ.get("SLURM_JOB_ID", ""), "files": files, "bytes_total": total}
        self.written = 0.0

    def write(self, state: str, *, force: bool = False, **fields) -> None:
        now = time.monotonic()
        if not force and now - self.written < EVERY:
            return
        self.written = now
        try:
            write_atomic(self.path, json.dumps({**self.base, "state": state, "at": time.time(), **fields}).encode())
        except TransferError:
            pass  # the watcher shows the last one it read; the data is what counts


def run_task(work: Path, number: int, task: int) -> int:
    """Fetch this task's share; the exit status the CLI gives (0: every file of the share checked)."""
    from app.engine import Engine, JobState

    plan = load(work)
    names = set(share_of(work, number, task))
    files = [f for f in plan.files if f.name in names]
    progress = Progress(work, number, task, len(files), sum(f.size or 0 for f in files))
    progress.write("starting", force=True, bytes_done=0, rate=0.0)
    overrides = overrides_from_wire(plan.overrides)
    overrides = replace(overrides, max_streams=plan.budget)
    request = resolve_list(f"{plan.label} (task {task})", files, plan.dest, overrides)
    home = work / f"task-{number}-{task}"
    home.mkdir(mode=0o700, exist_ok=True)
    engine = Engine(home / "ferry.db", run_queue=False, max_jobs=1).start()
    view = None
    try:
        job_id = request.submit_to(engine).id
        while True:
            try:
                view = engine.wait(job_id, timeout=EVERY)
            except TimeoutError:
                view = engine.job(job_id)
            if view.state.terminal:
                break
            progress.write("running", bytes_done=view.bytes_done, rate=view.rate, done=_done(view))
    except stops.STOPS as stop:  # the time limit's warning, scancel, a preemption: resumable
        progress.write("stopped", force=True, bytes_done=view.bytes_done if view else 0, rate=0.0,
                       done=_done(view) if view else 0, error=stops.said(stop))
        engine.close(timeout=20)
        return stops.status(stop)
    engine.close(timeout=20)
    state = "done" if view.state == JobState.DONE else "failed"
    progress.write(state, force=True, bytes_done=view.bytes_done, rate=0.0, done=_done(view), error=view.error,
                   error_kind=view.error_kind)
    return 0 if state == "done" else 1


def _done(view) -> int:
    return sum(1 for entry in view.files.values() if entry[0] in (FILE_DONE, FILE_KEPT))
