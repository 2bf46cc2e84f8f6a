"""The queue table: unfinished jobs, so they survive a restart and resume."""

from __future__ import annotations

import json
import os
import sqlite3
import time

from app.engine.job import Job, JobState
from backends.base import TransferOptions
from backends.procs import other_process_alive

_COLUMNS = (
    "id, source, dest, backend, options, state, position, bytes_total, bytes_done, attempts, error, error_kind,"
    " created"
)


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"], source=row["source"], dest=row["dest"], backend=row["backend"],
        options=TransferOptions.from_dict(json.loads(row["options"] or "{}")), state=JobState(row["state"]),
        position=row["position"], bytes_total=row["bytes_total"], bytes_done=row["bytes_done"],
        attempts=row["attempts"], error=row["error"], error_kind=row["error_kind"], created=row["created"],
    )


class JobsTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, source: str, dest: str, backend: str, options: TransferOptions) -> Job:
        now = time.time()
        position = (self.conn.execute("SELECT MAX(position) FROM jobs").fetchone()[0] or 0) + 1
        cur = self.conn.execute(
            "INSERT INTO jobs (source, dest, backend, options, state, position, created, updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (source, dest, backend, json.dumps(options.to_dict()), JobState.QUEUED.value, position, now, now),
        )
        return Job(id=cur.lastrowid, source=source, dest=dest, backend=backend, options=options,
                   position=position, created=now)

    def save(self, job: Job) -> None:
        """Write the job's state; a running job is marked as this process's."""
        owner = os.getpid() if job.state.active else None
        self.conn.execute(
            "UPDATE jobs SET state=?, position=?, bytes_total=?, bytes_done=?, attempts=?, error=?, error_kind=?,"
            " options=?, owner_pid=?, updated=? WHERE id=?",
            (job.state.value, job.position, job.bytes_total, job.bytes_done, job.attempts, job.error,
             job.error_kind, json.dumps(job.options.to_dict()), owner, time.time(), job.id),
        )

    def remove(self, job_id: int) -> None:
        self.conn.execute("DELETE FROM jobs WHERE id=?", (job_id,))

    def get(self, job_id: int) -> Job | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
        return _job(row) if row else None

    def all(self) -> list[Job]:
        return [_job(r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM jobs ORDER BY position")]

    def unfinished_for(self, source: str, dest: str) -> Job | None:
        """An earlier job for the same source and destination that never finished."""
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM jobs WHERE source=? AND dest=? AND state NOT IN ('done', 'cancelled')"
            " ORDER BY id DESC LIMIT 1",
            (source, dest),
        ).fetchone()
        return _job(row) if row else None

    def running_elsewhere(self, job_id: int) -> bool:
        """True when another live process is running this job right now."""
        row = self.conn.execute("SELECT state, owner_pid FROM jobs WHERE id=?", (job_id,)).fetchone()
        return bool(row and row["state"] in ("running", "verifying") and other_process_alive(row["owner_pid"]))

    def interrupted_to_queued(self) -> int:
        """Jobs left running by a process that died: back in the queue, to resume."""
        rows = self.conn.execute("SELECT id, owner_pid FROM jobs WHERE state IN ('running', 'verifying')").fetchall()
        dead = [r["id"] for r in rows if not other_process_alive(r["owner_pid"])]
        for job_id in dead:
            self.conn.execute(
                "UPDATE jobs SET state='queued', owner_pid=NULL, updated=? WHERE id=?", (time.time(), job_id)
            )
        return len(dead)
