"""The end of a cluster job, on the login node: every planned file looked at under its final name.

A file counts only if its final name holds a regular file (no link) of the planned size. One with a published
checksum (ENA's MD5) is *verified* when a task's record says Ferry checked exactly this file (size, time and the
checksum it was checked against: the quick check a second single-node run makes), or when it is read again here
and matches; one without is *size checked*, as a single-node list job says of it. Whatever is missing or
differs goes back into the next round of tasks, so nothing is lost and nothing is fetched twice.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from backends.core.base import ListedFile
from backends.streams.hashing import hash_file

from .plan import Plan

#: at most this many task records are read (a job of MOST_TASKS tasks over a few rounds)
MOST_RECORDS = 20_000


@dataclass
class Checked:
    verified: list[ListedFile] = field(default_factory=list)
    sized: list[ListedFile] = field(default_factory=list)  # no published checksum: the size at the final name
    missing: list[tuple[ListedFile, str]] = field(default_factory=list)  # (file, why)

    @property
    def complete(self) -> bool:
        return not self.missing


def task_records(work: Path, dest: str) -> dict[str, list]:
    """What the tasks' engines recorded as checked in DEST (name → [size, mtime_ns, checksum])."""
    entries: dict[str, list] = {}
    for path in sorted(work.glob("task-*/verified/*.json"))[:MOST_RECORDS]:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a record only saves reading a file again
        if isinstance(record, dict) and record.get("folder") == os.path.abspath(dest):
            entries.update({k: v for k, v in (record.get("files") or {}).items() if isinstance(v, list)})
    return entries


def check(plan: Plan, work: Path, names: set[str] | None = None) -> Checked:
    """Every planned file (or only those in ``names``) at its final name."""
    records = task_records(work, plan.dest)
    checked = Checked()
    for file in plan.files:
        if names is not None and file.name not in names:
            continue
        why = _why_not(file, Path(plan.dest) / file.name, records)
        if why:
            checked.missing.append((file, why))
        elif file.checksum:
            checked.verified.append(file)
        else:
            checked.sized.append(file)
    return checked


def _why_not(file: ListedFile, path: Path, records: dict[str, list]) -> str:
    """Why ``path`` does not hold ``file`` ("" when it does)."""
    try:
        st = os.lstat(path)
    except OSError:
        return "not there"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if file.size is not None and st.st_size != file.size:
        return f"{st.st_size} bytes where {file.size} were planned"
    if not file.checksum:
        return ""
    said = f"{file.checksum.algorithm}:{file.checksum.hexdigest.lower()}"
    if records.get(file.name) == [st.st_size, st.st_mtime_ns, said]:
        return ""
    algorithm = file.checksum.algorithm
    if hash_file(path, (algorithm,))[algorithm] != file.checksum.hexdigest.lower():
        return f"its {algorithm} differs from the published one"
    return ""
