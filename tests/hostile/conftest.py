"""Hostile servers: real sockets on 127.0.0.1 that the tests start, misbehaving on purpose, and Ferry run as a
user runs it (the CLI in its own process). Every case asserts what reached disk, the process's peak memory
and the time it took to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.hostile_http import HostileServer, hostile

MiB = 1024 * 1024


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float  # the process's peak resident memory

    @property
    def said(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("labferry: ")]


def ferry(*args: str, home: Path, timeout: float = 120, env: dict | None = None) -> Ran:
    """``labferry ARGS`` in its own process; its own peak memory comes from ``wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "app", *args], stdout=out, stderr=err,
                                env=dict(env or os.environ, LABFERRY_HOME=str(home)))
        killer = threading.Timer(timeout, lambda: os.kill(proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - began
        out.seek(0)
        err.seek(0)
        ran = Ran(proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                  seconds, usage.ru_maxrss / 1024)
    assert ran.returncode != -signal.SIGKILL, f"still running after {timeout} s: {ran.stderr[-2000:]}"
    assert "Traceback" not in ran.stderr and "Exception ignored" not in ran.stderr, ran.stderr
    return ran


def files_below(folder: Path) -> dict[str, int]:
    """Every file and link below ``folder`` (relative path → size; a link → -1)."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_symlink():
            found[str(path.relative_to(folder))] = -1
        elif path.is_file():
            found[str(path.relative_to(folder))] = path.stat().st_size
    return found


@pytest.fixture(scope="session")
def hostile_http():
    server = hostile(HostileServer()).start()
    yield server
    server.stop()


@pytest.fixture
def dest(tmp_path) -> Path:
    """DEST inside a sandbox folder: anything written beside DEST would be outside it."""
    folder = tmp_path / "sandbox" / "dest"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture(scope="session")
def hostile_ftp():
    from tests.servers.hostile_ftp import HostileFtp
    from tests.servers.hostile_ftp import hostile as hostile_tree

    server = hostile_tree(HostileFtp()).start()
    yield server
    server.stop()
