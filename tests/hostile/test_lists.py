"""A study whose file host misbehaves on purpose: ``labferry copy ena:STUDY`` against ENA's stand-in portal, the
runs' files on the hostile server (``tests/servers/hostile_http.py``).

A list's small files come first by the lean path (``backends/https/lean.py``: ``http.client`` on worker
threads); what is not its plain case goes to the full client. Each case: the honest runs arrive verified over
kept-alive connections, a misbehaving one ends as one sentence and leaves nothing under its name nor a part file,
and Ctrl-C in the middle of a body ends the command within seconds."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from tests.servers.ena_portal import Portal
from tests.servers.hostile_http import header_flood, long_header_line
from tests.servers.nginx import free_port as closed_port

from .conftest import MiB, ferry, files_below
from .test_signals import started, stop

RUN_SIZE = 256 * 1024


def _data(seed: int) -> bytes:
    return random.Random(seed).randbytes(RUN_SIZE)


def _honest(data: bytes):
    def answer(h):
        h.send_body(data)
        return True
    return answer


def _longer(data: bytes):
    """Says a mebibyte more than the report, and sends it."""
    def answer(h):
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=len(data) + MiB)
        h.request.sendall(data + bytes(MiB))
        return True
    return answer


def _short(data: bytes):
    """Promises the whole file, sends half, and hangs up."""
    def answer(h):
        h.head_line(200, {"Content-Type": "application/octet-stream", "Connection": "close"}, length=len(data))
        h.request.sendall(data[:len(data) // 2])
        return False
    return answer


def _labelled(data: bytes):
    """The ``.gz`` file as it is, labelled ``Content-Encoding: gzip`` (Apache's old default): the body is the file."""
    def answer(h):
        h.send_body(data, {"Content-Encoding": "gzip"})
        return True
    return answer


def _moved(to: str):
    def answer(h):
        h.head_line(302, {"Location": to}, length=0)
        return True
    return answer


def _odd_digits(data: bytes):
    """A length in digits that are not ASCII ('²', byte 0xB2): a parser that trusts ``isdigit`` falls over."""
    def answer(h):
        h.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\xb2\r\n\r\n" + data)
        return False
    return answer


def _span(h, size: int) -> tuple[int, int] | None:
    """The span a ``Range: bytes=A-B`` header asks for (None: the whole file)."""
    asked = h.headers.get("range", "")
    if not asked.startswith("bytes="):
        return None
    first, _, last = asked[len("bytes="):].partition("-")
    return int(first), min(int(last), size - 1)


def _ranges(data: bytes, shift: int = 0):
    """What nginx does: a 206 of exactly the span asked for; with ``shift``, said and sent from that many bytes
    further on than asked (the right length)."""
    def answer(h):
        span = _span(h, len(data))
        if span is None:
            h.send_body(data)
        else:
            first, last = span[0] + shift, span[1] + shift
            h.send_body(data[first:last + 1], {"Content-Range": f"bytes {first}-{last}/{len(data)}"}, status=206)
        return True
    return answer


def _range_ignored(data: bytes):
    """Answers a request for a span with the whole file, as a 200 (a server without ranges)."""
    return _honest(data)


def _range_cut(data: bytes):
    """A 206 said right; half of the span sent, then the connection ends."""
    def answer(h):
        span = _span(h, len(data))
        if span is None:
            h.send_body(data)
            return True
        first, last = span
        h.head_line(206, {"Content-Range": f"bytes {first}-{last}/{len(data)}"}, length=last - first + 1)
        h.request.sendall(data[first:first + (last - first + 1) // 2])
        return False
    return answer


#: (the span asked, the client's port) for the run whose pieces come slowly
SLOW_PIECES_ASKED: list[tuple[str, int]] = []


def _slow_pieces(data: bytes):
    """Ranges as nginx gives them, each at ~1 MiB/s; who asked for which span is noted."""
    def answer(h):
        first, last = _span(h, len(data)) or (0, len(data) - 1)
        SLOW_PIECES_ASKED.append((h.headers.get("range", ""), h.client_address[1]))
        h.head_line(206, {"Content-Range": f"bytes {first}-{last}/{len(data)}"}, length=last - first + 1)
        for at in range(first, last + 1, 32 * 1024):
            h.request.sendall(data[at:min(at + 32 * 1024, last + 1)])
            time.sleep(0.03)
        return True
    return answer


def _range_trickle(data: bytes):
    """A 206 said right for each piece, then a byte every 2 s."""
    def answer(h):
        first, last = _span(h, len(data)) or (0, len(data) - 1)
        h.head_line(206, {"Content-Range": f"bytes {first}-{last}/{len(data)}"}, length=last - first + 1)
        return h.flood(b"\x01", limit=last - first + 1, pause=2.0)
    return answer


def _then_hangs_up(data: bytes):
    """Answers one request; a request sent behind it meanwhile is read and never answered: the connection ends
    there. Half the body, then the rest in 16 KiB pieces 50 ms apart: the client asks for its next file once
    what is left is small, which it sees between two reads (one read could take a whole body that had arrived
    while a busy machine kept the client from reading)."""
    def answer(h):
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=len(data))
        h.request.sendall(data[:len(data) // 2])
        for at in range(len(data) // 2, len(data), 16 * 1024):
            time.sleep(0.05)
            h.request.sendall(data[at:at + 16 * 1024])
        h.request.settimeout(2.0)
        try:
            for _ in range(50):  # the request behind, read whole so the close is a FIN, not a reset
                if h.file.readline(65536) in (b"\r\n", b"\n", b""):
                    break
        except OSError:
            pass
        return False
    return answer


def _trickle(data: bytes):
    """The right length, then a byte every 2 s."""
    def answer(h):
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=len(data))
        return h.flood(b"\x01", limit=len(data), pause=2.0)
    return answer


#: run → how its one file is served
CASES = {"ERR9100001": "honest", "ERR9100002": "honest", "ERR9100003": "honest", "ERR9100004": "longer",
         "ERR9100005": "short", "ERR9100006": "labelled", "ERR9100007": "moved", "ERR9100008": "trickle",
         "ERR9100009": "flood", "ERR9100010": "long line", "ERR9100011": "odd digits",
         **{f"ERR91001{i:02d}": "hangs up" for i in range(8)},
         "ERR9100201": "ranges", "ERR9100202": "range ignored", "ERR9100203": "range shifted",
         "ERR9100204": "range cut", "ERR9100205": "range trickle",
         "ERR9100206": "range slow"}
#: the studies of the cases not in PRJEB91001 (the other ranges: PRJEB91004)
PROJECTS = {"trickle": "PRJEB91002", "hangs up": "PRJEB91003", "range trickle": "PRJEB91005",
            "range slow": "PRJEB91006"}
#: the runs of 3 MiB: the last files of a list come in pieces (``backends/https/pieces.py``)
PIECED = 3 * MiB


@pytest.fixture(scope="module")
def study(hostile_http, tmp_path_factory):
    """PRJEB91001: every case above; PRJEB91002: an honest run and the trickle; PRJEB91003: a host that hangs up
    after each answer; PRJEB91004: runs of 3 MiB, fetched in pieces; PRJEB91005: one whose pieces trickle;
    PRJEB91006: one whose pieces come at ~1 MiB/s."""
    portal = Portal(tmp_path_factory.mktemp("hostile-study")).start()
    for i, (run, how) in enumerate(CASES.items()):
        data = random.Random(i).randbytes(PIECED) if how.startswith("range") else _data(i)
        project = "PRJEB91002" if run == "ERR9100001" else PROJECTS.get(
            how, "PRJEB91004" if how.startswith("range") else "PRJEB91001")
        portal.add_run(run, experiment=run.replace("ERR", "ERX"), sample=f"SAMEA91{i:05d}", study="ERP910001",
                       project=project, layout="SINGLE", fastq=[(f"{run}.fastq.gz", data)])
        path = f"/vol1/fastq/{run[:6]}/{run}/{run}.fastq.gz"
        made = {"honest": _honest, "longer": _longer, "short": _short, "labelled": _labelled, "trickle": _trickle,
                "hangs up": _then_hangs_up, "flood": lambda _: header_flood, "long line": lambda _: long_header_line,
                "odd digits": _odd_digits, "ranges": _ranges, "range ignored": _range_ignored,
                "range shifted": lambda data: _ranges(data, shift=1), "range cut": _range_cut,
                "range trickle": _range_trickle,
                "range slow": _slow_pieces}
        if how == "moved":
            hostile_http.routes[path + ".there"] = _honest(data)
            hostile_http.routes[path] = _moved(hostile_http.url(path + ".there"))
        else:
            hostile_http.routes[path] = made[how](data)
    yield portal
    portal.stop()


def _env(study, hostile_http) -> dict:
    return dict(os.environ, LABFERRY_ENA_PORTAL=study.url, LABFERRY_ENA_FILES=f"http://127.0.0.1:{hostile_http.port}",
                LABFERRY_NCBI_SDL=study.sdl, LABFERRY_NCBI_EUTILS=study.eutils,
                LABFERRY_ENA_FTP=f"ftp://127.0.0.1:{closed_port()}")  # ENA's other route: refused at once


@pytest.mark.parametrize("lanes", [[], ["--host-connections", "1"]], ids=["lanes", "one lane"])
def test_a_study_on_a_host_that_misbehaves_keeps_the_honest_runs_and_names_the_rest(study, hostile_http, tmp_path,
                                                                                  ferry_home, lanes):
    """On one lane every file after a broken answer comes on the same lane: a connection left in the middle of
    an answer it did not read would give the next file that answer's rest."""
    dest = tmp_path / "dest"
    asked_before = dict(hostile_http.asked)
    ran = ferry("copy", "ena:PRJEB91001", f"{dest}/", "--source", "ena", "--retries", "1", "--stall-timeout", "2",
                *lanes, home=ferry_home, env=_env(study, hostile_http), timeout=120)
    assert ran.returncode != 0, ran.stderr
    got = files_below(dest)
    # the honest ones, and by the full client the one labelled gzip and the moved one, arrive whole
    for run in ("ERR9100002", "ERR9100003", "ERR9100006", "ERR9100007"):
        assert got.get(f"{run}.fastq.gz") == RUN_SIZE, (run, got, ran.stderr)
    # the one that says more, the one cut short and the two whose head has no end leave nothing, not even a part
    broken = ("ERR9100004", "ERR9100005", "ERR9100009", "ERR9100010", "ERR9100011")
    assert not any(name.startswith(broken) for name in got), got
    assert not any(name.endswith(".part") for name in got), got
    said = " ".join(ran.said)
    assert all(run in said for run in broken), ran.stderr
    assert said.count("is not HTTP Ferry can read") == 3, ran.stderr
    odd = [line for line in ran.said if line.startswith("labferry: ERR9100011")]  # one line, one sentence
    assert len(odd) == 1 and odd[0].endswith("asking again would get the same answer."), ran.stderr
    assert ran.seconds < 60
    # the honest runs rode kept-alive connections: one GET each, never asked twice
    for run in ("ERR9100002", "ERR9100003"):
        asked = ("GET", f"/vol1/fastq/{run[:6]}/{run}/{run}.fastq.gz")
        assert hostile_http.asked[asked] - asked_before.get(asked, 0) == 1
    # by the lean path; the four others handed to the full client, each for what it is
    logged = (ferry_home / "ferry.log").read_text()
    assert "lean path: 2 small files fetched (0 in pieces), 7 handed to the full client" in logged, logged[-3000:]
    lean = next(line for line in logged.splitlines() if "lean path:" in line)
    for run, why in (("ERR9100004", "200, 1310720 bytes, identity"), ("ERR9100005", "ended after 131072 bytes"),
                     ("ERR9100006", "200, 262144 bytes, gzip"), ("ERR9100007", "302, 0 bytes"),
                     ("ERR9100009", "more than 100 header lines"), ("ERR9100010", "a header line beyond any sane"),
                     ("ERR9100011", "200, None bytes")):
        assert f"{run}.fastq.gz ({why}" in lean, (run, lean)


def test_a_host_that_drops_requests_sent_behind_another_is_asked_one_at_a_time(study, hostile_http, tmp_path,
                                                                            ferry_home):
    """The lean path asks for the next file while one arrives; a host that hangs up after each answer drops
    that request. Every file still arrives, each asked for again on a new connection."""
    dest = tmp_path / "dest"
    ran = ferry("copy", "ena:PRJEB91003", f"{dest}/", "--source", "ena", "--retries", "0", "--host-connections", "2",
                home=ferry_home, env=_env(study, hostile_http), timeout=60)  # two lanes: four runs each
    assert ran.returncode == 0, ran.stderr
    runs = [run for run, how in CASES.items() if how == "hangs up"]
    assert {f"{run}.fastq.gz" for run in runs} <= set(files_below(dest)), files_below(dest)
    logged = (ferry_home / "ferry.log").read_text()
    assert f"lean path: {len(runs)} small files fetched (0 in pieces), 0 handed" in logged, logged[-3000:]
    assert "dropped a request sent behind another" in logged, logged[-3000:]


def test_the_last_runs_come_in_pieces_and_a_piece_answered_wrong_hands_its_file_on(study, hostile_http, tmp_path,
                                                                                  ferry_home):
    """Four runs of 3 MiB, the last files of their list, are each asked for in three pieces. A server that
    answers a piece with the whole file, with a span other than the one asked for, or with half of it, gets
    that file asked for whole by the full client: every run arrives whole and checked, none from wrong bytes."""
    dest = tmp_path / "dest"
    asked_before = dict(hostile_http.asked)
    ran = ferry("copy", "ena:PRJEB91004", f"{dest}/", "--source", "ena", "--retries", "0",
                home=ferry_home, env=_env(study, hostile_http), timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest) == {f"ERR910020{i}.fastq.gz": PIECED for i in range(1, 5)} | {
        "samplesheet.csv": files_below(dest)["samplesheet.csv"], "metadata.tsv": files_below(dest)["metadata.tsv"]}
    for i in range(1, 5):
        data = random.Random(list(CASES).index(f"ERR910020{i}")).randbytes(PIECED)
        assert (dest / f"ERR910020{i}.fastq.gz").read_bytes() == data
    asked = {i: hostile_http.asked[key] - asked_before.get(key, 0)
             for i in range(1, 5) for key in [("GET", f"/vol1/fastq/ERR910/ERR910020{i}/ERR910020{i}.fastq.gz")]}
    assert asked[1] == 3, asked  # its three pieces, once each
    assert all(asked[i] >= 2 for i in (2, 3, 4)), asked  # a piece (or more) and then the whole file
    logged = (ferry_home / "ferry.log").read_text()
    lean = next(line for line in logged.splitlines() if "lean path:" in line)
    assert "lean path: 1 small files fetched (1 in pieces), 3 handed to the full client" in lean, lean
    assert "ERR9100202.fastq.gz (200, 3145728 bytes, identity, for bytes" in lean, lean
    assert "ERR9100203.fastq.gz (206, " in lean, lean
    assert "ERR9100204.fastq.gz (ended after 524288 bytes)" in lean, lean


def test_a_single_run_comes_in_pieces_on_as_many_connections(study, hostile_http, tmp_path, ferry_home):
    """A study of one run of 3 MiB: its three pieces each on a connection of its own, at once, not one after
    another on the one connection a single file would have."""
    dest = tmp_path / "dest"
    SLOW_PIECES_ASKED.clear()
    ran = ferry("copy", "ena:PRJEB91006", f"{dest}/", "--source", "ena", "--retries", "0",
                home=ferry_home, env=_env(study, hostile_http), timeout=60)
    assert ran.returncode == 0, ran.stderr
    data = random.Random(list(CASES).index("ERR9100206")).randbytes(PIECED)
    assert (dest / "ERR9100206.fastq.gz").read_bytes() == data
    asked = dict(SLOW_PIECES_ASKED)
    assert set(asked) == {"bytes=0-1048575", "bytes=1048576-2097151", "bytes=2097152-3145727"}, SLOW_PIECES_ASKED
    assert len(set(asked.values())) == 3, SLOW_PIECES_ASKED  # three connections


def test_a_stall_in_a_small_run_ends_as_a_stall(study, hostile_http, tmp_path, ferry_home):
    dest = tmp_path / "dest"
    ran = ferry("copy", "ena:PRJEB91002", f"{dest}/", "--source", "ena", "--retries", "0", "--stall-timeout", "2",
                home=ferry_home, env=_env(study, hostile_http), timeout=60)
    assert ran.returncode == 4, ran.stderr
    assert "ERR9100008" in " ".join(ran.said) and "stall" in " ".join(ran.said), ran.stderr
    assert files_below(dest).get("ERR9100001.fastq.gz") == RUN_SIZE
    assert not any(name.startswith("ERR9100008") for name in files_below(dest))
    assert ran.seconds < 30


@pytest.mark.parametrize(("project", "run"), [("PRJEB91002", "ERR9100008"), ("PRJEB91005", "ERR9100205")],
                         ids=["whole", "in pieces"])
def test_ctrl_c_while_a_small_run_trickles_ends_within_seconds(study, hostile_http, tmp_path, ferry_home, project,
                                                              run):
    """A run's body trickles, whole or in its pieces (each written by its own lane): Ctrl-C shuts every socket
    being read and ends the command within seconds, leaving nothing of the run."""
    dest = tmp_path / "dest"
    proc = started("copy", f"ena:{project}", f"{dest}/", "--source", "ena", "--stall-timeout", "60",
                   home=ferry_home, env=_env(study, hostile_http))
    trickle = ("GET", f"/vol1/fastq/ERR910/{run}/{run}.fastq.gz")
    ends = time.monotonic() + 30
    while hostile_http.asked[trickle] == 0 and time.monotonic() < ends:
        time.sleep(0.1)
    assert hostile_http.asked[trickle], "the trickling run was never asked for"
    time.sleep(3)  # its body is being written, a byte every 2 s
    status, err, took = stop(proc, signal.SIGINT)
    assert status == 130, err
    assert took < 10, took
    assert not any(name.startswith(run) for name in files_below(dest)), files_below(dest)
