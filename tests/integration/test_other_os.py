"""Ferry on Windows and macOS, as far as this Linux machine can tell: every module of ``app`` and ``backends``
imports with what that OS's Python lacks taken away (tests/other_os.py), and a real HTTPS and a real FTP
download run to a verified, byte-exact file in that state. Before the platform module, 75 of 182 modules failed
to import as Windows, and every macOS download ended in "module 'os' has no attribute 'fdatasync'"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MiB, sha256_of, write_random

ROOT = Path(__file__).resolve().parents[2]


def as_if_on(kind: str, *args: str, home: Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess, dict]:
    env = dict(os.environ, LABFERRY_HOME=str(home))
    proc = subprocess.run([sys.executable, "-m", "tests.other_os", kind, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    first = proc.stdout.splitlines()[0] if proc.stdout else "{}"
    return proc, json.loads(first)


@pytest.mark.parametrize("kind", ["windows", "macos"])
def test_every_module_imports_without_what_the_os_lacks(kind, ferry_home):
    proc, said = as_if_on(kind, home=ferry_home)
    assert said == {"os": kind, "import_failures": {}}, said
    assert proc.returncode == 0, proc.stderr


def test_the_simulation_takes_away_what_it_says():
    """The check above proves something only if the calls are really gone in the simulated process."""
    probe = ("import tests.other_os as o, os, socket, signal, asyncio; o.as_windows()\n"
             "names = ('pread', 'pwrite', 'fdatasync', 'statvfs', 'O_CLOEXEC', 'getuid')\n"
             "gone = [n for n in names if hasattr(os, n)]\n"
             "gone += ['AF_UNIX'] if hasattr(socket, 'AF_UNIX') else []\n"
             "gone += ['SIGKILL'] if hasattr(signal, 'SIGKILL') else []\n"
             "try:\n    import fcntl\n    gone.append('fcntl')\nexcept ImportError:\n    pass\n"
             "try:\n    open('/proc/self/stat')\n    gone.append('/proc')\nexcept FileNotFoundError:\n    pass\n"
             "loop = asyncio.new_event_loop()\n"
             "try:\n    loop.add_reader(0, print)\n    gone.append('add_reader')\n"
             "except NotImplementedError:\n    pass\n"
             "print(gone)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


@pytest.mark.parametrize("kind", ["windows", "macos"])
def test_an_https_download_is_verified_and_exact(kind, nginx, tmp_path, ferry_home):
    name = f"other-os-{kind}.bin"
    digest = write_random(nginx.data / name, 24 * MiB, seed=471)
    (nginx.data / f"{name}.sha256").write_text(f"{digest}  {name}\n")
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on(kind, "copy", nginx.url(name), f"{dest}/", "--ca-file", nginx.ca_file, "--streams", "4",
                          "--json", home=ferry_home)
    assert said["import_failures"] == {}
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verified"] is True and out["sha256"] == digest
    assert sha256_of(dest / name) == digest
    assert sorted(p.name for p in dest.iterdir()) == [name]  # no part file or resume record left


@pytest.mark.parametrize("kind", ["windows", "macos"])
def test_an_ftp_download_over_several_connections_is_exact(kind, vsftpd, tmp_path, ferry_home):
    name = f"other-os-{kind}.fastq"
    digest = write_random(vsftpd.anon / name, 16 * MiB, seed=472)
    os.chmod(vsftpd.anon / name, 0o644)
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on(kind, "copy", vsftpd.url(name), f"{dest}/", "--streams", "3", "--json", home=ferry_home)
    assert said["import_failures"] == {}
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["streams"] >= 2 and out["sha256"] == digest
    assert sha256_of(dest / name) == digest


def test_the_core_install_copies_and_says_what_the_extras_add(nginx, tmp_path, ferry_home):
    """``pip install labferry`` on a DTN: no Qt, no libtorrent. Every module but the window's and libtorrent's
    users imports, a copy runs, and what needs an extra says which one in a sentence (exit 2), never a
    traceback."""
    digest = write_random(nginx.data / "core.bin", 4 * MiB, seed=473)
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on("core", "copy", nginx.url("core.bin"), f"{dest}/", "--ca-file", nginx.ca_file,
                          home=ferry_home)
    assert said["import_failures"] == {} and proc.returncode == 0, proc.stderr
    assert sha256_of(dest / "core.bin") == digest
    for args, words in ((("gui",), "pip install 'labferry[gui]'"),
                        (("report", "-o", str(tmp_path / "r.pdf")), "pip install 'labferry[gui]'"),
                        (("copy", "magnet:?xt=urn:btih:" + "ab" * 20, f"{dest}/"), "pip install 'labferry[torrent]'")):
        proc, _ = as_if_on("core", *args, home=ferry_home)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc, _ = as_if_on("core", "report", "-o", str(tmp_path / "r.html"), home=ferry_home)
    assert proc.returncode == 0 and (tmp_path / "r.html").exists(), proc.stderr  # tables without the charts


def test_an_sftp_download_on_windows_logs_in_with_paramiko(sshd, tmp_path, ferry_home):
    """Windows' OpenSSH has no ControlMaster and its event loop cannot poll the pipes Ferry's OpenSSH streams are
    read from: there the SSH backend logs in with paramiko, as where no ssh client is found, and the file arrives
    checked against the server's own SHA-256."""
    import time

    remote = sshd.home / f"other-os-{time.monotonic_ns()}.fastq"
    digest = write_random(remote, 6 * MiB, seed=474)
    sshd.give(remote)
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on("windows", "copy", sshd.url(str(remote)), f"{dest}/", *sshd.args(), "--json",
                          home=ferry_home)
    assert said["import_failures"] == {}
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(dest / remote.name) == digest
