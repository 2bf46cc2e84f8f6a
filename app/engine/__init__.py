"""The transfer engine: jobs, the scheduler, events. No Qt, no sockets of its own."""

from .engine import Engine
from .events import Event
from .job import JobState, JobView
from .routes import resolve_destination
from .runner import RetryPolicy

__all__ = ["Engine", "Event", "JobState", "JobView", "RetryPolicy", "resolve_destination"]
