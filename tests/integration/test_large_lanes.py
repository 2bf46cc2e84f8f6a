"""A study of large runs: each lane starts its next file once the one it fetches is in its tail, on the
connections that file gives back, and never more connections than the budget (``handoff.Handoff``). Seen
from the real nginx with TLS, which logs when each request ended and how long it took."""

from __future__ import annotations

import hashlib
import json
import os
import random

import pytest

from .conftest import labferry

MiB = 1024 * 1024
PROJECT, DAMAGED = "PRJEB8888", "PRJEB8889"
#: the first four (one per lane) of different sizes, so their tails come at different times; then two more
SIZES_MIB = (17, 20, 24, 28, 17, 17)
#: four lanes of eight streams (--host-connections 32, the default): when a file's first stream runs out of
#: work its seven others still hold pieces too small to steal (up to 256 KiB, ~0.1 s at 2 MB/s), so the next
#: file moves beside them for 50–140 ms (measured); with two streams a file that was 0–90 ms, too near nginx's
#: millisecond log to tell every time
BUDGET = 32
#: nginx logs in milliseconds: a request that begins in the millisecond its stream's last one ended is not two
SLACK = 0.005


@pytest.fixture(scope="module")
def portal(nginx):
    from tests.servers.ena_portal import Portal

    server = Portal(nginx.data).start()
    for i, size in enumerate(SIZES_MIB, 1):
        run = f"ERR888800{i}"
        server.add_run(run, experiment=run.replace("ERR", "ERX"), layout="SINGLE", sample=f"SAMEA88880{i}",
                       study="ERP008888", project=PROJECT,
                       fastq=[(f"{run}.fastq.gz", random.Random(880 + i).randbytes(size * MiB))])
    for i, size in enumerate(SIZES_MIB, 1):  # the same study again, the first file's published MD5 wrong
        run = f"ERR888900{i}"
        server.add_run(run, experiment=run.replace("ERR", "ERX"), layout="SINGLE", sample=f"SAMEA88890{i}",
                       study="ERP008889", project=DAMAGED,
                       fastq=[(f"{run}.fastq.gz", random.Random(890 + i).randbytes(size * MiB))],
                       wrong_md5=f"{run}.fastq.gz" if i == 1 else None)
    yield server
    server.stop()


def _spans(nginx) -> list[tuple[str, float, float, bool]]:
    """(file, began, ended, whole) of every GET nginx served for the study, from its access log. ``whole`` is
    False for a range Ferry cut short (its piece stolen by another stream, it closes the connection): nginx logs
    that one only when it next writes to it, after Ferry's stream has gone on, so its end is late."""
    spans = []
    for line in nginx.access_log.read_text().splitlines():
        fields = line.split(" ")
        if fields[0] != "GET" or "/ERR8888" not in fields[1]:
            continue
        first, _, last = fields[4].strip('"').removeprefix("bytes=").partition("-")
        ended, took = float(fields[-3]), float(fields[-2])
        whole = int(fields[3]) >= int(last) - int(first) + 1
        spans.append((fields[1].rsplit("/", 1)[-1], ended - took + SLACK, ended - SLACK, whole))
    return spans


def _most_at_once(spans: list[tuple[str, float, float, bool]]) -> tuple[int, int]:
    """The most requests served whole, and the most distinct files (any request), in flight at one moment."""
    most_requests = most_files = 0
    for _, began, _, _ in spans:
        flying = [(name, whole) for name, b, e, whole in spans if b <= began < e]
        most_requests = max(most_requests, sum(whole for _, whole in flying))
        most_files = max(most_files, len({name for name, _ in flying}))
    return most_requests, most_files


def _copy(portal, nginx, project: str, dest, home):
    env = dict(os.environ, LABFERRY_ENA_PORTAL=portal.url, LABFERRY_NCBI_SDL=portal.sdl,
               LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}/slow")  # 2 MB/s a connection
    return labferry("copy", f"ena:{project}", f"{dest}/", "--host-connections", str(BUDGET), "--json",
                    "--ca-file", nginx.ca_file, env_home=home, env=env, timeout=180)


def test_a_lane_starts_its_next_file_in_the_tail_of_the_last_within_the_budget(portal, nginx, tmp_path,
                                                                                ferry_home):
    nginx.access_log.write_text("")  # this case reads the whole log (nginx appends to the emptied file)
    dest = tmp_path / "lanes"
    proc = _copy(portal, nginx, PROJECT, dest, ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {f["state"] for f in out["files"]} == {"fetched"} and len(out["files"]) == len(SIZES_MIB)
    for row in (r for r in portal.runs if r["study_accession"] == PROJECT):
        name = row["fastq_ftp"].rsplit("/", 1)[-1]
        assert hashlib.md5((dest / name).read_bytes()).hexdigest() == row["fastq_md5"]
    spans = _spans(nginx)
    requests, files = _most_at_once(spans)
    assert requests <= BUDGET, f"{requests} requests at once on a budget of {BUDGET}"
    # four lanes: file by file, four files at most were ever in flight; a lane that hands its connections on
    # has its next file moving while the last one's final ranges arrive
    assert files > 4, f"at most {files} files in flight at once: no lane started a file in another's tail"


def test_a_large_file_that_fails_its_md5_while_the_next_one_moves_fails_alone(portal, nginx, tmp_path,
                                                                               ferry_home):
    # the first file is found damaged at its end, when its lane has already started the next one on the
    # connections it gave back: it is named, nothing stays under its name, and the five others arrive
    dest = tmp_path / "damaged"
    proc = _copy(portal, nginx, DAMAGED, dest, ferry_home)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "ERR8889001.fastq.gz" in proc.stderr and "md5" in proc.stderr.lower(), proc.stderr
    states = {f["name"]: f["state"] for f in json.loads(proc.stdout.strip().splitlines()[-1])["files"]}
    assert states == {f"ERR888900{i}.fastq.gz": "failed" if i == 1 else "fetched" for i in range(1, 7)}
    assert not (dest / "ERR8889001.fastq.gz").exists()
    for row in (r for r in portal.runs if r["study_accession"] == DAMAGED and not r["run_accession"].endswith("1")):
        name = row["fastq_ftp"].rsplit("/", 1)[-1]
        assert hashlib.md5((dest / name).read_bytes()).hexdigest() == row["fastq_md5"]
