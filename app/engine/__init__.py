"""The transfer engine: jobs, the scheduler, events. No Qt, no sockets of its own."""

from app.jobs import JobState, JobView

from .engine import Engine
from .events import Event
from .runner import RetryPolicy

__all__ = ["Engine", "Event", "JobState", "JobView", "RetryPolicy"]
