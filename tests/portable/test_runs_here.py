"""What must hold on every OS Ferry ships for, with no Linux server: run here by make test and by the CI on
Linux, macOS and Windows runners (.github/workflows/ci.yml). Every module imports on the OS at hand, a
download from a Python-started HTTPS server arrives verified, and the window fetches one through New transfer."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.engine import JobState

from .dialogs import fill_and_accept

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20


def _publish(web, name: str, size: int) -> str:
    """``size`` random bytes under ``name`` with a ``.sha256`` sidecar, as an archive publishes them."""
    data = os.urandom(size)
    digest = hashlib.sha256(data).hexdigest()
    (web.data / name).write_bytes(data)
    (web.data / f"{name}.sha256").write_text(f"{digest}  {name}\n")
    return digest


def test_every_module_imports_on_this_os(ferry_home):
    proc = subprocess.run([sys.executable, "-m", "tests.other_os", "here"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, LABFERRY_HOME=str(ferry_home)))
    said = json.loads(proc.stdout.splitlines()[0])
    assert said["import_failures"] == {}, said
    assert proc.returncode == 0, proc.stderr


def test_an_https_download_from_the_command_line_is_verified_and_exact(python_web, tmp_path, ferry_home):
    digest = _publish(python_web, "reads_1.fastq.gz", 12 * MiB + 321)
    dest = tmp_path / "in"
    dest.mkdir()
    proc = subprocess.run([sys.executable, "-m", "app", "copy", python_web.url("reads_1.fastq.gz"), str(dest),
                           "--ca-file", python_web.ca_file, "--streams", "4", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LABFERRY_HOME=str(ferry_home)))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verified"] is True and out["sha256"] == digest and out["streams"] >= 2
    assert hashlib.sha256((dest / "reads_1.fastq.gz").read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in dest.iterdir()) == ["reads_1.fastq.gz"]  # no part file or record left


def test_a_download_into_a_folder_path_over_260_characters_arrives(python_web, tmp_path, ferry_home):
    """Windows refuses paths of 260 characters and more unless they are extended (``\\\\?\\``): a study's folder
    below a deep DEST must still take its file, with its part file and resume record beside it meanwhile."""
    digest = _publish(python_web, "deep.fastq.gz", 5 * MiB + 17)
    from backends.host.portable import long_path

    dest = tmp_path.joinpath(*["PRJEB12345-single-cell-atlas"] * 9)
    long_path(dest).mkdir(parents=True)  # as Explorer or a lab's pipeline made it
    proc = subprocess.run([sys.executable, "-m", "app", "copy", python_web.url("deep.fastq.gz"), f"{dest}/",
                           "--ca-file", python_web.ca_file, "--streams", "2", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LABFERRY_HOME=str(ferry_home)))
    assert len(str(dest / "deep.fastq.gz")) > 260
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["sha256"] == digest
    assert [p.name for p in long_path(dest).iterdir()] == ["deep.fastq.gz"]


def test_the_window_fetches_through_new_transfer(qtbot, window, python_web, tmp_path):
    """Ctrl+N, the address and a folder typed into the dialog, OK: the file arrives in that folder."""
    from app.sites import Site, SiteBook
    from app.store import Store

    digest = _publish(python_web, "window.bin", 3 * MiB)
    with Store() as store:  # the Python server's CA, as a site's lab CA
        SiteBook(store).save(Site("py", "https", "127.0.0.1", python_web.port, "", "", "auto", "",
                                  {"ca_file": python_web.ca_file}))
    window.refresh_sites()
    seen: list[str] = []
    fill_and_accept(qtbot, {"From": "site:py/window.bin", "To": str(tmp_path / "fetched")}, seen)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: seen == ["New transfer"], timeout=10_000)
    qtbot.waitUntil(lambda: bool((v := window.queue_model.views()) and v[0].state.terminal), timeout=60_000)
    [view] = window.queue_model.views()
    assert view.state == JobState.DONE, view.error
    assert hashlib.sha256((tmp_path / "fetched" / "window.bin").read_bytes()).hexdigest() == digest
