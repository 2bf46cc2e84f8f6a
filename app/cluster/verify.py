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
from backends.streams.lists import record_entry, verified_here

from .plan import Plan

#: at most this many task records are read (a job of MOST_TASKS tasks over a few rounds)
MOST_RECORDS = 20_000


@dataclass
class Checked:
    verified: list[ListedFile] = field(default_factory=list)
    sized: list[ListedFile] = field(default_factory=list)  # no published checksum: the size at the final name
    missing: list[tuple[ListedFile, str]] = field(default_factory=list)  # (file, why)



def task_records(work: Path, dest: str) -> dict[str, list]:
    """What the tasks' engines recorded as checked in DEST (name → ``record_entry``)."""
    entries: dict[str, list] = {}
    for path in sorted(work.glob("task-*/verified/*.json"))[:MOST_RECORDS]:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a record only saves reading a file again
        if isinstance(record, dict) and record.get("folder") == os.path.abspath(dest):
            entries.update({k: v for k, v in (record.get("files") or {}).items() if isinstance(v, list)})
    return entries


def check(plan: Plan, work: Path, names: set[str] | None = None, seen: dict[str, list] | None = None) -> Checked:
    """Every planned file (or only those in ``names``) at its final name. ``seen``: what earlier looks of this run
    read whole and found right (``record_entry``), kept up to date here: a later look at an unchanged file is a
    ``stat``, one that changed since is read again."""
    records = task_records(work, plan.dest) | (seen if seen is not None else {})
    checked = Checked()
    for file in plan.files:
        if names is not None and file.name not in names:
            continue
        why = _why_not(file, Path(plan.dest) / file.name, records, seen)
        if why:
            checked.missing.append((file, why))
        elif file.checksum:
            checked.verified.append(file)
        else:
            checked.sized.append(file)
    return checked


def _why_not(file: ListedFile, path: Path, records: dict[str, list], seen: dict[str, list] | None = None) -> str:
    """Why ``path`` does not hold ``file`` ("" when it does); a file read whole and found right goes into
    ``seen``."""
    try:
        st = os.lstat(path)
    except OSError:
        return "not there"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if file.size is not None and st.st_size != file.size:
        return f"{st.st_size} bytes where {file.size} were planned"
    if not file.checksum or records.get(file.name) == record_entry(file, st):
        return ""
    if not verified_here(path, file):
        return f"its {file.checksum.algorithm} differs from the published one"
    if seen is not None:
        seen[file.name] = record_entry(file, st)
    return ""
