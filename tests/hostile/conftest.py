"""Hostile servers: real sockets on 127.0.0.1 that the tests start, misbehaving on purpose, and Ferry run as a
user runs it (the CLI in its own process). Every case asserts what reached disk, the process's peak memory
and the time it took to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import nginx, sshd  # noqa: F401  (real servers beside the hostile ones)
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
    """``labferry ARGS`` in its own process; its own peak memory comes from ``wait4`` in a small launcher
    (``peak.py``: measured from here, the child would count this test process's memory too)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as peak:
        began = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("peak.py")), peak.name,
                                 sys.executable, "-m", "app", *args], stdout=out, stderr=err,
                                env=dict(env or os.environ, LABFERRY_HOME=str(home)))
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the launcher ends its child
            proc.wait(10)
            proc.returncode = -signal.SIGKILL
        seconds = time.monotonic() - began
        out.seek(0)
        err.seek(0)
        kib = peak.read().strip()
        ran = Ran(proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                  seconds, int(kib) / 1024 if kib else 0.0)
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


def pytest_collection_modifyitems(session, config, items):
    from tests import hostile

    for item in items:
        hostile.expect(item.nodeid)


def pytest_xdist_node_collection_finished(node, ids):
    """Under pytest-xdist the controller collects nothing itself: what the workers collected is expected."""
    from tests import hostile

    for nodeid in ids:
        hostile.expect(nodeid)


def pytest_runtest_logreport(report):
    from tests import hostile

    if report.when == "call" or report.failed:
        hostile.record(report.nodeid, report.passed)


@pytest.fixture
def fat_drive(tmp_path):
    """A real FAT file system (mkfs.fat on an image, mounted with fusefat): case-insensitive, and it refuses the
    characters Windows refuses, as an exFAT stick or a Windows disk does. A missing tool fails the suite."""
    import shutil

    from tests.integration.conftest import require

    mkfs = shutil.which("mkfs.fat") or shutil.which("mkfs.fat", path="/usr/sbin:/sbin")
    if not mkfs:
        pytest.fail("mkfs.fat is not installed; run tests/system-deps.sh (as root) or install dosfstools.",
                    pytrace=False)
    fusefat = require("fusefat")
    image, point = tmp_path / "fat.img", tmp_path / "fat"
    point.mkdir()
    subprocess.run([mkfs, "-C", str(image), str(128 * 1024)], check=True, capture_output=True)
    subprocess.run([fusefat, "-o", "rw+", str(image), str(point)], check=True, capture_output=True)
    try:
        yield point
    finally:
        unmount = shutil.which("fusermount") or shutil.which("fusermount3")
        subprocess.run([unmount, "-u", str(point)] if unmount else ["umount", "-l", str(point)], check=False,
                       capture_output=True)
