"""The cluster job watched as one, from where the command was started.

A round deals what is still missing to at most ``--nodes`` tasks and submits them as one job array; the watcher
then asks ``squeue`` where each task stands (and why a pending one waits) every ``POLL`` seconds, and reads the
tasks' progress files every ``TICK``, until the array has left the queue. What a failed, preempted or timed-out
task left is found by looking at the final names (``verify.check``), not by trusting the task, and dealt again in
the next round, up to ``--retries`` rounds. A node that dies mid-task is Slurm's to handle first: the array is
submitted with ``--requeue``, so the task runs again elsewhere with the same share and resumes its part files.

The job ids are kept in ``jobs.json`` in the work folder: the same command run again follows an array still in
the queue instead of submitting a second one over the same files. Ctrl-C or SIGTERM cancels the arrays
(``scancel``) and waits, within ``CANCEL_SECONDS``, until Slurm says they are gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app import stops
from app.units import format_bytes, format_rate
from backends.core.errors import TransferError
from backends.destination import write_atomic

from . import slurm
from .plan import MOST_TASKS, Plan, deal, save_round
from .task import progress_path
from .verify import Checked, check

#: seconds between two questions to Slurm's controller (a controller with thousands of users is asked every
#: few seconds at most); the progress files, on the shared file system, are read every TICK
POLL, TICK = 2.0, 0.5
#: seconds a cancelled array may take to leave the queue
CANCEL_SECONDS = 60
#: a progress file older than this while its task runs means the task's node stopped writing (said so)
STALE_SECONDS = 60


@dataclass
class Node:
    """One task as the watcher last saw it."""

    task: int
    node: str = ""
    state: str = "PENDING"
    reason: str = ""
    bytes_done: int = 0
    bytes_total: int = 0
    rate: float = 0.0
    ended: str = ""  # the task's own word once it stopped: done, failed, stopped


@dataclass
class Watch:
    plan: Plan
    work: Path
    settings: slurm.Settings
    show: Callable[[str], None]  # the progress line
    say: Callable[[str], None]  # a line that stays
    nodes: dict[int, Node] = field(default_factory=dict)
    jobs: list[tuple[int, str]] = field(default_factory=list)  # (round, job id) of this work folder
    began: float = field(default_factory=time.time)
    round_bytes: int = 0  # what the round followed now fetches
    #: files this run read whole and found right (``verify.check``): each is read once, then looked at by stat
    seen: dict[str, list] = field(default_factory=dict)

    def run(self) -> Checked:
        """Rounds until every file is at its final name and checked, or ``ClusterError``."""
        self._load_jobs()
        for number, job in list(self.jobs):
            if slurm.queue(job):
                self.say(f"labferry: job {job} (round {number}) is still in Slurm's queue; following it.")
                self._follow(number, job)
        rounds = 0
        checked = check(self.plan, self.work, seen=self.seen)
        while checked.missing:
            if rounds > self.settings.retries:
                raise slurm.ClusterError(_left_sentence(checked.missing, rounds))
            if rounds:
                self.say(f"labferry: {len(checked.missing)} files are not at their final names yet; round "
                         f"{rounds + 1} fetches them.")
            number = (max(n for n, _ in self.jobs) + 1) if self.jobs else 1
            files = [f for f, _ in checked.missing]
            shares = deal([f.size or 0 for f in files], min(self.settings.nodes, len(files)))
            save_round(self.work, number, [[files[i].name for i in share] for share in shares])
            job = slurm.submit(self.work, number, len(shares), self.settings)
            self.jobs.append((number, job))
            self._save_jobs()
            self.say(f"labferry: submitted job {job}: {len(shares)} tasks, {len(files)} files, "
                     f"{format_bytes(sum(f.size or 0 for f in files))}.")
            self._follow(number, job)
            rounds += 1
            checked = check(self.plan, self.work, {f.name for f in files}, self.seen)
        return check(self.plan, self.work, seen=self.seen)  # every file again (a stat where none changed)

    def _follow(self, number: int, job: str) -> None:
        """Until the array ``job`` has left the queue; Ctrl-C or SIGTERM cancels it."""
        self.nodes = {}
        sizes = {f.name: f.size or 0 for f in self.plan.files}
        self.round_bytes = _round_bytes(self.work, number, sizes)
        try:
            queued, asked = slurm.queue(job), time.monotonic()
            while queued:
                self._look(number, queued)
                self.show(self.line())
                time.sleep(TICK)
                ending = all(self.nodes.get(k) and self.nodes[k].ended for k in queued)
                if ending or time.monotonic() - asked >= POLL:  # the queue, at most every POLL seconds
                    queued, asked = slurm.queue(job), time.monotonic()
            self._look(number, queued)
            self.show(self.line())
        except stops.STOPS:
            self.cancel()
            raise
        if not any(self.work.glob(f"progress-{number}-*.json")):  # a second round would fare no better
            raise slurm.ClusterError(_never_started(self.work, number, job))
        for node in sorted(self.nodes.values(), key=lambda n: n.task):
            if node.ended != "done":
                ended = slurm.ended_as(job, node.task) or node.ended or "gone"
                self.say(f"labferry: task {node.task} of job {job} on {node.node or 'no node'} ended ({ended}); "
                         "what it left is fetched again.")

    def _look(self, number: int, queued: dict[int, slurm.TaskState]) -> None:
        for task, state in queued.items():
            node = self.nodes.setdefault(task, Node(task))
            if node.state == "RUNNING" and state.state == "PENDING":  # the node failed, or a preemption
                self.say(f"labferry: task {task} on {node.node} went back to Slurm's queue (requeued: its node "
                         "failed, or it was preempted); it resumes its share on the next free node.")
                node.node, node.rate = "", 0.0
            node.state, node.reason, node.node = state.state, state.reason, state.node or node.node
        for path in self.work.glob(f"progress-{number}-*.json"):
            try:
                seen = json.loads(path.read_text())
                task = int(seen["task"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being replaced; the next look reads it
            if path != progress_path(self.work, number, task):
                continue
            node = self.nodes.setdefault(task, Node(task))
            if node.state == "PENDING":
                continue  # what a requeued task's last run wrote
            node.node = str(seen.get("node") or node.node)
            node.bytes_done, node.bytes_total = int(seen.get("bytes_done") or 0), int(seen.get("bytes_total") or 0)
            node.rate = float(seen.get("rate") or 0.0)
            node.ended = seen["state"] if seen.get("state") in ("done", "failed", "stopped") else ""
            if task not in queued:
                node.state = "ENDED"

    def line(self) -> str:
        """One line for the whole job: how much of the plan, how fast, then each task."""
        total = self.plan.total_bytes
        moved = sum(n.bytes_done for n in self.nodes.values())
        here = total - self.round_bytes  # files at their final names before this round
        done = min(total, here + moved)
        pct = f"{100 * done / total:5.1f}%" if total else "  ?  "
        rate = sum(n.rate for n in self.nodes.values())
        parts = [_node_text(n) for n in sorted(self.nodes.values(), key=lambda n: n.task)]
        return f"{pct}  {format_bytes(done)} / {format_bytes(total)}  {format_rate(rate)}  " + " · ".join(parts)

    def cancel(self) -> None:
        """Every array of this run cancelled, and waited for until Slurm says it left the queue."""
        for _, job in self.jobs:
            try:
                if slurm.queue(job):  # only what is still there: an earlier run's arrays have ended
                    slurm.cancel(job)
            except TransferError as exc:
                self.say(f"labferry: {exc}")
        deadline = time.monotonic() + CANCEL_SECONDS
        while time.monotonic() < deadline:
            try:
                if not any(slurm.queue(job) for _, job in self.jobs):
                    return
            except TransferError:
                return
            self.show(f"waiting for Slurm to end job {', '.join(j for _, j in self.jobs)} (scancel sent)…")
            time.sleep(1)
        self.say(f"labferry: Slurm still lists job {', '.join(j for _, j in self.jobs)} {CANCEL_SECONDS} s after "
                 "scancel; check with squeue.")

    def _load_jobs(self) -> None:
        try:
            self.jobs = [(int(n), str(j)) for n, j in json.loads((self.work / "jobs.json").read_text())][:1000]
        except (OSError, ValueError, TypeError):
            self.jobs = []

    def _save_jobs(self) -> None:
        write_atomic(self.work / "jobs.json", json.dumps(self.jobs).encode())


def _round_bytes(work: Path, number: int, sizes: dict[str, int]) -> int:
    """The bytes round ``number`` deals (0 when its file cannot be read: the line then counts from zero)."""
    try:
        shares = json.loads((work / f"round-{number}.json").read_text())["shares"]
        return sum(sizes.get(str(name), 0) for share in shares[:MOST_TASKS] for name in share)
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _node_text(node: Node) -> str:
    where = f"t{node.task} {node.node}" if node.node else f"t{node.task}"  # a requeued task changes node
    if node.state == "PENDING":
        return f"{where} pending ({node.reason})" if node.reason and node.reason != "None" else f"{where} pending"
    if node.ended:
        return f"{where} {node.ended} {format_bytes(node.bytes_done)}"
    return f"{where} {format_rate(node.rate)} {format_bytes(node.bytes_done)}/{format_bytes(node.bytes_total)}"


def _never_started(work: Path, number: int, job: str) -> str:
    """No task of the round wrote a word: Ferry did not start on the nodes, or they do not see the work folder."""
    said = ""
    try:
        lines = (work / f"task-{number}-0.log").read_text(errors="replace").strip().splitlines()
        said = f" (task 0 said: {lines[-1].strip()[:200]})" if lines else ""
    except OSError:
        pass
    return (f"No task of job {job} started Ferry{said}. Ferry must be on the nodes at the path it has here (or "
            f"set LABFERRY_CLUSTER_COMMAND), and DEST's folder shared with them; see {work}/task-{number}-*.log.")


def _left_sentence(todo: list, rounds: int) -> str:
    named = ", ".join(f"{f.name} ({why})" for f, why in todo[:3])
    more = f" and {len(todo) - 3} more" if len(todo) > 3 else ""
    return (f"After {rounds} rounds of tasks {len(todo)} files are still not at their final names: {named}{more}. "
            "The tasks' logs are in the cluster folder beside DEST; run the same command again to go on.")
