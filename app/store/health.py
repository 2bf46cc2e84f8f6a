"""A database Ferry cannot use, told apart from one it only has to wait for.

A database another program damaged (a disk that lost blocks, a copy cut short, a file that is not SQLite at
all) would otherwise end every command in a traceback. It is checked once per process when first opened: its
header (SQLite's magic, a page size SQLite can write, the size the header promises against the file's), then
SQLite's own ``quick_check``. A damaged one is moved aside under a dated name, never deleted (the history in it
may be worth recovering), and a new one is made; ``labferry doctor`` lists what was kept. The check runs under
a lock file, so two commands started together never move each other's new database.

A database another process holds is not damaged: ``Patient`` waits for it, says so once, and after
``LABFERRY_DB_WAIT`` seconds (30) gives up in one sentence (exit 5).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

from backends.core.errors import LocalError
from backends.host import portable

MAGIC = b"SQLite format 3\x00"
ASIDE = ".damaged-"  # the moved-aside files: ferry.sqlite3.damaged-YYYYmmdd-HHMMSS
WAIT_ENV = "LABFERRY_DB_WAIT"
_checked: set[Path] = set()
#: what was moved aside in this process, for the window to show (the command line has said it on stderr)
notes: list[str] = []


def what_is_wrong(path: Path) -> str | None:
    """Why ``path`` is not a database Ferry can use, in a few words; None when it is fine, new or only busy."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return None
    if size == 0:
        return None  # made empty and user-only by app.paths, before SQLite writes its first page
    if len(header) < 100 or not header.startswith(MAGIC):
        return "it is not an SQLite database"
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return "its header is damaged"
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and size < pages * page:
        return f"it is cut short ({size:,} of the {pages * page:,} bytes its header gives)"
    return _quick_check(path)


def _quick_check(path: Path) -> str | None:
    try:
        conn = sqlite3.connect(path, timeout=1)
    except sqlite3.DatabaseError as exc:
        return None if _busy(exc) else f"SQLite cannot open it ({exc})"
    try:
        rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as exc:
        return None if _busy(exc) else f"SQLite finds it damaged ({exc})"
    finally:
        conn.close()
    found = [row[0] for row in rows]
    if found == ["ok"]:
        return None
    lines = [line.strip() for text in found for line in str(text).splitlines()]
    return f"SQLite finds it damaged: {'; '.join(line for line in lines if line and '***' not in line)[:200]}"


def _busy(exc: Exception) -> bool:
    return any(word in str(exc) for word in ("locked", "busy"))


def check_once(path: Path) -> None:
    """A damaged database at ``path`` moved aside (with a note on stderr), once per process."""
    if path in _checked or not path.exists():
        return
    _checked.add(path)
    lock = path.with_name(path.name + ".check")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | portable.O_CLOEXEC | portable.O_NOFOLLOW, 0o600)
    try:
        _wait_for_lock(fd)
        why = what_is_wrong(path)
        if why:
            aside = move_aside(path)
            notes.append(f"Ferry's database {path} was damaged ({why}); it was moved to {aside} and a new one "
                         "started. `labferry doctor` lists what was kept.")
            print(f"labferry: note: {notes[-1]}", file=sys.stderr)
    finally:
        os.close(fd)


def _wait_for_lock(fd: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            portable.lock_exclusive(fd)
            return
        except portable.Busy:
            if time.monotonic() > deadline:
                raise LocalError("Another Ferry has been checking its database for 30 s; wait for it to end, or "
                                 "set LABFERRY_HOME to another folder.") from None
            time.sleep(0.05)


def move_aside(path: Path) -> Path:
    """The damaged database and its WAL and shared-memory files under a dated name beside it, user-only."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}{ASIDE}{stamp}")
    number = 1
    while aside.exists():
        number += 1
        aside = path.with_name(f"{path.name}{ASIDE}{stamp}-{number}")
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    os.replace(path, aside)
    portable.set_mode(aside, 0o600)
    portable.private_file(path)  # the new database is user-only from its first byte, as app.paths makes it
    return aside


def kept_aside(folder: Path) -> list[Path]:
    """The damaged databases moved aside in ``folder``, oldest first."""
    return sorted(p for p in folder.glob(f"*{ASIDE}*") if not p.name.endswith(("-wal", "-shm")))


def wait_limit() -> float:
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV, "30")))
    except ValueError:
        return 30.0


class Patient(sqlite3.Connection):
    """A connection that waits for a database another process holds, says so once on stderr, and gives up in
    one sentence after ``wait_limit()`` seconds instead of SQLite's bare "database is locked"."""

    said = False
    where = "ferry.sqlite3"

    def execute(self, sql, parameters=(), /):
        deadline = None
        while True:
            try:
                return super().execute(sql, parameters)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                now = time.monotonic()
                deadline = deadline or now + wait_limit()
                path = self.where
                if now >= deadline:
                    raise LocalError(f"Ferry's database {path} is held by another program (another Ferry, or a "
                                     f"backup or sync tool) and stayed so for {wait_limit():.0f} s; close that "
                                     "program and try again, or set LABFERRY_HOME to another folder.") from None
                if not Patient.said:
                    Patient.said = True
                    print(f"labferry: waiting for Ferry's database {path}, which another program holds (up to "
                          f"{wait_limit():.0f} s)…", file=sys.stderr, flush=True)
                time.sleep(0.05)
