"""ENA's report read as it arrives (``ena.rows_arriving``) from a hostile HTTP server on 127.0.0.1 that cuts its
answers short: a cut answer is asked again, never taken as the whole report, and the rows told as they arrive
start again with it."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.accessions import ena, ids
from backends.core.errors import BadAnswer, Unreachable

RUNS = [f"ERR90000{i:02d}" for i in range(5)]
REPORT = ("run_accession\tfastq_ftp\tfastq_bytes\n" + "".join(
    f"{run}\tftp.sra.ebi.ac.uk/vol1/fastq/{run}.fastq.gz\t{1000 + i}\n" for i, run in enumerate(RUNS))).encode()


@pytest.fixture
def cutting_portal(monkeypatch):
    """A portal whose first ``cut[0]`` answers stop 60 bytes in (in the first row) and hang up, with a
    Content-Length of the whole report; yields (cut, answers given)."""
    cut, given = [1], [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            given[0] += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(REPORT)))
            self.end_headers()
            if given[0] <= cut[0]:
                self.wfile.write(REPORT[:60])
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(REPORT)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("LABFERRY_ENA_PORTAL", f"http://127.0.0.1:{server.server_address[1]}/ena/portal/api")
    yield cut, given
    server.shutdown()
    server.server_close()


def test_a_cut_answer_is_asked_again_and_the_rows_told_start_again(cutting_portal):
    cut, given = cutting_portal
    told: list[dict] = []
    with ena.rows_arriving(told.append):
        rows = ena.report(ids.parse("ERR9000000"), sleep=lambda seconds: None)
    assert given[0] == 2
    assert [r["run_accession"] for r in rows] == RUNS
    # the cut answer's half row was not glued to the next answer's first line, nor its column names told as a row
    expected = [(run, str(1000 + i)) for i, run in enumerate(RUNS)]
    assert [(r["run_accession"], r["fastq_bytes"]) for r in told] == expected


def test_answers_always_cut_are_one_sentence_not_a_short_report(cutting_portal):
    cut, given = cutting_portal
    cut[0] = 99
    with pytest.raises(Unreachable) as failed:
        ena.report(ids.parse("ERR9000000"), sleep=lambda seconds: None)
    assert given[0] == 4
    assert "short of its Content-Length" in str(failed.value) and "after 4 tries" in str(failed.value)


@pytest.fixture
def odd_portal(monkeypatch):
    """A portal that answers whatever report the test puts in the list it yields (one body, sent whole)."""
    bodies: list[bytes] = [REPORT]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(bodies[0])))
            self.end_headers()
            self.wfile.write(bodies[0])

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("LABFERRY_ENA_PORTAL", f"http://127.0.0.1:{server.server_address[1]}/ena/portal/api")
    yield bodies
    server.shutdown()
    server.server_close()


def _with_first_row(row: bytes) -> bytes:
    head, rows = REPORT.split(b"\n", 1)
    return head + b"\n" + row + rows


def test_a_line_longer_than_any_row_ends_the_look_ahead_not_the_report(odd_portal):
    odd_portal[0] = _with_first_row(b"ERR9999999\t" + b"x" * (100 * 1024) + b"\t1\n")
    told: list[dict] = []
    with ena.rows_arriving(told.append):
        rows = ena.report(ids.parse("ERR9000000"), sleep=lambda seconds: None)
    assert told == []  # nothing past the line longer than LINE_MOST is looked at as it arrives
    assert [r["run_accession"] for r in rows] == ["ERR9999999", *RUNS]  # the report itself is whole


@pytest.mark.parametrize("row", [b"ERR9999999\t" + b"x" * (200 * 1024) + b"\t1\n", b"ERR9999999\t\xff\xfe\t1\n"],
                         ids=["a field of 200 KiB", "not UTF-8"])
def test_a_report_that_cannot_be_read_is_one_sentence(odd_portal, row):
    odd_portal[0] = _with_first_row(row)
    with pytest.raises(BadAnswer) as refused:
        ena.report(ids.parse("ERR9000000"), sleep=lambda seconds: None)
    assert str(refused.value).startswith("ENA's portal answered ERR9000000 with a report Ferry cannot read (")
