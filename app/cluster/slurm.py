"""Slurm's commands as Ferry uses them: ``sbatch`` submits the tasks as one job array, ``squeue`` says where each
stands (and why it waits), ``scontrol`` how one that left the queue ended, ``scancel`` ends them.

Each command runs with a timeout, and what it says when it refuses becomes one sentence (``ClusterError``, exit
status 7): no Slurm on this machine, a partition or account refused, a controller that does not answer.
Nothing is parsed from free text except the fields asked for with ``-o``/``--parsable``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from backends.core.errors import TransferError
from backends.destination import write_atomic

#: seconds any one Slurm command may take (a busy controller answers in well under this)
COMMAND_SECONDS = 60
#: Slurm's words for a task that will not run again by itself
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}
#: at most this many lines of ``squeue`` are read (a job array of MOST_TASKS tasks, with room)
MOST_LINES = 5000


class ClusterError(TransferError):
    """Slurm is missing, refused the job, or its tasks could not finish."""

    kind = "cluster"
    exit_status = 7


@dataclass(frozen=True)
class Settings:
    """What the user asked of Slurm for this job (``--nodes``, ``--partition``…), and its rounds after the first."""

    nodes: int
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    extra: tuple[str, ...] = ()
    retries: int = 2  # rounds after the first
    name: str = "ferry"


@dataclass(frozen=True)
class TaskState:
    task: int  # the array index
    state: str  # Slurm's: PENDING, RUNNING, COMPLETING, …
    node: str  # where it runs ("" while pending)
    reason: str  # why it waits ("None" once it runs)


def need(name: str) -> str:
    """The path of Slurm's ``name``, or the sentence that says there is no Slurm here."""
    found = shutil.which(name)
    if found is None:
        raise ClusterError(f"--cluster slurm needs Slurm's {name} on PATH, and this machine has none; run the copy "
                           "on the cluster's login node (or with --on site:NAME there), or without --cluster.")
    return found


#: what squeue and scancel say of a job the controller has forgotten (past MinJobAge): gone, not an error
FORGOTTEN = "Invalid job id specified"


def _run(args: list[str], what: str, *, gone_ok: bool = False) -> str:
    """Slurm's ``args[0]``'s output; ``gone_ok``: a job the controller no longer knows is an empty answer."""
    try:
        done = subprocess.run([need(args[0]), *args[1:]], capture_output=True, text=True,
                              timeout=COMMAND_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"Slurm's {args[0]} did not answer within {COMMAND_SECONDS} s while {what}; the "
                           "controller may be down or busy. Check with sinfo, then run the same command "
                           "again.") from None
    except OSError as exc:
        raise ClusterError(f"Slurm's {args[0]} could not be started ({exc.strerror}) while {what}.") from None
    if done.returncode != 0 and gone_ok and FORGOTTEN in done.stderr:
        return ""
    if done.returncode != 0:
        said = _slurm_said(done.stderr) or f"exit status {done.returncode}"
        raise ClusterError(f"Slurm refused {what}: {said}. Check the partition, account and time limit "
                           "(sinfo, sacctmgr show assoc), then run the same command again.")
    return done.stdout


def _slurm_said(stderr: str) -> str:
    """Slurm's own reason, from its last error line (``sbatch: error: Batch job submission failed: X``)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines[-20:]):
        text = re.sub(r"^\w+: error: ", "", line)
        text = text.removeprefix("Batch job submission failed: ")
        if text:
            return text.rstrip(".")[:300]
    return ""


#: a time limit at least this long gets ``--signal=B:TERM@WARN_SECONDS``; a shorter one is ended by Slurm's own
#: SIGTERM at the limit (Slurm may send an early signal up to 60 s before the time asked for)
WARN_FROM, WARN_SECONDS = 600, 60


def limit_seconds(text: str) -> int | None:
    """sbatch's ``--time`` in seconds: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S; None for UNLIMITED or what
    Slurm would refuse itself."""
    days, _, rest = text.strip().rpartition("-") if "-" in text else ("0", "", text.strip())
    parts = rest.split(":")
    if not days.isdigit() or not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        return None
    numbers = [int(p) for p in parts]
    if "-" in text:  # D-H, D-H:M, D-H:M:S
        numbers += [0] * (3 - len(numbers))
        hours, minutes, seconds = numbers
    elif len(numbers) == 1:
        hours, minutes, seconds = 0, numbers[0], 0
    elif len(numbers) == 2:
        hours, minutes, seconds = 0, numbers[0], numbers[1]
    else:
        hours, minutes, seconds = numbers
    return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds


def task_command(work: Path, number: int) -> list[str]:
    """What each task runs: this same Ferry (on the shared file system), or ``LABFERRY_CLUSTER_COMMAND``."""
    given = os.environ.get("LABFERRY_CLUSTER_COMMAND")
    ferry = shlex.split(given) if given else [sys.executable, "-m", "app"]
    return [*ferry, "cluster-task", str(work), str(number), "${SLURM_ARRAY_TASK_ID}"]


def script(work: Path, number: int) -> str:
    """The batch script of round ``number``: the task replaces the shell (``exec``), so the signal Slurm sends
    before the time limit (``--signal=B:TERM@…``) reaches Ferry itself."""
    words = " ".join(w if w.startswith("$") else shlex.quote(w) for w in task_command(work, number))
    return f"#!/bin/sh\n# Ferry's cluster task: round {number} of the copy planned in {work}\nexec {words}\n"


def submit(work: Path, number: int, tasks: int, settings: Settings) -> str:
    """Submit round ``number`` as an array of ``tasks``; Slurm's job id."""
    path = work / f"round-{number}.sh"
    write_atomic(path, script(work, number).encode())  # in the user-only work folder, through no link
    path.chmod(0o700)
    args = ["sbatch", "--parsable", f"--array=0-{tasks - 1}", f"--job-name={settings.name}",
            f"--output={work}/task-{number}-%a.log", "--nodes=1", "--ntasks=1", "--exclusive", "--requeue",
            f"--chdir={work}"]
    limit = limit_seconds(settings.time) if settings.time else None
    if limit is None or limit >= WARN_FROM:
        args.append(f"--signal=B:TERM@{WARN_SECONDS}")
    for flag, value in (("partition", settings.partition), ("account", settings.account), ("time", settings.time)):
        if value:
            args.append(f"--{flag}={value}")
    args += list(settings.extra)
    out = _run([*args, str(path)], f"the job ({tasks} tasks)")
    job = out.strip().split(";")[0]
    if not job.isdigit():
        raise ClusterError(f"sbatch answered '{out.strip()[:80]}' where Ferry expected a job id; nothing more was "
                           "submitted. Run scancel on any ferry job squeue shows, then the same command again.")
    return job


def queue(job: str) -> dict[int, TaskState]:
    """The tasks of ``job`` still in the queue (pending, running, completing), by array index."""
    out = _run(["squeue", "-h", "-r", "-j", job, "-o", "%K|%T|%N|%r"], f"asking where job {job} stands",
               gone_ok=True)
    found: dict[int, TaskState] = {}
    for line in out.splitlines()[:MOST_LINES]:
        fields = line.strip().split("|")
        if len(fields) == 4 and fields[0].isdigit():
            found[int(fields[0])] = TaskState(int(fields[0]), fields[1], fields[2], fields[3])
    return found


def ended_as(job: str, task: int) -> str:
    """How a task that left the queue ended (``scontrol show job``: COMPLETED, TIMEOUT, NODE_FAIL, …), or "".
    The controller keeps it for ``MinJobAge`` seconds; after that nothing is said."""
    try:
        out = _run(["scontrol", "-o", "show", "job", f"{job}_{task}"], f"asking how task {task} ended")
    except ClusterError:
        return ""
    match = re.search(r"\bJobState=(\S+)", out)
    return match.group(1) if match else ""


def cancel(job: str) -> None:
    """Every task of ``job`` ended (``scancel``); their shares are resumed by the same command."""
    _run(["scancel", job], f"cancelling job {job}")
