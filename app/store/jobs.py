"""The queue table: unfinished jobs, so they survive a restart and resume; in the window's queue finished ones
too, with what they showed (result, notes, a list job's files), until the user removes them."""

from __future__ import annotations

import json
import os
import sqlite3
import time

from app.jobs import Job, JobState
from backends.core.base import TransferOptions
from backends.host.procs import other_process_alive

#: states in which a job belongs to the process that queued or runs it (a paused or failed one is anybody's)
_HELD = ("queued", "running", "verifying")

_COLUMNS = (
    "id, source, dest, backend, options, state, position, bytes_total, bytes_done, attempts, error, error_kind,"
    " created, result, notes, files"
)


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"], source=row["source"], dest=row["dest"], backend=row["backend"],
        options=TransferOptions.from_dict(json.loads(row["options"] or "{}")), state=JobState(row["state"]),
        position=row["position"], bytes_total=row["bytes_total"], bytes_done=row["bytes_done"],
        attempts=row["attempts"], error=row["error"], error_kind=row["error_kind"], created=row["created"],
        result=json.loads(row["result"]) if row["result"] else None, notes=json.loads(row["notes"] or "[]"),
        files={name: tuple(state) for name, state in json.loads(row["files"] or "{}").items()},
    )


class Busy(Exception):
    """Another live Ferry process holds the job."""

    def __init__(self, job_id: int, pid: int) -> None:
        super().__init__(f"job {job_id} is held by process {pid}")
        self.job_id, self.pid = job_id, pid


class JobsTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, source: str, dest: str, backend: str, options: TransferOptions) -> Job:
        """A new job, claimed by this process; its id is never one an earlier job had (history keeps those)."""
        now = time.time()
        position = (self.conn.execute("SELECT MAX(position) FROM jobs").fetchone()[0] or 0) + 1
        last = self.conn.execute(
            "SELECT MAX(n) FROM (SELECT MAX(id) AS n FROM jobs UNION ALL SELECT MAX(job_id) FROM history)"
        ).fetchone()[0]
        job_id = (last or 0) + 1
        self.conn.execute(
            "INSERT INTO jobs (id, source, dest, backend, options, state, position, owner_pid, created, updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, source, dest, backend, json.dumps(options.to_dict()), JobState.QUEUED.value, position,
             os.getpid(), now, now),
        )
        return Job(id=job_id, source=source, dest=dest, backend=backend, options=options,
                   position=position, created=now)

    def take(self, source: str, dest: str, backend: str, options: TransferOptions) -> tuple[Job, bool]:
        """The job for this source and destination, claimed by this process: an unfinished one adopted (so the
        same command resumes), else a new one. Returns (job, adopted).

        One immediate transaction: two processes started together with the same command must not both adopt
        (or both create) the job and then run it side by side. Raises ``Busy`` when another live process
        holds it.
        """
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            existing = self.unfinished_for(source, dest)
            if existing is not None:
                owner = self._live_owner(existing.id)
                if owner:
                    raise Busy(existing.id, owner)
                self.conn.execute("UPDATE jobs SET owner_pid=?, updated=? WHERE id=?",
                                  (os.getpid(), time.time(), existing.id))
                result = (existing, True)
            else:
                result = (self.add(source, dest, backend, options), False)
            self.conn.execute("COMMIT")
            return result
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def claim(self, job_id: int) -> bool:
        """Mark a queued job as this process's before running it; False when another live process has it."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self._live_owner(job_id):
                self.conn.execute("ROLLBACK")
                return False
            self.conn.execute("UPDATE jobs SET owner_pid=? WHERE id=?", (os.getpid(), job_id))
            self.conn.execute("COMMIT")
            return True
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _live_owner(self, job_id: int) -> int | None:
        """The pid of another live process that has this job queued or running, if any."""
        row = self.conn.execute("SELECT state, owner_pid FROM jobs WHERE id=?", (job_id,)).fetchone()
        if row and row["state"] in _HELD and other_process_alive(row["owner_pid"]):
            return row["owner_pid"]
        return None

    def save(self, job: Job) -> None:
        """Write the job's state; a queued or running job is marked as this process's. What it showed (result,
        notes, files) is written once it stops (done, failed, paused, cancelled): a running study's ten thousand
        file states are not written out every few seconds."""
        held = job.state.value in _HELD
        owner = os.getpid() if held else None
        shown = (None, None, None) if held else (
            json.dumps(job.result) if job.result else None, json.dumps(job.notes[-50:]),
            json.dumps(job.files) if job.files else None)
        self.conn.execute(
            "UPDATE jobs SET state=?, position=?, bytes_total=?, bytes_done=?, attempts=?, error=?, error_kind=?,"
            " options=?, owner_pid=?, updated=?, result=?, notes=?, files=? WHERE id=?",
            (job.state.value, job.position, job.bytes_total, job.bytes_done, job.attempts, job.error,
             job.error_kind, json.dumps(job.options.to_dict()), owner, time.time(), *shown, job.id),
        )

    def remove(self, job_id: int) -> None:
        self.conn.execute("DELETE FROM jobs WHERE id=?", (job_id,))

    def trim_finished(self, keep: int) -> int:
        """Done and cancelled jobs beyond the newest ``keep`` leave the queue (their history stays)."""
        cursor = self.conn.execute(
            "DELETE FROM jobs WHERE state IN ('done', 'cancelled') AND id NOT IN (SELECT id FROM jobs WHERE state IN"
            " ('done', 'cancelled') ORDER BY id DESC LIMIT ?)", (keep,))
        return cursor.rowcount

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
        """True when another live process has this job queued or running right now."""
        return self._live_owner(job_id) is not None

    def interrupted_to_queued(self) -> int:
        """Jobs left running by a process that died: back in the queue, to resume."""
        rows = self.conn.execute("SELECT id, owner_pid FROM jobs WHERE state IN ('running', 'verifying')").fetchall()
        dead = [r["id"] for r in rows if not other_process_alive(r["owner_pid"])]
        for job_id in dead:
            self.conn.execute(
                "UPDATE jobs SET state='queued', owner_pid=NULL, updated=? WHERE id=?", (time.time(), job_id)
            )
        return len(dead)
