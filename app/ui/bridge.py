"""The one place where the engine's thread meets Qt's.

The engine calls ``_on_event`` on its own thread; that only records the latest view of
each job (and keeps the rare events: finished, added, removed) under a lock. A timer on
the GUI thread drains them at most ``REFRESH_HZ`` times a second and emits Qt signals,
so however fast transfers report, the GUI repaints a bounded number of times and never
waits on the engine.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine import Engine, Event, JobView
from app.engine.events import ADDED, FINISHED, NOTE, REMOVED, RETRYING
from backends.core.errors import TransferError

REFRESH_HZ = 10


class EngineBridge(QObject):
    jobs_changed = Signal(object)  # {job id: JobView}, only jobs that changed since the last tick
    job_removed = Signal(int)
    job_finished = Signal(object)  # JobView
    job_note = Signal(object, str)  # JobView, message
    call_failed = Signal(str)  # an engine call's error, as the sentence to show
    _answered = Signal(object, object, object)  # future, done callback, error callback

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self._lock = threading.Lock()
        self._latest: dict[int, JobView] = {}
        self._events: list[Event] = []
        self._unsubscribe = engine.subscribe(self._on_event)
        self._timer = QTimer(self)
        self._timer.setInterval(1000 // REFRESH_HZ)
        self._timer.timeout.connect(self._drain)
        self._timer.start()
        self._answered.connect(self._deliver)

    def call(self, verb: str, *args, done=None, error=None) -> None:
        """Ask the engine to do ``verb`` without waiting; ``done(result)`` or ``error(message)`` run here later.

        Errors without an ``error`` callback are shown through ``call_failed``.
        """
        future = self.engine.request(verb, *args)
        future.add_done_callback(lambda f: self._answered.emit(f, done, error))  # engine thread → queued signal

    def _deliver(self, future, done, error) -> None:
        exc = future.exception()
        if exc is None:
            if done is not None:
                done(future.result())
            return
        message = str(exc) if isinstance(exc, TransferError) else f"Ferry could not do that ({exc})."
        if error is not None:
            error(message)
        else:
            self.call_failed.emit(message)

    def _on_event(self, event: Event) -> None:  # engine thread: store, never touch Qt objects here
        with self._lock:
            self._latest[event.job.id] = event.job
            if event.kind in (ADDED, FINISHED, REMOVED, NOTE, RETRYING):
                self._events.append(event)

    def _drain(self) -> None:
        with self._lock:
            latest, self._latest = self._latest, {}
            events, self._events = self._events, []
        removed = {e.job.id for e in events if e.kind == REMOVED}
        changed = {jid: view for jid, view in latest.items() if jid not in removed}
        if changed:
            self.jobs_changed.emit(changed)
        for event in events:
            if event.kind == REMOVED:
                self.job_removed.emit(event.job.id)
            elif event.kind == FINISHED:
                self.job_finished.emit(event.job)
            elif event.kind in (NOTE, RETRYING) and event.message:
                self.job_note.emit(event.job, event.message)

    def close(self) -> None:
        self._timer.stop()
        self._unsubscribe()
