"""The SQLite store: migrations, queue, history filters, the benchmark log."""

from __future__ import annotations

import sqlite3
import time

import pytest

from app.jobs import JobState
from app.store import HistoryFilter, Store
from app.store.db import SCHEMA_VERSION, SchemaTooNew, connect
from backends.core.base import Checksum, TransferOptions


def test_fresh_database_is_migrated_and_in_wal_mode(tmp_path):
    with Store(tmp_path / "f.db") as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused_with_a_sentence(tmp_path):
    path = tmp_path / "f.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(SchemaTooNew, match="newer Ferry"):
        connect(path)


def test_jobs_round_trip_with_options(tmp_path):
    with Store(tmp_path / "f.db") as store:
        options = TransferOptions(streams=8, checksum=Checksum("sha256", "ab" * 32), limit_rate=1000)
        job = store.jobs.add("https://h/x", "/tmp/x", "https", options)
        job.state, job.bytes_done = JobState.PAUSED, 42
        store.jobs.save(job)
        [back] = store.jobs.all()
        assert back.state == JobState.PAUSED and back.bytes_done == 42
        assert back.options.streams == 8 and back.options.checksum.hexdigest == "ab" * 32
        assert back.options.limit_rate == 1000
        assert store.jobs.unfinished_for("https://h/x", "/tmp/x").id == job.id


def test_running_jobs_of_a_dead_process_go_back_to_the_queue(tmp_path):
    with Store(tmp_path / "f.db") as store:
        job = store.jobs.add("https://h/x", "/tmp/x", "https", TransferOptions())
        job.state = JobState.RUNNING
        store.jobs.save(job)
        store.conn.execute("UPDATE jobs SET owner_pid = 999999999")
        assert store.jobs.interrupted_to_queued() == 1
        assert store.jobs.get(job.id).state == JobState.QUEUED


def test_history_filters(tmp_path):
    with Store(tmp_path / "f.db") as store:
        now = time.time()
        for i, (outcome, backend) in enumerate([("done", "https"), ("failed", "https"), ("done", "sftp")]):
            store.history.add(source=f"https://h/file_{i}%.bin", dest=f"/d/{i}", backend=backend, outcome=outcome,
                              finished=now - i * 100)
        assert store.history.count() == 3
        assert [r["dest"] for r in store.history.query()] == ["/d/0", "/d/1", "/d/2"]
        assert store.history.count(HistoryFilter(outcome="done")) == 2
        assert store.history.count(HistoryFilter(backend="sftp")) == 1
        assert store.history.count(HistoryFilter(search="file_1%")) == 1  # LIKE wildcards are literal
        assert store.history.count(HistoryFilter(since=now - 150)) == 2


def test_best_streams_prefers_recent_fast_meaningful_runs(tmp_path):
    with Store(tmp_path / "f.db") as store:
        log, now, big = store.benchmarks, time.time(), 1 << 30
        log.add(job_id=1, backend="https", peer_host="h", streams=8, bytes=big, seconds=20, rtt_ms=50,
                started=now - 60 * 86400)  # too old
        log.add(job_id=2, backend="https", peer_host="h", streams=32, bytes=big, seconds=10, rtt_ms=50, started=now)
        log.add(job_id=3, backend="https", peer_host="h", streams=4, bytes=1000, seconds=0.001, rtt_ms=50,
                started=now)  # too small to mean anything
        log.add(job_id=4, backend="https", peer_host="h", streams=16, bytes=big, seconds=12, rtt_ms=50, started=now)
        assert log.best_streams("h", "https") == 32
        assert log.best_streams("other", "https") is None
