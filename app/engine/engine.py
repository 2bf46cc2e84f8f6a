"""The engine: a queue of jobs run on one asyncio loop in a worker thread.

The UI and the CLI use only the public methods below (submit, pause, resume,
cancel, retry, remove, move, jobs, subscribe, wait); each is safe to call from
any thread and hands its work to the loop. Facts come back as events
(``app.engine.events``) and rows in the store. Nothing here knows Qt.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from app.jobs import Job, JobState, JobView
from app.store.jobs import Busy
from backends.core.abilities import Closer, ListFetcher
from backends.core.base import ASK_TRUST, TransferOptions, TransferRequest
from backends.core.errors import AuthError, BadRequest, LocalError, TransferError, Unavailable
from backends.core.registry import Registry
from backends.core.registry import registry as default_registry
from backends.core.urls import redact

from .actions import JobActions
from .events import ADDED, FINISHED, REMOVED, STATE, Event, EventBus
from .folders import change_folder, list_folder, locate_folder
from .runner import JobRunner, RetryPolicy

log = logging.getLogger(__name__)
KEPT_FINISHED = 500  # finished jobs a queue keeps across restarts (the oldest go first; the history has them all)
# engine verbs a GUI may request without waiting, and the coroutines that do them
_VERBS = {"submit": "_submit", "pause": "_pause", "resume": "_resume", "cancel": "_cancel", "remove": "_remove",
          "move": "_move", "jobs": "_views", "stat": "_stat", "listdir": "_listdir", "folder": "_folder",
          "locate": "_locate", "preflight": "_preflight"}


class Engine(JobActions):
    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        max_jobs: int = 3,
        run_queue: bool = True,
        registry: Registry | None = None,
        retry: RetryPolicy | None = None,
        ask_trust=None,
        keep_finished: bool = False,
    ) -> None:
        """``run_queue``: also run jobs already queued in the store (the GUI); the CLI's
        ``copy`` runs only what it submits. ``keep_finished``: done and cancelled jobs stay in the store's queue
        (in their places) until removed — the window's queue looks the same after a restart; elsewhere they
        leave it when they end (the history keeps them either way)."""
        self.db_path = db_path
        self.max_jobs = max(1, max_jobs)
        self.run_queue = run_queue
        self.keep_finished = keep_finished
        self.registry = registry or default_registry
        self.retry = retry or RetryPolicy()
        self.ask_trust = ask_trust  # the GUI's host-key question; None: refuse unknown keys
        self.bus = EventBus()
        self.store = None  # created on the engine thread
        self.state_dir: str | None = None
        self._jobs: dict[int, Job] = {}
        self._tasks: dict[int, asyncio.Task] = {}
        self._owned: set[int] = set()
        #: job id → (source, destination) with their passwords; never stored
        self._secrets: dict[int, tuple[str, str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._changed = threading.Condition()
        self._start_error: BaseException | None = None
        self._closing = False

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> Engine:
        self._thread = threading.Thread(target=self._main, name="ferry-engine", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error:
            raise self._start_error
        return self

    @property
    def running(self) -> bool:
        """Whether the engine's thread is still alive (``close`` ends it)."""
        return bool(self._thread and self._thread.is_alive())

    def close(self, timeout: float = 30) -> None:
        """Stop running jobs (they stay queued and resume next time), then the thread."""
        if not self._loop or not self.running:
            return
        try:
            self._call(self._shutdown(), timeout)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _main(self) -> None:
        from app.store import Store

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            self.store = Store(self.db_path)
            self.state_dir = str(self.store.path.parent)  # the backends' own records live beside the database
            self.store.jobs.interrupted_to_queued()
            self.store.jobs.trim_finished(KEPT_FINISHED)
            for job in self.store.jobs.all():
                self._jobs[job.id] = job
        except BaseException as exc:
            self._start_error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.call_soon(self._pump)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            self.store.close()
            loop.close()

    async def _shutdown(self) -> None:
        self._closing = True  # jobs stopped here go back to "queued": nothing may start them again now
        for job_id in list(self._tasks):
            await self._stop(job_id, JobState.QUEUED)
        for backend in self.registry.loaded():
            if isinstance(backend, Closer):
                try:
                    await backend.aclose()  # what a backend kept warm for this loop's jobs (HTTPS sessions)
                except Exception:
                    log.warning("backend %s did not close cleanly", backend.name, exc_info=True)
        # what the window asked for and is still running (a pane's listing, a preflight) ends here, not as a
        # coroutine the stopped loop leaves behind
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=5)

    def _call(self, coro, timeout: float | None = 60):
        if not self._loop:
            raise RuntimeError("the engine is not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # -- public API (any thread) -------------------------------------------------------
    def submit(self, source: str, dest: str, options: TransferOptions | None = None,
               backend: str | None = None) -> JobView:
        """Queue a transfer; an unfinished job for the same source and destination is resumed instead."""
        return self._call(self._submit(source, str(dest), options or TransferOptions(), backend))

    def pause(self, job_id: int) -> JobView:
        return self._call(self._pause(job_id))

    def resume(self, job_id: int) -> JobView:
        return self._call(self._resume(job_id))

    retry_job = resume  # a failed job is retried the same way a paused one resumes

    def cancel(self, job_id: int) -> JobView:
        return self._call(self._cancel(job_id))

    def remove(self, job_id: int) -> None:
        self._call(self._remove(job_id))

    def move(self, job_id: int, offset: int) -> None:
        self._call(self._move(job_id, offset))

    def set_max_jobs(self, count: int) -> None:
        self.max_jobs = max(1, count)
        self._loop.call_soon_threadsafe(self._pump)

    def jobs(self) -> list[JobView]:
        return self._call(self._views())

    def job(self, job_id: int) -> JobView:
        return self._call(self._view(job_id))

    def stat(self, url: str, options: TransferOptions | None = None, timeout: float | None = 60):
        """What the server says about ``url`` (size, folder or file); raises TransferError."""
        return self._call(self._stat(url, options or TransferOptions()), timeout)

    def request(self, verb: str, *args) -> concurrent.futures.Future:
        """Start ``verb`` (submit, pause, resume, cancel, remove, move, jobs, stat) without waiting.

        For the GUI: the returned future completes on the engine thread.
        """
        if verb not in _VERBS:
            raise ValueError(f"unknown engine verb {verb}")
        return asyncio.run_coroutine_threadsafe(self._asking(getattr(self, _VERBS[verb])(*args)), self._loop)

    async def _asking(self, coro):
        """``coro`` with the user's host-key question at hand (``ASK_TRUST``): a task takes the context of the
        thread that asked for it (the GUI's, where it is not set), so it is set here, in the task's own."""
        ASK_TRUST.set(self.ask_trust)
        return await coro

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        return self.bus.subscribe(callback)

    def wait(self, job_id: int, timeout: float | None = None) -> JobView:
        """Block until the job is done, failed, cancelled or paused."""
        with self._changed:
            ok = self._changed.wait_for(lambda: self._settled(job_id), timeout)
        view = self.job(job_id)
        if not ok:
            raise TimeoutError(f"job {job_id} still {view.state.value}")
        return view

    # -- loop side -----------------------------------------------------------------------
    def publish(self, kind: str, job: Job, message: str | None = None) -> None:
        self.bus.publish(Event(kind, job.view(), message))
        if kind in (STATE, FINISHED, REMOVED):
            with self._changed:
                self._changed.notify_all()

    def persist(self, job: Job) -> None:
        self.store.jobs.save(job)

    def _settled(self, job_id: int) -> bool:
        job = self._jobs.get(job_id)
        return job is None or job.state.terminal or job.state == JobState.PAUSED

    async def _listdir(self, url: str, options: TransferOptions, on_entries=None):
        """A remote folder's entries; ``on_entries`` hears each batch as it arrives (on this thread)."""
        return await list_folder(self.registry, url, options, on_entries)

    async def _locate(self, url: str, options: TransferOptions) -> str:
        """Where the folder ``url`` names is, as an absolute path on its server."""
        return await locate_folder(self.registry, url, options)

    async def _folder(self, action: str, url: str, options: TransferOptions, *args):
        """A folder action of the window's panes (``folders.ACTIONS``)."""
        return await change_folder(self.registry, action, url, options, *args)

    async def _preflight(self, target: str, options: TransferOptions, quick: bool = False, on_progress=None) -> dict:
        """Measure ``target`` (a URL or ``site:NAME[/path]``) and record the advice; its ``--json`` object.

        ``on_progress`` is called on this thread (the wizard's emits a signal, nothing more).
        """
        from app.preflight import resolve_target, run_preflight

        url, site, options = resolve_target(self.store, target, options)
        analysis = await run_preflight(self.store, self.registry, url, options, site=site, quick=quick,
                                       on_progress=on_progress)
        return analysis.to_dict()

    async def _stat(self, url: str, options: TransferOptions):
        backend = self.registry.for_url(url)
        return await backend.stat(url, options)

    async def _views(self) -> list[JobView]:
        return [j.view() for j in sorted(self._jobs.values(), key=lambda j: j.position)]

    async def _view(self, job_id: int) -> JobView:
        return self._get(job_id).view()

    def _get(self, job_id: int) -> Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise KeyError(f"there is no job {job_id}") from None

    async def _submit(self, source: str, dest: str, options: TransferOptions,
                      backend_name: str | None = None) -> JobView:
        backend = self.registry.get(backend_name) if backend_name else self.registry.for_route(source, dest)
        available = backend.available()
        if not available.ok:
            raise Unavailable(available.reason)
        if options.files:
            if not isinstance(backend, ListFetcher):
                raise BadRequest(f"The {backend.name} backend cannot fetch a list of files as one job. Copy them one "
                                 "by one.")
        else:
            await asyncio.to_thread(backend.check, TransferRequest(source, dest, options, state_dir=self.state_dir))
        shown, shown_dest = redact(source), redact(dest)
        existing = self.store.jobs.unfinished_for(shown, shown_dest)
        if existing and existing.id in self._tasks:
            return self._jobs[existing.id].view()
        try:
            job, adopted = self.store.jobs.take(shown, shown_dest, backend.name, options)
        except Busy as exc:
            raise LocalError(
                f"{shown} → {shown_dest} is already being transferred by another Ferry process (job {exc.job_id},"
                f" process {exc.pid}). Wait for it, or pause it there and run this again to take it over."
            ) from None
        if adopted:
            job = self._jobs.get(job.id) or job
            job.options, job.state, job.error, job.error_kind, job.attempts = options, JobState.QUEUED, None, None, 0
            self.persist(job)
        self._jobs[job.id] = job
        if (shown, shown_dest) != (source, dest):
            self._secrets[job.id] = (source, dest)
        self._owned.add(job.id)
        self.publish(ADDED, job)
        self._pump()
        return job.view()

    def _pump(self) -> None:
        """Start queued jobs, in queue order, while there is room."""
        if self._closing:
            return
        queued = sorted((j for j in self._jobs.values() if j.state == JobState.QUEUED), key=lambda j: j.position)
        for job in queued:
            if len(self._tasks) >= self.max_jobs:
                break
            if job.id in self._tasks or not (self.run_queue or job.id in self._owned):
                continue
            if not self.store.jobs.claim(job.id):
                continue  # queued or running in another Ferry process (a CLI next to the window)
            self._tasks[job.id] = asyncio.get_running_loop().create_task(self._run(job))

    async def _run(self, job: Job) -> None:
        runner = JobRunner(self, job, *self._secrets.get(job.id, (job.source, job.dest)))
        job.state, job.error, job.error_kind = JobState.RUNNING, None, None
        self.persist(job)
        self.publish(STATE, job)
        try:
            if "***@" in runner.source + runner.dest:
                raise AuthError("This job's password is not kept between sessions. Submit the transfer again with it.")
            result = await runner.run()
            job.state, job.bytes_done, job.rate, job.eta = JobState.DONE, result.bytes, 0.0, 0.0
            runner.record_done(result)
            self._finished(job)
            self.publish(FINISHED, job)
        except asyncio.CancelledError:
            pass  # pause/cancel/close set the new state before cancelling us
        except TransferError as exc:
            self._fail(job, runner, exc)
        except Exception as exc:
            log.exception("job %s failed unexpectedly", job.id)
            self._fail(job, runner, TransferError(
                f"Ferry hit an internal error ({type(exc).__name__}: {exc}). Please report it with the log file."
            ))
        finally:
            self._tasks.pop(job.id, None)
            if job.state.terminal and not self.keep_finished:
                self._secrets.pop(job.id, None)  # a row still shown may be retried: its site's password stays
            asyncio.get_running_loop().call_soon(self._pump)

    def _fail(self, job: Job, runner: JobRunner, exc: TransferError) -> None:
        if exc.pauses:  # waits for the user to fix something outside the job; Resume tries again
            job.state, job.error, job.error_kind, job.rate, job.eta = JobState.PAUSED, str(exc), exc.kind, 0.0, None
            self.persist(job)
            self.publish(STATE, job)
            return
        job.state, job.error, job.error_kind, job.rate, job.eta = JobState.FAILED, str(exc), exc.kind, 0.0, None
        runner.record_end("failed", exc)
        self.persist(job)
        self.publish(FINISHED, job)
