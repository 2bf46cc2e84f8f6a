"""What the user does to a job already in the queue: pause, resume (or retry), cancel, remove, move. A mixin
of ``engine.Engine``, run on its loop; the engine holds the jobs, their tasks and the store."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from app.jobs import Job, JobState, JobView
from backends.core.base import TransferRequest

from .events import FINISHED, REMOVED, STATE
from .runner import JobRunner


class JobActions:
    """The queue's verbs on one job (see the module's docstring)."""

    async def _stop(self, job_id: int, new_state: JobState) -> None:
        """Cancel a running job's task after setting what it becomes."""
        job = self._get(job_id)
        job.state, job.rate, job.eta, job.streams = new_state, 0.0, None, 0
        task = self._tasks.get(job_id)
        if task:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.persist(job)

    async def _pause(self, job_id: int) -> JobView:
        job = self._get(job_id)
        if job.state in (JobState.QUEUED, JobState.RUNNING, JobState.VERIFYING):
            await self._stop(job_id, JobState.PAUSED)
            self.publish(STATE, job)
        return job.view()

    async def _resume(self, job_id: int) -> JobView:
        job = self._get(job_id)
        stopping = self._tasks.get(job_id)
        if stopping is not None and not stopping.done():  # paused a moment ago: its last batch is still ending
            await asyncio.gather(stopping, return_exceptions=True)
        if job.state in (JobState.PAUSED, JobState.FAILED, JobState.CANCELLED):
            if job.state == JobState.CANCELLED:
                job.bytes_done = 0  # its data was deleted: Retry starts it over
            job.state, job.error, job.error_kind, job.attempts = JobState.QUEUED, None, None, 0
            self._owned.add(job_id)
            self.persist(job)
            self.publish(STATE, job)
            self._pump()
        return job.view()

    async def _cancel(self, job_id: int) -> JobView:
        job = self._get(job_id)
        if job.state.terminal:
            return job.view()
        source, dest = self._secrets.get(job_id, (job.source, job.dest))  # a password may be needed to clean up
        await self._stop(job_id, JobState.CANCELLED)
        backend = self.registry.get(job.backend)
        await asyncio.to_thread(_discard, backend, TransferRequest(source, dest, job.options, state_dir=self.state_dir))
        JobRunner(self, job, job.source, job.dest).record_end("cancelled")
        self._finished(job)
        self.publish(FINISHED, job)
        return job.view()

    def _finished(self, job: Job) -> None:
        """A job that ended done or cancelled: kept in its place in the queue (``keep_finished``), else gone
        from the store (the history has it)."""
        if self.keep_finished:
            self.persist(job)
        else:
            self.store.jobs.remove(job.id)

    async def _remove(self, job_id: int) -> None:
        job = self._get(job_id)
        if not job.state.terminal and job.state != JobState.FAILED:
            await self._cancel(job_id)
        self.store.jobs.remove(job_id)
        self._jobs.pop(job_id, None)
        self._secrets.pop(job_id, None)
        self.publish(REMOVED, job)

    async def _move(self, job_id: int, offset: int) -> None:
        """Move a job up (negative) or down the queue by ``offset`` places."""
        order = sorted(self._jobs.values(), key=lambda j: j.position)
        index = next(i for i, j in enumerate(order) if j.id == job_id)
        target = max(0, min(len(order) - 1, index + offset))
        order.insert(target, order.pop(index))
        for position, job in enumerate(order, start=1):
            if job.position != position:
                job.position = position
                self.persist(job)
        self.publish(STATE, self._get(job_id))


def _discard(backend, request: TransferRequest) -> None:
    """What a cancelled job left behind: its file's, or each listed file's (blocking: run in a thread)."""
    if not request.options.files:
        backend.discard(request)
        return
    for f in request.options.files:
        backend.discard(replace(request, source=f.address, dest=str(Path(request.dest) / f.name),
                                options=replace(request.options, files=())))
