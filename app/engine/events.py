"""The event stream: what the engine tells the UI and the CLI.

Subscribers are called on the engine thread and must return quickly: the Qt
bridge re-emits each event as a queued signal, the CLI puts it on a
``queue.Queue``. Progress events come at most ``PROGRESS_HZ`` times a second
per job; state changes come as they happen.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.jobs import JobView

PROGRESS_HZ = 10
log = logging.getLogger(__name__)

ADDED, STATE, PROGRESS, NOTE, RETRYING, FINISHED, REMOVED = (
    "added", "state", "progress", "note", "retrying", "finished", "removed",
)


@dataclass(frozen=True)
class Event:
    kind: str
    job: JobView
    message: str | None = None
    at: float = field(default_factory=time.time)


Subscriber = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # a broken listener must not stop transfers
                log.exception("event subscriber failed")

    def queue(self) -> tuple[queue.Queue, Callable[[], None]]:
        """A thread-safe queue fed with every event, and the function that stops it."""
        q: queue.Queue = queue.Queue()
        return q, self.subscribe(q.put)
