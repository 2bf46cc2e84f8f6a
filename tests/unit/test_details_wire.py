"""The details pane shows both rates of a job that travelled compressed, and no wire row for one that did not."""

from __future__ import annotations

from app.engine import JobState, JobView
from app.ui.details import render


def _view(result: dict) -> JobView:
    return JobView(1, "sftp://lab/reads.fq", "/data/reads.fq", "ssh", JobState.DONE, 4 << 30, 4 << 30, result=result)


def test_a_compressed_job_shows_the_wire_beside_what_it_delivered():
    result = {"bytes": 4 << 30, "bytes_fetched": 4 << 30, "bytes_on_wire": (4 << 30) // 3, "seconds": 16.0,
              "throughput_mbps": 2147.5, "streams": 8, "verified": True, "verify_method": "sha256"}
    text = render(_view(result))
    assert "On the wire" in text and "716 Mbit/s" in text and "3.0× fewer bytes" in text
    assert "2148 Mbit/s over 8 streams" in text


def test_a_plain_job_has_no_wire_row():
    text = render(_view({"bytes": 10, "seconds": 1.0, "throughput_mbps": 0.0, "streams": 1}))
    assert "On the wire" not in text
