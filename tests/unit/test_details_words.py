"""The details pane says each thing once: "press Retry" was said by the error and again by its remedy, and one
stream's rate read "Per stream 73 Mbit/s to 73 Mbit/s, median 73 Mbit/s: 73 Mbit/s"."""

from __future__ import annotations

from app.engine import JobState, JobView
from app.ui.details import render


def test_a_failure_that_says_press_retry_is_not_told_it_again():
    view = JobView(1, "sftp://lab/reads.fq", "/data/reads.fq", "ssh", JobState.FAILED, 10, 5,
                   error="The server closed the connection 6 times; Ferry tried 6 times and stopped; check the server "
                         "and the network, then run the same command again.", error_kind="transient")
    text = render(view)
    assert text.count("Retry") == 1, text


def test_a_failure_without_retry_in_its_words_keeps_the_remedy():
    view = JobView(1, "https://lab/x.bin", "/data/x.bin", "https", JobState.FAILED, None, 0,
                   error="The server has no x.bin (404).", error_kind="not-found")
    assert "What to try" in render(view) and "Check the address" in render(view)


def test_one_stream_is_not_given_a_range():
    one = JobView(1, "sftp://lab/reads.fq", "/data/reads.fq", "ssh", JobState.RUNNING, 10, 5, rate=9e6, streams=1,
                  stream_rates=(9.1e6,))
    assert "Per stream" not in render(one)
    two = JobView(1, "sftp://lab/reads.fq", "/data/reads.fq", "ssh", JobState.RUNNING, 10, 5, rate=18e6, streams=2,
                  stream_rates=(9.1e6, 8.9e6))
    assert "Per stream" in render(two)
