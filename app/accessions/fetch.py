"""The files of a plan through the engine: a few at once under one budget of streams, each checked by its MD5.

Each file is one request from the front door (an HTTPS download with its published MD5 as the checksum, which
the backend computes while the data arrives beside SHA-256), so resume, retries, the rate cap and the history
work as for any copy. A file already in the folder under its final name with the published size and MD5 is
not fetched again; a mismatch leaves nothing under the final name (the backend's rule) and fails that file only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.engine import Engine, JobState
from app.requests import Defaults, Overrides, resolve
from backends.core.base import Checksum
from backends.streams.hashing import hash_file
from backends.streams.partfile import room_for

from .ena import Plan, RemoteFile

#: the streams every file fetched at once shares; large files go four at a time (each budget // 4 streams),
#: a study of small files as many at a time as there are streams (one each: a small file is one request)
JOBS = 4
BUDGET = 16
SMALL = 64 << 20


@dataclass
class Outcome:
    done: list[RemoteFile] = field(default_factory=list)
    kept: list[RemoteFile] = field(default_factory=list)  # already here and verified: not fetched again
    failed: list[tuple[RemoteFile, str, str]] = field(default_factory=list)  # (file, sentence, error kind)
    bytes_moved: int = 0
    seconds: float = 0.0

    @property
    def verified_names(self) -> set[str]:
        return {f.name for f in (*self.done, *self.kept)}


@dataclass
class Progress:
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    rate: float  # bytes/s over the whole run


def already_here(f: RemoteFile, folder: Path) -> bool:
    """The final name holds the published bytes: the same size, and the same MD5 (read again: a file of that
    name may come from elsewhere)."""
    path = folder / f.name
    try:
        if not path.is_file() or path.stat().st_size != f.size:
            return False
    except OSError:
        return False
    return not f.md5 or hash_file(path, ("md5",))["md5"] == f.md5.lower()


def lanes(todo: list[RemoteFile], budget: int) -> tuple[int, int]:
    """(files at once, streams each) within ``budget`` streams: small files one stream each, many at once."""
    budget = max(1, budget)
    if todo and all(0 < f.size <= SMALL for f in todo):
        return budget, 1
    jobs = min(JOBS, budget)
    return jobs, max(1, budget // jobs)


def fetch(plan: Plan, folder: Path, overrides: Overrides, *, defaults: Defaults | None = None, store=None,
          budget: int = BUDGET, on_progress: Callable[[Progress], None] | None = None) -> Outcome:
    outcome = Outcome()
    folder.mkdir(parents=True, exist_ok=True)
    todo = []
    for f in plan.files:
        (outcome.kept if already_here(f, folder) else todo).append(f)
    room_for(folder / ".space", sum(f.size for f in todo), already=_partial_bytes(todo, folder))
    began = time.monotonic()
    jobs, streams = lanes(todo, budget)
    per_file = replace(overrides, max_streams=streams, streams=1 if streams == 1 else overrides.streams)
    if streams == 1:  # small files: the next one goes on a connection the last one warmed (backends/https/pool.py)
        per_file = replace(per_file, backend_options=per_file.backend_options | {"share_connections": True})
    engine = Engine(run_queue=False, max_jobs=jobs).start()
    try:
        ids = {}
        for f in todo:
            request = resolve(f.url, str(folder / f.name),
                              replace(per_file, checksum=Checksum("md5", f.md5.lower(), "ENA") if f.md5 else None),
                              defaults=defaults, store=store)
            ids[request.submit_to(engine).id] = f
        pending = dict(ids)
        kept_bytes = sum(f.size for f in outcome.kept)
        while pending:
            time.sleep(0.25)
            views = {job_id: engine.job(job_id) for job_id in ids}
            for job_id in list(pending):
                view = views[job_id]
                if view.state == JobState.DONE:
                    outcome.done.append(pending.pop(job_id))
                elif view.state.terminal or view.state == JobState.PAUSED:
                    f = pending.pop(job_id)
                    outcome.failed.append((f, f"{f.run}: {f.name}: {view.error or 'did not finish.'}",
                                           view.error_kind or ""))
            if on_progress:
                moved = sum(v.bytes_done for v in views.values())
                on_progress(Progress(len(outcome.done) + len(outcome.kept), len(plan.files), moved + kept_bytes,
                                     plan.total_bytes, moved / max(1e-3, time.monotonic() - began)))
        outcome.bytes_moved = sum(f.size for f in outcome.done)
    finally:
        engine.close()
    outcome.seconds = time.monotonic() - began
    return outcome


def _partial_bytes(todo: list[RemoteFile], folder: Path) -> int:
    """What earlier runs left in ``NAME.part`` files: space already taken."""
    total = 0
    for f in todo:
        try:
            total += min(f.size, (folder / (f.name + ".part")).stat().st_blocks * 512)
        except OSError:
            pass
    return total
