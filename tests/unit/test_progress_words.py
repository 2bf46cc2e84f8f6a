"""A failed study whose files all arrived but one could not be converted showed a full bar reading "100.0%", as a
finished one does: a failed job's bar says it failed."""

from __future__ import annotations

from app.engine import JobState, JobView
from app.ui.queue_model import progress_text


def test_a_failed_jobs_full_bar_says_it_failed():
    failed = JobView(1, "ena:PRJEB1", "/data/", "https", JobState.FAILED, 100, 100)
    assert progress_text(failed, 1.0) == "failed at 100%"
    running = JobView(2, "ena:PRJEB2", "/data/", "https", JobState.RUNNING, 100, 40)
    assert progress_text(running, 0.4) == "40.0%"
