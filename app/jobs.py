"""The job model: one transfer the user asked for, and the states it moves through.

    queued → running → verifying → done
       ↑  ↘     ↓  ↘        ↘ failed → (retry) → queued
       └── paused   cancelled

``JobView`` is an immutable snapshot: the only thing that leaves the engine
thread, so the UI and the CLI never share mutable state with it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from enum import Enum

from backends.core.base import TransferOptions


class JobState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    VERIFYING = "verifying"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def active(self) -> bool:
        return self in (JobState.RUNNING, JobState.VERIFYING)

    @property
    def terminal(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class JobView:
    id: int
    source: str
    dest: str
    backend: str
    state: JobState
    bytes_total: int | None = None
    bytes_done: int = 0
    rate: float = 0.0  # bytes per second, recent
    eta: float | None = None  # seconds
    streams: int = 0
    attempts: int = 0
    error: str | None = None
    error_kind: str | None = None
    notes: tuple[str, ...] = ()
    result: dict | None = None  # the backend's Result as a dict, once done
    stream_rates: tuple[float, ...] = ()  # bytes/s of each live stream
    #: a list job's files: name → (state, the error's sentence, its kind); see ``FileStatesSink``
    files: dict[str, tuple[str, str | None, str | None]] = field(default_factory=dict)
    seeding: bool = False  # a job that serves a torrent's data (``labferry seed``, the Seeding tab)
    #: what a running job waits for instead of moving data ("collab (its server refuses connections)"), or None
    waiting: str | None = None
    #: the saved site the job was made from, named wherever the job is shown ("lab-web → this computer")
    site: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["state"] = self.state.value
        d["notes"] = list(self.notes)
        return d


@dataclass
class Job:
    id: int
    source: str
    dest: str
    backend: str
    options: TransferOptions
    state: JobState = JobState.QUEUED
    position: float = 0.0
    bytes_total: int | None = None
    bytes_done: int = 0
    attempts: int = 0
    error: str | None = None
    error_kind: str | None = None
    created: float = field(default_factory=time.time)
    # stored with the job's state (a finished job in the window's queue shows them after a restart)
    notes: list[str] = field(default_factory=list)
    result: dict | None = None
    files: dict[str, tuple[str, str | None, str | None]] = field(default_factory=dict)
    # live only, never stored
    rate: float = 0.0
    eta: float | None = None
    streams: int = 0
    stream_rates: tuple[float, ...] = ()
    waiting: str | None = None

    def view(self) -> JobView:
        return JobView(
            id=self.id, source=self.source, dest=self.dest, backend=self.backend, state=self.state,
            bytes_total=self.bytes_total, bytes_done=self.bytes_done, rate=self.rate, eta=self.eta,
            streams=self.streams, attempts=self.attempts, error=self.error, error_kind=self.error_kind,
            notes=tuple(self.notes[-50:]), result=self.result, stream_rates=self.stream_rates,
            files=dict(self.files), seeding=bool(self.options.backend_options.get("seed")), waiting=self.waiting,
            site=self.options.site,
        )

    def copy(self) -> Job:
        return replace(self, notes=list(self.notes), files=dict(self.files))
