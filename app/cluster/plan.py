"""A cluster job's plan: every file SRC holds, dealt to the tasks by bytes, kept in the job's work folder.

The plan is made once, where the command runs, and written beside DEST (``.NAME.ferry-cluster/``, the user's
alone) on the file system the nodes share: ``plan.json`` holds the files (address, name below DEST, size, the
published checksum), and each round of tasks its ``round-R.json``: which files each task of the array takes. A
task reads only its own list, so the nodes never list SRC again, and a file is in exactly one share: nothing is
fetched twice.

Shares are dealt largest file first to the lightest share (LPT, Graham 1969: the heaviest share is within 4/3
of the best possible), so the nodes finish together when their links are alike.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from backends.core.base import ListedFile
from backends.core.errors import BadRequest, LocalError
from backends.destination import write_atomic
from backends.host import portable

#: the work folder beside DEST is named ``.NAME`` + this
WORK_SUFFIX = ".ferry-cluster"
#: a plan holds at most this many files (its JSON is read by every task: ~150 bytes a file)
MOST_FILES = 5_000_000
#: at most this many tasks in one array (Slurm's default MaxArraySize is 1001)
MOST_TASKS = 1000


@dataclass(frozen=True)
class Plan:
    label: str  # what SRC was, for sentences and the History
    dest: str  # the folder every task writes into
    files: tuple[ListedFile, ...]
    overrides: dict  # what the user typed (``overrides_to_wire``), for each task's engine
    budget: int  # connections to the host for all tasks together: each task gets its share

    @property
    def total_bytes(self) -> int:
        return sum(f.size or 0 for f in self.files)

    def to_dict(self) -> dict:
        return {"label": self.label, "dest": self.dest, "files": [f.to_dict() for f in self.files],
                "overrides": self.overrides, "budget": self.budget}

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        return cls(d["label"], d["dest"], tuple(ListedFile.from_dict(f) for f in d["files"]), d["overrides"],
                   int(d["budget"]))


def deal(sizes: Sequence[int], tasks: int) -> list[list[int]]:
    """The indexes of ``sizes`` in ``tasks`` shares of about equal bytes (empty shares dropped)."""
    shares: list[list[int]] = [[] for _ in range(max(1, tasks))]
    lightest = [(0, k) for k in range(len(shares))]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, k = heapq.heappop(lightest)
        shares[k].append(i)
        heapq.heappush(lightest, (load + sizes[i], k))
    return [share for share in shares if share]


def work_folder(dest: Path) -> Path:
    """Where the plan, the tasks' progress and logs live: beside DEST, on the file system the nodes share."""
    return dest.parent / f".{dest.name}{WORK_SUFFIX}"


def make_work(dest: Path) -> Path:
    """The work folder, made the user's alone (another user of the cluster could otherwise read the addresses
    or plant a plan); an existing one is taken up (the same command again resumes)."""
    work = work_folder(dest)
    try:
        work.mkdir(mode=0o700, parents=True, exist_ok=True)
        if work.is_symlink() or not work.is_dir():
            raise LocalError(f"{work} is not a folder of Ferry's; move it away and run the same command again.")
        portable.keep_private(work)
    except OSError as exc:
        raise LocalError(f"Ferry cannot make its cluster folder {work} ({exc.strerror}); DEST's parent must be "
                         "writable and shared with the nodes.") from None
    return work


def save(plan: Plan, work: Path) -> None:
    write_atomic(work / "plan.json", json.dumps(plan.to_dict()).encode())


def load(work: Path) -> Plan:
    try:
        return Plan.from_dict(json.loads((work / "plan.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LocalError(f"The cluster plan in {work} cannot be read ({exc}); run the copy again from the login "
                         "node.") from None


def save_round(work: Path, number: int, shares: list[list[str]]) -> Path:
    """Round ``number``'s shares (file names per task)."""
    path = work / f"round-{number}.json"
    write_atomic(path, json.dumps({"round": number, "shares": shares}).encode())
    return path


def share_of(work: Path, number: int, task: int) -> list[str]:
    try:
        shares = json.loads((work / f"round-{number}.json").read_text())["shares"]
        return [str(name) for name in shares[task]]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise LocalError(f"Task {task} of round {number} has no share in {work} ({exc}); the plan was changed "
                         "or removed while the job ran.") from None


def planned(label: str, dest: Path, files: list[ListedFile], overrides: dict, budget: int) -> Plan:
    if not files:
        raise BadRequest(f"{label} holds no file to copy; nothing was submitted.")
    if len(files) > MOST_FILES:
        raise BadRequest(f"{label} holds {len(files)} files, more than one cluster job plans ({MOST_FILES}); copy "
                         "its folders one job each.")
    return Plan(label, os.fspath(dest), tuple(files), overrides, budget)
