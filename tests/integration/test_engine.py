"""The engine API a GUI drives: submit, pause, resume, cancel, retry, restart survival, events."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from app.engine import Engine, JobState, RetryPolicy
from app.engine.events import FINISHED, NOTE, PROGRESS, RETRYING
from app.store import Store
from backends.core.base import TransferOptions

from .conftest import MiB, sha256_of, write_random

FAST_RETRY = RetryPolicy(max_retries=5, base=0.3, cap=2.0)


def opts(nginx, **kw) -> TransferOptions:
    return TransferOptions(ca_file=nginx.ca_file, **kw)


def wait_until(predicate, timeout=30.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


@pytest.fixture(scope="module")
def slow_file(nginx):
    """24 MiB served at 2 MB/s per connection: a few seconds with 2 streams."""
    path = nginx.data / "engine.bin"
    digest = write_random(path, 24 * MiB, seed=20)
    return path, digest


def test_pause_then_resume_finishes_the_same_file(nginx, slow_file, tmp_path):
    path, digest = slow_file
    dest = tmp_path / "engine.bin"
    with Engine(retry=FAST_RETRY) as engine:
        job = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
        assert wait_until(lambda: engine.job(job.id).bytes_done > 4 * MiB)
        paused = engine.pause(job.id)
        assert paused.state == JobState.PAUSED
        assert not dest.exists() and (tmp_path / "engine.bin.part").exists()
        time.sleep(0.5)
        assert engine.job(job.id).state == JobState.PAUSED  # nothing runs it behind our back
        engine.resume(job.id)
        final = engine.wait(job.id, timeout=60)
    assert final.state == JobState.DONE, final.error
    assert final.result["resumed_from"] >= 4 * MiB
    assert sha256_of(dest) == digest


def test_cancel_leaves_nothing_behind(nginx, slow_file, tmp_path):
    dest = tmp_path / "engine.bin"
    with Engine() as engine:
        job = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
        assert wait_until(lambda: engine.job(job.id).bytes_done > 2 * MiB)
        view = engine.cancel(job.id)
        assert view.state == JobState.CANCELLED
    assert list(tmp_path.iterdir()) == []
    with Store() as store:
        assert store.jobs.all() == []
        assert store.history.query()[0]["outcome"] == "cancelled"


def test_queued_jobs_survive_a_restart_and_resume(nginx, slow_file, tmp_path):
    path, digest = slow_file
    dest = tmp_path / "engine.bin"
    engine = Engine().start()
    job = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
    assert wait_until(lambda: engine.job(job.id).bytes_done > 4 * MiB)
    engine.close()  # the app quits mid-transfer
    with Store() as store:
        [row] = store.jobs.all()
        assert row.state == JobState.QUEUED and row.bytes_done > 0
    with Engine() as engine:  # the next start picks the queue up by itself
        final = engine.wait(job.id, timeout=60)
    assert final.state == JobState.DONE, final.error
    assert final.result["resumed_from"] > 0
    assert sha256_of(dest) == digest


@pytest.mark.parametrize("outage", [2.0, 10.0])
def test_server_outage_is_survived(nginx, slow_file, tmp_path, outage):
    """A short outage is absorbed by the streams' own retries; a long one (the port refusing connections) is
    waited out as an outage, said in a note, without spending the job's attempts."""
    path, digest = slow_file
    dest = tmp_path / "engine.bin"
    events = []
    with Engine(retry=FAST_RETRY) as engine:
        engine.subscribe(events.append)
        job = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
        assert wait_until(lambda: engine.job(job.id).bytes_done > 3 * MiB)
        nginx.restart(pause=outage)  # connections cut, then refused, then back
        final = engine.wait(job.id, timeout=120)
    assert final.state == JobState.DONE, final.error
    assert sha256_of(dest) == digest
    said = [e.message for e in events if e.kind in (RETRYING, NOTE)]
    if outage > 8:
        assert any("127.0.0.1 is out of reach" in m and "its server refuses connections" in m for m in said), said
        assert final.result["retries"] >= 1


def test_permanent_errors_fail_without_retrying_and_retry_works_later(nginx, tmp_path):
    dest = tmp_path / "later.bin"
    with Engine(retry=FAST_RETRY) as engine:
        job = engine.submit(nginx.url("later.bin"), str(dest), opts(nginx))
        failed = engine.wait(job.id, timeout=30)
        assert failed.state == JobState.FAILED and "404" in failed.error and failed.error_kind == "not-found"
        assert failed.attempts == 0
        write_random(nginx.data / "later.bin", 2 * MiB, seed=21)
        engine.retry_job(job.id)
        final = engine.wait(job.id, timeout=30)
    assert final.state == JobState.DONE, final.error
    assert dest.stat().st_size == 2 * MiB


def test_concurrency_limit_and_queue_order(nginx, tmp_path):
    for i in range(4):
        write_random(nginx.data / f"c{i}.bin", 3 * MiB, seed=30 + i)
    running_at_once = []
    lock = threading.Lock()
    states: dict[int, JobState] = {}

    def watch(event):
        with lock:
            states[event.job.id] = event.job.state
            running_at_once.append(sum(1 for s in states.values() if s.active))

    with Engine(max_jobs=2) as engine:
        engine.subscribe(watch)
        ids = [engine.submit(nginx.url(f"slow/c{i}.bin"), str(tmp_path / f"c{i}.bin"), opts(nginx, streams=1)).id
               for i in range(4)]
        engine.move(ids[3], -3)  # the last one goes first among those still waiting
        finals = [engine.wait(i, timeout=60) for i in ids]
    assert all(f.state == JobState.DONE for f in finals)
    assert max(running_at_once) == 2


def test_progress_events_are_at_most_ten_a_second_per_job(nginx, slow_file, tmp_path):
    per_job = defaultdict(list)
    with Engine() as engine:
        engine.subscribe(lambda e: per_job[e.job.id].append(e) if e.kind == PROGRESS else None)
        job = engine.submit(nginx.url("slow/engine.bin"), str(tmp_path / "e.bin"), opts(nginx, streams=2))
        final = engine.wait(job.id, timeout=60)
    assert final.state == JobState.DONE
    times = [e.at for e in per_job[job.id]]
    assert len(times) >= 10
    for i in range(len(times) - 10):
        assert times[i + 10] - times[i] >= 0.95, "more than 10 progress events in one second"
    last = per_job[job.id][-1].job
    assert last.rate > 0 and last.streams >= 1 and last.bytes_total == 24 * MiB


def test_events_carry_the_finished_result(nginx, slow_file, tmp_path):
    finished = []
    with Engine() as engine:
        engine.subscribe(lambda e: finished.append(e) if e.kind == FINISHED else None)
        job = engine.submit(nginx.url("engine.bin"), str(tmp_path / "e.bin"), opts(nginx))
        engine.wait(job.id, timeout=60)
    [event] = finished
    assert event.job.state == JobState.DONE and event.job.result["sha256"] == slow_file[1]


def test_resubmitting_an_unfinished_job_adopts_it(nginx, slow_file, tmp_path):
    dest = tmp_path / "engine.bin"
    with Engine() as engine:
        first = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
        assert wait_until(lambda: engine.job(first.id).bytes_done > 2 * MiB)
        engine.pause(first.id)
        again = engine.submit(nginx.url("slow/engine.bin"), str(dest), opts(nginx, streams=2))
        assert again.id == first.id
        assert engine.wait(first.id, timeout=60).state == JobState.DONE


def test_passwords_in_urls_never_reach_the_database(nginx, tmp_path, ferry_home):
    write_random(nginx.data / "secret.bin", MiB, seed=40)
    with Engine() as engine:
        job = engine.submit(nginx.url("secret.bin").replace("https://", "https://alice:hunter2@"),
                            str(tmp_path / "s.bin"), opts(nginx))
        assert engine.wait(job.id, timeout=30).state == JobState.DONE
    raw = b"".join(p.read_bytes() for p in ferry_home.glob("ferry.sqlite3*"))
    assert b"hunter2" not in raw and b"alice:***@" in raw


def test_a_paused_folder_download_resumes_with_the_files_it_has(sshd, tmp_path):
    # small files arrive first over tar; the large one is slowed down so the pause catches it half-way. The
    # resumed run must take the files it wrote itself as done (not refuse them as "already there") and go on
    remote = sshd.home / f"engine-run-{time.monotonic_ns()}"
    (remote / "small").mkdir(parents=True)
    small = {f"small/s{i:03d}.txt": write_random(remote / "small" / f"s{i:03d}.txt", 5000, seed=i) for i in range(200)}
    big = write_random(remote / "big.bam", 24 * MiB, seed=99)
    sshd.give(remote)
    options = TransferOptions(streams=2, limit_rate=3 * MiB, backend_options={
        "identity": str(sshd.key), "known_hosts": str(sshd.known_hosts)})
    with Engine(retry=FAST_RETRY) as engine:
        here = tmp_path / "here"
        job = engine.submit(sshd.url(str(remote)), str(here), options)
        # the cap is the job's as a whole (the small files' tar stream and the big file share it): wait for both
        assert wait_until(lambda: engine.job(job.id).bytes_done > 6 * MiB
                          and all((here / rel).exists() for rel in small), timeout=60)
        assert engine.pause(job.id).state == JobState.PAUSED
        assert all((here / rel).exists() for rel in small) and not (here / "big.bam").exists()
        engine.resume(job.id)
        final = engine.wait(job.id, timeout=120)
    assert final.state == JobState.DONE, final.error
    assert sha256_of(here / "big.bam") == big
    assert all(sha256_of(here / rel) == digest for rel, digest in small.items())


def test_ssh_jobs_running_side_by_side_keep_their_connections(sshd, tmp_path):
    # the GUI runs up to three jobs at once, often to the same collaborator: each job's OpenSSH sockets live in
    # a folder of its own, which a job starting later must not take for one a crashed Ferry left behind
    remote = sshd.home / f"side-by-side-{time.monotonic_ns()}"
    remote.mkdir()
    digests = {f"f{i}.bin": write_random(remote / f"f{i}.bin", 6 * MiB, seed=70 + i) for i in range(2)}
    up = write_random(tmp_path / "up.bin", 6 * MiB, seed=72)
    sshd.give(remote)
    options = TransferOptions(streams=2, limit_rate=2 * MiB, backend_options={
        "identity": str(sshd.key), "known_hosts": str(sshd.known_hosts)})
    with Engine(max_jobs=3, retry=RetryPolicy(max_retries=0)) as engine:
        jobs = [engine.submit(sshd.url(str(remote / name)), str(tmp_path / name), options) for name in digests]
        jobs.append(engine.submit(str(tmp_path / "up.bin"), sshd.url(str(remote / "up.bin")), options))
        assert wait_until(lambda: all(engine.job(j.id).state == JobState.RUNNING for j in jobs), timeout=30)
        finals = [engine.wait(j.id, timeout=60) for j in jobs]
    assert [f.state for f in finals] == [JobState.DONE] * 3, [f.error for f in finals]
    assert all(sha256_of(tmp_path / name) == digest for name, digest in digests.items())
    assert sha256_of(remote / "up.bin") == up
