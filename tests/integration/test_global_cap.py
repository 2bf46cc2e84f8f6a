"""The global bandwidth cap (Settings) holds across every job of the process, whatever path each takes.

Before, each job had its own bucket and the SSH folder tar streams and SFTP-only accounts none at all: three
jobs under a cap of C ran at 3 C, and a folder of small files was not capped at all. The bound checked here
is a lower bound on time (the cap cannot be beaten), never an upper one; the 5 % figure over 20 s is measured
by tests/bench/global_cap.py.
"""

from __future__ import annotations

import time

from app.engine import Engine, RetryPolicy
from app.requests import Defaults, Overrides, resolve
from app.store import Store

from .conftest import MiB, sha256_of, write_random

CAP = 8 * MiB  # bytes per second, all jobs together


def test_three_jobs_over_three_paths_share_one_global_cap(nginx, sshd, tmp_path, ferry_home):
    web = write_random(nginx.data / "cap-web.bin", 12 * MiB, seed=91)
    remote = sshd.home / f"cap-{time.monotonic_ns()}"
    (remote / "small").mkdir(parents=True)
    big = write_random(remote / "big.bin", 12 * MiB, seed=92)
    smalls = {f"small/f{i:03}.fq": write_random(remote / "small" / f"f{i:03}.fq", 96 * 1024, seed=100 + i)
              for i in range(128)}  # 12 MiB of small files: the tar streams
    sshd.give(remote)
    ssh = {"identity": str(sshd.key), "known_hosts": str(sshd.known_hosts)}
    defaults = Defaults(limit_rate=CAP)
    with Store() as store:
        requests = [
            resolve(nginx.url("cap-web.bin"), tmp_path / "web.bin", Overrides(ca_file=nginx.ca_file), store=store,
                    defaults=defaults),
            resolve(sshd.url(str(remote / "big.bin")), tmp_path / "big.bin", Overrides(backend_options=ssh),
                    store=store, defaults=defaults),
            resolve(sshd.url(str(remote / "small")) + "/", tmp_path / "small", Overrides(backend_options=ssh),
                    store=store, defaults=defaults),
        ]
    assert all(r.options.shared_limit == CAP and r.options.limit_rate is None for r in requests)
    began = time.monotonic()
    with Engine(max_jobs=3, retry=RetryPolicy(max_retries=0)) as engine:
        jobs = [r.submit_to(engine) for r in requests]
        finals = [engine.wait(j.id, timeout=120) for j in jobs]
    seconds = time.monotonic() - began
    assert [f.state.value for f in finals] == ["done"] * 3, [f.error for f in finals]
    assert sha256_of(tmp_path / "web.bin") == web and sha256_of(tmp_path / "big.bin") == big
    assert all(sha256_of(tmp_path / "small" / rel.split("/", 1)[1]) == d for rel, d in smalls.items())
    # 36 MiB at 8 MiB/s together take 4.5 s at least, less the buckets' first bursts (1 MiB each)
    assert seconds >= 36 * MiB / CAP * 0.85, seconds


def test_an_accession_job_pays_the_global_cap_from_its_first_byte(nginx, tmp_path, ferry_home, monkeypatch):
    """The window's study job (one list job: small files by the folder path, large ones by ranged streams) under
    the cap of Settings: no byte outruns it, not even at the start (a user saw 15× the cap for the first 20 %)."""
    import random

    from app.accessions.plans import build_plan
    from app.accessions.queued import queue_request
    from tests.servers.ena_portal import Portal

    portal = Portal(nginx.data).start()
    try:
        portal.add_run("ERR0009001", experiment="ERX0009001", layout="PAIRED", sample="SAMEA0009001",
                       study="ERP000999", project="PRJEB9999",
                       fastq=[("ERR0009001_1.fastq.gz", random.Random(1).randbytes(6 * MiB)),
                              ("ERR0009001_2.fastq.gz", random.Random(2).randbytes(6 * MiB))])
        portal.add_run("ERR0009002", experiment="ERX0009002", layout="SINGLE", sample="SAMEA0009002",
                       study="ERP000999", project="PRJEB9999",
                       fastq=[("ERR0009002.fastq.gz", random.Random(3).randbytes(256 * 1024))])
        monkeypatch.setenv("LABFERRY_ENA_PORTAL", portal.url)
        monkeypatch.setenv("LABFERRY_NCBI_SDL", portal.sdl)
        monkeypatch.setenv("LABFERRY_ENA_FILES", f"http://127.0.0.1:{nginx.http_port}")
        plan = build_plan(["PRJEB9999"], "ena:PRJEB9999")
        cap = 2 * MiB
        with Store() as store:
            request = queue_request(plan, tmp_path / "study", defaults=Defaults(limit_rate=cap), store=store)
        assert request.options.shared_limit == cap
        seen: list[tuple[float, int]] = []
        with Engine(retry=RetryPolicy(max_retries=0)) as engine:
            began = time.monotonic()
            submitted = request.submit_to(engine)
            while (view := engine.job(submitted.id)).state.value not in ("done", "failed"):
                seen.append((time.monotonic() - began, view.bytes_done))
                assert time.monotonic() - began < 60, "the study took over a minute at 2 MiB/s"
                time.sleep(0.05)
        assert view.state.value == "done", view.error
    finally:
        portal.stop()
    total = 12 * MiB + 256 * 1024
    assert time.monotonic() - began >= total / cap * 0.85
    # at every moment, what had arrived is at most what the cap allows since the start, plus the buckets' bursts
    over = [(round(t, 2), b) for t, b in seen if b > cap * t + 2 * MiB]
    assert not over, f"bytes ahead of the cap (seconds, bytes): {over[:5]}"
