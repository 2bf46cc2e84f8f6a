"""Running one job: the backend call, retries with backoff, progress ticks, outcome rows.

The engine decides *which* job runs; this module decides what running means.
Retry-or-fail is decided here, once, from the error's class: backends only say
what happened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from dataclasses import asdict, dataclass, replace

from app.jobs import Job, JobState
from backends.core.base import Result, TransferRequest
from backends.core.errors import BadAnswer, TransferError, Unreachable
from backends.core.urls import host_of as peer_host
from backends.core.urls import redact
from backends.host.hosttcp import host_tcp

from .events import NOTE, PROGRESS, PROGRESS_HZ, RETRYING, STATE
from .network_wait import NetworkWait
from .progress import ProgressMeter

log = logging.getLogger(__name__)
SAVE_EVERY = 2.0  # seconds between progress writes to SQLite
#: bytes an attempt must have moved for its fault to count as a new one (the retries start again): a server that
#: trickles a few bytes into each attempt must still run out of retries
MOVING = 1024 * 1024


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; the count restarts whenever bytes moved."""

    max_retries: int = 5
    base: float = 1.0
    cap: float = 60.0
    #: seconds a job whose network is gone waits for it (app/engine/network_wait.py); 0: never waits
    network_wait: float = 12 * 3600.0

    def delay(self, attempt: int) -> float:
        return min(self.cap, self.base * 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)


class JobSink:
    """What a backend reports into; called on the engine's loop thread."""

    def __init__(self, engine, job: Job) -> None:
        self.engine, self.job = engine, job

    def progress(self, bytes_done: int, bytes_total: int | None, streams: int) -> None:
        self.job.bytes_done = bytes_done
        if bytes_total is not None:
            self.job.bytes_total = bytes_total
        self.job.streams = streams

    def stream_rates(self, rates: list[float]) -> None:
        self.job.stream_rates = tuple(rates)

    def file_state(self, name: str, state: str, error: str | None = None, kind: str | None = None) -> None:
        """A list job's file moved on (waiting, fetching, fetched, kept, failed)."""
        self.job.files[name] = (state, error, kind)

    def note(self, message: str) -> None:
        self.job.notes.append(message)
        self.engine.publish(NOTE, self.job, message)

    def stage(self, stage: str) -> None:
        if stage == "verifying" and self.job.state == JobState.RUNNING:
            self.job.state = JobState.VERIFYING
            self.engine.persist(self.job)
            self.engine.publish(STATE, self.job)


class JobRunner:
    def __init__(self, engine, job: Job, source: str, dest: str) -> None:
        self.engine, self.job, self.source, self.dest = engine, job, source, dest  # with passwords: never stored
        self.meter = ProgressMeter()
        self.retries = 0
        self.started = time.time()
        self.network = NetworkWait(self)

    async def run(self) -> Result:
        """Transfer until done; raises the last error when retries run out."""
        sink = JobSink(self.engine, self.job)
        ticker = asyncio.create_task(self._tick())
        try:
            if self.job.options.unpack:  # the archive unpacked as it arrives (``--unpack``)
                from .unpacking import unpacking

                return await unpacking(lambda: self._attempts(sink), self.dest, sink)
            return await self._attempts(sink)
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)

    async def _attempts(self, sink: JobSink) -> Result:
        """The backend's run, again after each fault it may recover from."""
        job, engine = self.job, self.engine
        backend = engine.registry.get(job.backend)
        while True:
            before = job.bytes_done
            try:
                options = self._options()
                request = TransferRequest(self.source, self.dest, options, ask_trust=engine.ask_trust,
                                          state_dir=engine.state_dir, made=await self._made(options))
                log.info("job %s: %s %s → %s (streams %s, attempt %s)", job.id, job.backend, redact(self.source),
                         redact(self.dest), request.options.streams, job.attempts + 1)
                if request.options.files:  # a list job (an accession's files): ``ListFetcher``
                    return await backend.fetch_list(request, sink)
                return await backend.transfer(request, sink)
            except TransferError as exc:
                if isinstance(exc, BadAnswer):  # what this server sent can never become the file: none stays
                    await asyncio.to_thread(backend.discard, request)
                if not self._retryable(exc):
                    raise
                if job.bytes_done - before >= MOVING:
                    job.attempts = 0  # it was moving: this is a new fault, not the same one again
                endpoint = await self.network.gone(exc)
                if endpoint is not None:  # a closed lid, a lost VPN: no attempt is spent while it lasts
                    await self.network.wait(exc, endpoint)
                    self.retries += 1
                    continue
                job.attempts += 1
                if job.attempts > engine.retry.max_retries:
                    raise exc.given_up(job.attempts) from exc
                self.retries += 1
                delay = engine.retry.delay(job.attempts)
                message = f"{exc} Retrying in {delay:.0f} s (attempt {job.attempts} of {engine.retry.max_retries})."
                log.info("job %s: %s", job.id, message)
                job.notes.append(message)
                job.state = JobState.RUNNING
                engine.persist(job)
                engine.publish(RETRYING, job, message)
                await asyncio.sleep(delay)

    def say(self, message: str) -> None:
        """A line in the job's log, shown by the window and the command line as it happens."""
        log.info("job %s: %s", self.job.id, message)
        self.job.notes.append(message)
        self.engine.persist(self.job)
        self.engine.publish(NOTE, self.job, message)

    def _retryable(self, exc: TransferError) -> bool:
        """Transient faults, and a vanished server once the job had moved bytes (it is restarting)."""
        if exc.retryable:
            return True
        return isinstance(exc, Unreachable) and (self.job.bytes_done > 0 or self.retries > 0)

    async def _made(self, options):
        """``--pack``: the folder as an archive made on demand (walked again each attempt: a source that
        changed makes another plan, and the upload starts that plan over rather than mixing two)."""
        if not options.pack:
            return None
        from backends.archive.image import image_of
        from backends.core.made import packed_name

        return await asyncio.to_thread(image_of, self.source, packed_name(self.source))

    def _options(self):
        options = replace(self.job.options, job=f"{self.job.id}:{id(self)}")
        if (self.retries or self.job.bytes_done) and not options.overwrite and not options.sync:
            # an earlier attempt (a fault, a pause, a restart) wrote some of a folder: those files passed the
            # check that nothing was there before, so they are this job's own, kept when unchanged (as --sync)
            options = replace(options, sync="size-mtime")
        return options

    async def _tick(self) -> None:
        """Progress events at most PROGRESS_HZ a second; a DB write every few seconds."""
        job, last = self.job, None
        saved = time.monotonic()
        while True:
            await asyncio.sleep(1 / PROGRESS_HZ)
            self.meter.add(job.bytes_done)
            job.rate, job.eta = self.meter.rate, self.meter.eta(job.bytes_total)
            snapshot = (job.bytes_done, job.streams, job.bytes_total)
            if snapshot != last:
                last = snapshot
                self.engine.publish(PROGRESS, job)
            if time.monotonic() - saved >= SAVE_EVERY:
                saved = time.monotonic()
                self.engine.persist(job)

    # -- outcome rows ------------------------------------------------------------
    def record_done(self, result: Result) -> None:
        job, store = self.job, self.engine.store
        if result.dest:
            job.dest = result.dest  # the server named the file (Content-Disposition)
        moved = result.bytes_fetched or result.bytes
        job.result = asdict(result) | {"backend": job.backend, "retries": self.retries, "finished": time.time()}
        job.result["throughput_mbps"] = moved * 8 / result.seconds / 1e6 if result.seconds > 0 else 0.0
        store.history.add(
            job_id=job.id, source=job.source, dest=job.dest, backend=job.backend, outcome="done", bytes=result.bytes,
            seconds=result.seconds, throughput_mbps=job.result["throughput_mbps"], streams=result.streams,
            retries=self.retries, restarts=result.restarts, sha256=result.sha256, verified=int(result.verified),
            verify_method=result.verify_method, peer_host=result.peer_host, started=self.started,
            rtt_ms=result.rtt_ms, notes=json.dumps(result.notes) if result.notes else None,
            tcp=json.dumps(host_tcp().to_dict()),
        )
        if moved > 0 and result.seconds > 0:
            # the path's rate: a compressed transfer's wire bytes, not what they unpacked to
            store.benchmarks.add(
                job_id=job.id, backend=job.backend, peer_host=result.peer_host, streams=result.streams,
                bytes=result.bytes_on_wire or moved,
                seconds=result.seconds, rtt_ms=result.rtt_ms, started=self.started,
                capped=job.options.rate_cap is not None,  # a cap (a schedule's as it ends too) was measured
            )

    def record_end(self, outcome: str, error: TransferError | None = None) -> None:
        job = self.job
        self.engine.store.history.add(
            job_id=job.id, source=job.source, dest=job.dest, backend=job.backend, outcome=outcome,
            bytes=job.bytes_done, seconds=time.time() - self.started, retries=self.retries,
            error=str(error) if error else None, error_kind=error.kind if error else None,
            peer_host=peer_host(job.source), started=self.started, tcp=json.dumps(host_tcp().to_dict()),
        )
