"""A study's first small files asked for while ENA's report is still arriving (``app/accessions/ahead.py``): a
stand-in portal that sends its report in parts, the files on a real web server with TLS (nginx, and Apache with
mod_ssl). What the server logs while the portal holds back the rest of its answer is what was asked ahead; each
file is asked for once in all."""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import popen_labferry

PROJECT = "PRJEB7777"
RUNS = 12
#: the portal sends its column names, waits (the connections are being opened), sends this many rows, then
#: holds back the rest this long
FIRST_PAUSE, FIRST_ROWS, HELD = 1.0, 6, 3.0


@dataclass
class FileHost:
    """ENA's file host, as a real server: where its files live, its address, its CA and what it logged."""

    data: Path
    base: str
    ca_file: str
    log: Callable[[], list[str]]


@pytest.fixture(scope="module", params=["nginx", "apache"])
def host(request) -> FileHost:
    server = request.getfixturevalue(request.param)
    if request.param == "nginx":
        return FileHost(server.data, f"https://127.0.0.1:{server.port}", server.ca_file,
                        lambda: server.access_log.read_text().splitlines())
    return FileHost(server.data, f"https://127.0.0.1:{server.tls_port}", server.ca_file, server.requests)


@pytest.fixture(scope="module")
def portal(host):
    from tests.servers.ena_portal import Portal

    server = Portal(host.data).start()
    for i in range(RUNS):
        run = f"ERR77770{i:02d}"
        server.add_run(run, experiment=run.replace("ERR", "ERX"), sample=f"SAMEA77{i:02d}", study="ERP007777",
                       project=PROJECT, layout="SINGLE" if i % 2 == 0 else "PAIRED",
                       fastq=[(f"{run}.fastq.gz", random.Random(i).randbytes(32 * 1024 + i))])
    yield server
    server.stop()


def _gets(host: FileHost) -> list[str]:
    """The study's files the server served, in the order it logged them (both log ``GET PATH`` first)."""
    return [line.split(" ")[1].rsplit("/", 1)[-1] for line in host.log()
            if line.startswith("GET /vol1/fastq/ERR777/")]


def _copy_while_held(portal, host, dest, home, *more: str) -> tuple[list[str], tuple[int, str, str]]:
    """Start the copy, and return (the files the server served before the portal sent the rest of its report, the
    command's (exit status, stdout, stderr))."""
    before = len(_gets(host))
    portal.rows_sent.clear()
    portal.trickle[PROJECT] = (FIRST_PAUSE, FIRST_ROWS, HELD)
    proc = popen_labferry("copy", f"ena:{PROJECT}", f"{dest}/", "--ca-file", host.ca_file, "--json", "-q", *more,
                          env_home=home, env={"LABFERRY_ENA_PORTAL": portal.url, "LABFERRY_NCBI_SDL": portal.sdl,
                                              "LABFERRY_ENA_FILES": host.base})
    try:
        assert portal.rows_sent.wait(30), "the portal was never asked"
        time.sleep(HELD - 1.0)  # the rest of the report is still held back
        early = _gets(host)[before:]
        out, err = proc.communicate(timeout=120)
    finally:
        portal.trickle.pop(PROJECT, None)
        if proc.poll() is None:
            proc.kill()
    return early, (proc.returncode, out, err)


def _verified(ended: tuple[int, str, str], dest, names: list[str]) -> None:
    status, out, err = ended
    assert status == 0, err
    files = json.loads(out.strip().splitlines()[-1])["files"]
    assert sorted(f["name"] for f in files) == sorted(names) and {f["state"] for f in files} == {"fetched"}
    for name in names:
        seed = int(name[8:10])
        assert hashlib.md5((dest / name).read_bytes()).digest() == \
            hashlib.md5(random.Random(seed).randbytes(32 * 1024 + seed)).digest()


def test_the_first_rows_files_are_asked_for_before_the_report_ends_and_each_only_once(portal, host, tmp_path,
                                                                                       ferry_home):
    dest = tmp_path / "new"
    before = len(_gets(host))
    early, proc = _copy_while_held(portal, host, dest, ferry_home)
    first = {f"ERR77770{i:02d}.fastq.gz" for i in range(FIRST_ROWS)}
    assert early and set(early) <= first, early  # only files of the rows that had arrived
    names = sorted(f"ERR77770{i:02d}.fastq.gz" for i in range(RUNS))
    _verified(proc, dest, names)
    assert sorted(_gets(host)[before:]) == names  # the ones asked ahead were not asked again


def test_a_filter_is_applied_before_anything_is_asked_ahead(portal, host, tmp_path, ferry_home):
    dest = tmp_path / "single"
    before = len(_gets(host))
    early, proc = _copy_while_held(portal, host, dest, ferry_home, "--filter", "library_layout=SINGLE")
    single = sorted(f"ERR77770{i:02d}.fastq.gz" for i in range(0, RUNS, 2))
    assert early and set(early) <= set(single[:FIRST_ROWS // 2]), early
    _verified(proc, dest, single)
    assert sorted(_gets(host)[before:]) == single  # a paired run's file was never asked for


def test_nothing_is_asked_ahead_into_a_folder_that_holds_files(portal, host, tmp_path, ferry_home):
    """A file there may be one Ferry verified before: nothing is asked until the plan says what is needed."""
    dest = tmp_path / "used"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine\n")
    early, proc = _copy_while_held(portal, host, dest, ferry_home, "--runs", "2")
    assert early == []
    _verified(proc, dest, ["ERR7777000.fastq.gz", "ERR7777001.fastq.gz"])
    assert (dest / "notes.txt").read_text() == "mine\n" and os.path.exists(dest / "samplesheet.csv")
