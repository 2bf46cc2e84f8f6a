"""``labferry copy SRC DEST --cluster slurm`` against a real Slurm cluster (``tests/servers/slurm.py``): munged,
slurmctld and three ``slurmd -N nodeK``, each node in its own network namespace behind its own link to nginx
(TLS) and the ENA stand-in. Ferry runs where a login node would, as a subprocess; the tasks run on the nodes as
Slurm starts them, and write into one DEST every namespace sees."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import time

import pytest

from tests.servers.nginx import Nginx, make_certificates
from tests.servers.slurm import SlurmCluster

from .conftest import MiB, labferry, popen_labferry, tree_digests
from .test_https_errors import assert_clean_failure


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def web(cluster, tmp_path_factory):
    """nginx with a certificate for the address every node reaches; ``/slow/`` at 300 KB/s a connection."""
    root = tmp_path_factory.mktemp("cluster-web")
    certs = make_certificates(root / "tls", names=(f"IP:{cluster.server_address}",))
    server = Nginx(root / "nginx", root / "data", listen=cluster.server_address, slow_rate="300k", certs=certs)
    rng = random.Random(57)
    run = server.data / "run1"
    for k in range(3):
        (run / f"lane{k}.bam").parent.mkdir(parents=True, exist_ok=True)
        (run / f"lane{k}.bam").write_bytes(rng.randbytes(6 * MiB + k))
    for k in range(45):
        folder = run / "qc" / f"sample{k % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"part {k} é.vcf").write_bytes(rng.randbytes(rng.randint(1000, 200_000)))
    for k in range(3):  # large files: resumed from their part files
        (server.data / "lanes").mkdir(exist_ok=True)
        (server.data / "lanes" / f"lane{k}.fastq.gz").write_bytes(rng.randbytes(20 * MiB))
    if os.geteuid() == 0:
        for path in server.data.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
    server.start()
    yield server
    server.stop()


def _env(cluster: SlurmCluster, **more: str) -> dict:
    return dict(os.environ, **cluster.env, LABFERRY_PROGRESS_EVERY="1", **more)


def _more(cluster: SlurmCluster) -> dict:
    """What ``popen_labferry`` adds to this environment: where Slurm's config is, a progress line every second."""
    return {**cluster.env, "LABFERRY_PROGRESS_EVERY": "1"}


def _copy(cluster, web, source: str, dest, home, *more: str, timeout: float = 240, **env):
    return labferry("copy", source, f"{dest}/", "--cluster", "slurm", "--ca-file", web.ca_file, *more,
                    env_home=home, env=_env(cluster, **env), timeout=timeout)


def _queue(cluster: SlurmCluster) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T %N %r"], capture_output=True, text=True, timeout=30,
                         env=_env(cluster))
    return out.stdout.split("\n")[:-1]


def _wait_for(check, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"no {what} after {seconds} s")


def test_a_folder_is_spread_over_three_nodes_each_through_its_own_link(cluster, web, tmp_path, ferry_home):
    before = [cluster.link_bytes(k) for k in range(3)]
    proc = _copy(cluster, web, web.url("run1/"), tmp_path / "shared", ferry_home, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    dest = tmp_path / "shared" / "run1"
    assert tree_digests(dest) == tree_digests(web.data / "run1")
    total = sum(p.stat().st_size for p in (web.data / "run1").rglob("*") if p.is_file())
    moved = [cluster.link_bytes(k) - before[k] for k in range(3)]
    assert all(m > 0.2 * total for m in moved), (moved, total)  # each node fetched a share over its own link
    assert sum(moved) < 1.15 * total, (moved, total)  # and nothing twice
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["state"] == "done" and result["files"] == 48 and result["size_checked"] == 48
    assert "size-checked (no checksum published; not verified)" in proc.stderr
    assert not (tmp_path / "shared" / ".run1.ferry-cluster").exists()  # the plan and the tasks' records: gone
    history = json.loads(labferry("history", "--json", env_home=ferry_home).stdout)
    rows = history if isinstance(history, list) else history["rows"]
    assert [(r["backend"], r["outcome"]) for r in rows] == [("cluster (slurm)", "done")]


def test_a_study_is_spread_over_three_nodes_and_verified_against_enas_md5(cluster, web, tmp_path, ferry_home):
    from tests.servers.ena_portal import Portal

    portal = Portal(web.data, listen=cluster.server_address).start()
    try:
        rng = random.Random(7)
        for i in range(9):
            run = f"ERR00077{i:02d}"
            portal.add_run(run, experiment=run.replace("ERR", "ERX"), layout="SINGLE", sample=f"SAMEA00077{i:02d}",
                           study="ERP007777", project="PRJEB7777",
                           fastq=[(f"{run}.fastq.gz", rng.randbytes(MiB + 1000 * i))])
        proc = _copy(cluster, web, "ena:PRJEB7777", tmp_path / "study", ferry_home, "--json",
                     LABFERRY_ENA_PORTAL=portal.url, LABFERRY_ENA_FILES=f"https://{cluster.server_address}:{web.port}")
    finally:
        portal.stop()
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["verified"] == 9 and result["size_checked"] == 0
    for i in range(9):
        run = f"ERR00077{i:02d}"
        served = web.data / f"vol1/fastq/{run[:6]}/{run}/{run}.fastq.gz"
        got = tmp_path / "study" / f"{run}.fastq.gz"
        assert hashlib.sha256(got.read_bytes()).digest() == hashlib.sha256(served.read_bytes()).digest()
    with open(tmp_path / "study" / "samplesheet.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 9
    assert "9 verified against their published checksums" in proc.stderr


def test_a_dry_run_shows_the_shares_and_submits_nothing(cluster, web, tmp_path, ferry_home):
    proc = _copy(cluster, web, web.url("run1/"), tmp_path / "out", ferry_home, "--dry-run", "--nodes", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].endswith("48 files, 21.9 MiB, 2 tasks of 12 connections each"), lines
    assert [line.split(":")[0] for line in lines[1:]] == ["task 0", "task 1"]
    assert not _queue(cluster) and not (tmp_path / "out").exists() and not (tmp_path / ".out.ferry-cluster").exists()


def test_no_slurm_on_this_machine_is_one_sentence_with_status_7(cluster, web, tmp_path, ferry_home):
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = _copy(cluster, web, web.url("run1/"), tmp_path / "out", ferry_home, PATH=str(empty))
    assert_clean_failure(proc, 7, words=("sbatch", "login node"))
    assert not (tmp_path / "out").exists()


def test_ferry_missing_on_the_nodes_is_said_at_once_not_retried(cluster, web, tmp_path, ferry_home):
    proc = _copy(cluster, web, web.url("run1/"), tmp_path / "out", ferry_home,
                 LABFERRY_CLUSTER_COMMAND="/opt/nowhere/labferry")
    assert proc.returncode == 7 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    for words in ("No task of job", "/opt/nowhere/labferry: not found", "LABFERRY_CLUSTER_COMMAND"):
        assert words in last, last
    assert "fetched again" not in proc.stderr and "round 2" not in proc.stderr  # said at once, not retried
    assert not _queue(cluster)


def test_a_refused_partition_is_slurms_reason_in_one_sentence(cluster, web, tmp_path, ferry_home):
    proc = _copy(cluster, web, web.url("run1/"), tmp_path / "out", ferry_home, "--partition", "nosuch")
    assert_clean_failure(proc, 7, words=("Invalid partition name specified",))
    assert not _queue(cluster)


def test_a_held_job_says_why_it_waits_and_ctrl_c_cancels_it(cluster, web, tmp_path, ferry_home):
    """A partition that is down: the tasks pend with Slurm's Reason, shown on the progress line; Ctrl-C runs
    scancel and waits until Slurm has let go of them."""
    proc = popen_labferry("copy", web.url("run1/"), f"{tmp_path}/out/", "--cluster", "slurm", "--partition", "held",
                          "--ca-file", web.ca_file, env_home=ferry_home, env=_more(cluster))
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any("PartitionDown" in line for line in seen):
        seen.append(proc.stderr.readline())
    assert any("pending (PartitionDown)" in line for line in seen), seen
    assert len(_queue(cluster)) == 3
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert "cancelled (scancel)" in err and "Traceback" not in err
    assert not _queue(cluster)
    # the same command again, where the tasks can run: the cancelled array (ended) and one Slurm has forgotten
    # (an id it never gave) are looked at, not followed or cancelled, and a new round fetches everything
    jobs = tmp_path / "out" / ".run1.ferry-cluster" / "jobs.json"
    jobs.write_text(json.dumps(json.loads(jobs.read_text()) + [[7, "987654"]]))
    again = _copy(cluster, web, web.url("run1/"), tmp_path / "out", ferry_home)
    assert again.returncode == 0, again.stderr
    assert tree_digests(tmp_path / "out" / "run1") == tree_digests(web.data / "run1")


def test_a_node_killed_mid_transfer_its_task_is_requeued_elsewhere_byte_exact(cluster, web, tmp_path, ferry_home):
    """node1 dies (its slurmd and its task killed at once) while its task fetches: Slurm finds the node down,
    requeues the task (``--requeue``) and it runs on another node, taking up the part files node1 left."""
    dest = tmp_path / "shared"
    proc = popen_labferry("copy", web.url("slow/run1/"), f"{dest}/", "--cluster", "slurm", "--host-budget", "3",
                          "--ca-file", web.ca_file, env_home=ferry_home, env=_more(cluster))
    try:
        _wait_for(lambda: cluster.link_bytes(0) > 1 * MiB and any("RUNNING node1" in q for q in _queue(cluster)),
                  90, "task running on node1")
        cluster.kill_node(0)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.start_node(0)
    assert proc.returncode == 0, err
    assert "labferry: task 0 on node1 went back to Slurm's queue (requeued" in err, err
    assert "t0 pending (BeginTime)" in err
    assert tree_digests(dest / "run1") == tree_digests(web.data / "run1")
    _wait_for(lambda: cluster.sinfo().get("node1") == "idle", 60, "node1 back")


def test_a_task_past_its_time_limit_stops_cleanly_and_a_second_round_resumes_its_part_file(cluster, web, tmp_path,
                                                                                         ferry_home):
    """``--time 1``: no task can fetch its 20 MiB file (a large one: in ranges, with a part file) at 150 KiB/s
    before Slurm ends it at the limit (SIGTERM, then SIGKILL after KillWait; Slurm's periodic check does so 60-90 s
    after the start); the next round asks only for the ranges the part file lacks."""
    dest = tmp_path / "shared"
    logged = web.access_log.stat().st_size
    proc = _copy(cluster, web, web.url("lanes/"), dest, ferry_home, "--time", "1", "--limit-rate", "150K",
                 timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert "(TIMEOUT); what it left is fetched again" in proc.stderr, proc.stderr
    assert "round 2 fetches them" in proc.stderr
    assert tree_digests(dest / "lanes") == tree_digests(web.data / "lanes")
    with open(web.access_log, "rb") as fh:  # METHOD URI STATUS BYTES "RANGE" END …
        fh.seek(logged)
        asked = [re.match(rb'GET /lanes/(lane\d\.fastq\.gz) (\d{3}) (\d+) "([^"]*)" ([\d.]+)', line) for line in fh]
    asked = [m for m in asked if m]
    asked.sort(key=lambda m: float(m.group(5)))
    times = [float(m.group(5)) for m in asked]
    gap = max(range(1, len(times)), key=lambda i: times[i] - times[i - 1])  # Slurm's kill, then round 2's start
    later = asked[gap:]
    assert times[gap] - times[gap - 1] > 2 and len(later) < len(asked), times
    size = 20 * MiB
    spans = []
    for m in later:
        asked_range = re.match(rb"bytes=(\d+)-(\d*)", m.group(4))
        assert asked_range and m.group(2) == b"206", m.group(0)  # a range of the part file, never the whole file
        spans.append((int(asked_range.group(2) or size - 1) + 1) - int(asked_range.group(1)))
    assert sum(spans) < 0.7 * 3 * size, spans  # only what round 1 left (it fetched over 40 % before the limit)


def test_one_file_is_refused_in_one_sentence_before_anything_is_submitted(cluster, web, tmp_path, ferry_home):
    proc = _copy(cluster, web, web.url("lanes/lane0.fastq.gz"), tmp_path / "out", ferry_home)
    assert_clean_failure(proc, 2, words=("one file", "without --cluster"))
    assert not _queue(cluster)
