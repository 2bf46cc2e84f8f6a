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
             "import subprocess, sys\n"
             "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
             "child.kill()\n"  # the standard library's own kill still works, as Windows' does
             "gone += [] if child.wait(10) != 0 else ['kill']\n"
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


def _ssh_that_logs(folder: Path, log: Path) -> Path:
    """A folder whose ``ssh`` writes its arguments to ``log`` (unit separators between them, a record separator
    after each call: an argument may hold newlines), then runs the real client. Each call's record goes out in
    one write: the streams log in at once, and records written a piece at a time interleaved (an empty record,
    and two calls' arguments in one)."""
    import shlex
    import shutil

    folder.mkdir()
    wrapper = folder / "ssh"
    wrapper.write_text(f"#!/bin/sh\nrecord=$(printf '%s\\037' \"$@\"; printf '\\036')\n"
                       f"printf '%s' \"$record\" >> {shlex.quote(str(log))}\n"
                       f"exec {shlex.quote(shutil.which('ssh'))} \"$@\"\n")
    wrapper.chmod(0o755)
    return folder


def _remote_file(sshd, tmp_path: Path, size: int, seed: int) -> tuple[Path, str, Path]:
    """A new file of ``size`` random bytes in the SSH user's home: (its path, its SHA-256, an empty folder here)."""
    import time

    remote = sshd.home / f"other-os-{time.monotonic_ns()}.fastq"
    digest = write_random(remote, size, seed=seed)
    sshd.give(remote)
    dest = tmp_path / "in"
    dest.mkdir()
    return remote, digest, dest


def test_an_sftp_download_on_windows_logs_in_once_per_stream(sshd, tmp_path, ferry_home, monkeypatch):
    """Windows' OpenSSH has no ControlMaster and its event loop cannot poll a pipe: there each stream is one
    ``ssh`` login running its command, read through the loop's own subprocess pipes. The ssh client's
    arguments are logged: several logins, none with ``-M`` or ``-S``; the file arrives checked against the
    server's own SHA-256."""
    remote, digest, dest = _remote_file(sshd, tmp_path, 24 * MiB, seed=474)
    log = tmp_path / "ssh-calls.log"
    monkeypatch.setenv("PATH", f"{_ssh_that_logs(tmp_path / 'bin', log)}{os.pathsep}{os.environ['PATH']}")
    proc, said = as_if_on("windows", "copy", sshd.url(str(remote)), f"{dest}/", *sshd.args(), "--streams", "4",
                          "--json", home=ferry_home)
    assert said["import_failures"] == {}
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verified"] is True and out["streams"] == 4 and sha256_of(dest / remote.name) == digest
    calls = [call.split("\x1f")[:-1] for call in log.read_text().split("\x1e")[:-1]]
    calls = [c for c in calls if "-G" not in c]  # ``ssh -G``: how ssh would connect, asked once
    logins = [c for c in calls if c[-1].startswith("echo FERRY-UP; sh -c ")]
    assert len(logins) >= 4 and len(logins) == len(calls), calls
    assert not [c for c in calls if "-M" in c or "-S" in c or "ControlMaster=no" in c], calls


def test_an_sftp_download_where_no_ssh_client_is_found_logs_in_with_paramiko(sshd, tmp_path, ferry_home,
                                                                            monkeypatch):
    """A laptop without an OpenSSH client (an old Windows): paramiko's SFTP carries the data."""
    remote, digest, dest = _remote_file(sshd, tmp_path, 6 * MiB, seed=475)
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))  # no ssh: the interpreter is started by its full path
    proc, said = as_if_on("windows", "copy", sshd.url(str(remote)), f"{dest}/", *sshd.args(), "--json",
                          home=ferry_home)
    assert said["import_failures"] == {}
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(dest / remote.name) == digest


def _small_tree(root: Path, seed: int) -> dict[str, str]:
    """300 small files in three folders and one 9 MiB file: tar streams and ranged streams both carry data."""
    import random

    rng = random.Random(seed)
    for i in range(300):
        path = root / f"s{i % 3}" / f"read{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randrange(1, 5000)))
    write_random(root / "big.bam", 9 * MiB, seed=seed)
    from .conftest import tree_digests

    return tree_digests(root)


def test_a_folder_travels_both_ways_on_windows_over_one_login_per_stream(sshd, tmp_path, ferry_home):
    """A folder down (small files in tar streams, the big one in ranges) and back up, as Windows: no
    ControlMaster, no pipe polled by the loop; the unpacking thread reads a login's own pipe."""
    import time

    from .conftest import tree_digests

    remote = sshd.home / f"win-tree-{time.monotonic_ns()}"
    want = _small_tree(remote, seed=476)
    sshd.give(remote)
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on("windows", "copy", sshd.url(str(remote)), f"{dest}/", *sshd.args(), "--streams", "3",
                          "--json", home=ferry_home, timeout=240)
    assert said["import_failures"] == {} and proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["verified"] is True
    assert tree_digests(dest / remote.name) == want
    back = f"{sshd.home}/win-back-{time.monotonic_ns()}/"
    proc, _ = as_if_on("windows", "copy", str(dest / remote.name), sshd.url(back), *sshd.args(), "--streams", "3",
                       "--json", home=ferry_home, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(Path(back) / remote.name) == want


def test_a_folder_download_on_macos_is_unpacked_by_bsdtar(sshd, tmp_path, ferry_home, monkeypatch):
    """macOS's (and Windows') tar is bsdtar: the flags Ferry passes mean the same to it, and it is the tar that
    unpacked the folder (its calls are logged by a wrapper in PATH)."""
    import shlex
    import shutil
    import time

    from .conftest import tree_digests

    remote = sshd.home / f"mac-tree-{time.monotonic_ns()}"
    want = _small_tree(remote, seed=477)
    sshd.give(remote)
    bin_dir, log = tmp_path / "bin", tmp_path / "tar-calls.log"
    bin_dir.mkdir()
    (bin_dir / "tar").write_text(f"#!/bin/sh\necho \"$*\" >> {shlex.quote(str(log))}\n"
                                 f"exec {shlex.quote(shutil.which('bsdtar'))} \"$@\"\n")
    (bin_dir / "tar").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    dest = tmp_path / "in"
    dest.mkdir()
    proc, said = as_if_on("macos", "copy", sshd.url(str(remote)), f"{dest}/", *sshd.args(), "--json",
                          home=ferry_home, timeout=240)
    assert said["import_failures"] == {} and proc.returncode == 0, proc.stderr
    assert tree_digests(dest / remote.name) == want
    calls = log.read_text().splitlines()
    assert "--version" in calls and any(c.startswith("-x -f - -C ") for c in calls), calls


def test_an_sftp_only_account_on_windows_falls_back_to_paramiko(sshd_sftp_only, sshd, tmp_path, ferry_home):
    """An account that may run no commands, reached as Windows: a login per stream never sees its command
    start (internal-sftp waits for a client and prints nothing), so after the login's wait the control
    connection finds the account out and paramiko's SFTP carries the file."""
    remote, digest, dest = _remote_file(sshd, tmp_path, 3 * MiB, seed=479)
    proc, said = as_if_on("windows", "copy", sshd_sftp_only.url(str(remote)), f"{dest}/", *sshd_sftp_only.args(),
                          "--json", home=ferry_home, timeout=180)
    assert said["import_failures"] == {} and proc.returncode == 0, proc.stderr
    assert sha256_of(dest / remote.name) == digest
