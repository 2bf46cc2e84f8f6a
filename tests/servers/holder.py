"""A second process that holds Ferry's SQLite database, as another Ferry, a backup or a sync tool may: an exclusive
lock taken in its own process, for the tests of a busy store (CLI and window)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("INSERT INTO settings VALUES ('held', 'yes')")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def hold_database(db: Path, seconds: float) -> subprocess.Popen:
    """The holder, once it holds the lock (kill it to let go, or it lets go after ``seconds``)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder
