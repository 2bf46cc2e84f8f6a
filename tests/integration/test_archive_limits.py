"""Packing and unpacking at the edges of the machine: a source folder its user cannot read, and a DEST that
fills up halfway through an unpack. Each is one sentence with its documented status, and nothing is lost: no
archive or part is left by a pack that could not read, and an unpack that ran out of room leaves no file at a
final name that is not whole."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import MiB, labferry

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared_tmp():
    """A folder another user can enter (pytest's own tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ferry-limits-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_source_folder_its_user_cannot_read_stops_the_pack_before_a_byte(shared_tmp):
    run = shared_tmp / "run"
    (run / "open").mkdir(parents=True)
    (run / "locked").mkdir()
    for i in range(20):
        (run / "open" / f"s{i}.vcf").write_bytes(os.urandom(3000))
    (run / "locked" / "secret.vcf").write_bytes(b"not for everyone")
    os.chmod(run / "locked", 0o700)  # root's: the user running Ferry cannot list it
    out = shared_tmp / "out"
    home = shared_tmp / "home"
    out.mkdir()
    home.mkdir()
    for folder in (out, home):
        os.chown(folder, NOBODY, NOBODY)
    os.chmod(home, 0o700)  # Ferry's own data folder is the user's alone
    proc = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           sys.executable, "-m", "app", "pack", str(run), str(out / "run.tar")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, LABFERRY_HOME=str(home), HOME=str(home)))
    assert proc.returncode == 5, proc.stderr
    assert f"Ferry cannot read {run / 'locked'} (permission denied); nothing was packed." in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert list(out.iterdir()) == []


@pytest.fixture
def small_disk(shared_tmp):
    """A 12 MiB file system: DEST fills up partway through a 24 MiB unpack."""
    mount = shared_tmp / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_dest_filling_up_mid_unpack_is_one_sentence_and_keeps_only_whole_files(tmp_path, ferry_home, small_disk,
                                                                               workers):
    run = tmp_path / "run"
    run.mkdir()
    sizes = {f"s{i:02d}.vcf": (i + 1) * 100_000 for i in range(20)}  # 21 MB in all, the smallest first
    for name, size in sizes.items():
        (run / name).write_bytes(os.urandom(size))
    archive = tmp_path / "run.tar"
    packed = labferry("pack", str(run), str(archive), env_home=ferry_home)
    assert packed.returncode == 0, packed.stderr
    proc = labferry("unpack", str(archive), str(small_disk), "--workers", workers, env_home=ferry_home)
    assert proc.returncode == 5, proc.stderr  # NoSpace: the local side (docs/user-guide.md, exit statuses)
    last = proc.stderr.strip().splitlines()[-1]
    assert "no room" in last.lower() or "space" in last.lower(), proc.stderr
    assert "Traceback" not in proc.stderr
    restored = {p.name: p.stat().st_size for p in (small_disk / "run").iterdir()} if (small_disk / "run").exists() \
        else {}
    assert restored, "what fitted is restored"
    for name, size in restored.items():
        assert size == sizes[name], f"{name} is at its final name but not whole"
        assert (small_disk / "run" / name).read_bytes() == (run / name).read_bytes()
    assert len(restored) < len(sizes)
    assert not [p for p in small_disk.rglob("*") if p.name.endswith((".part", ".ferry"))]
    assert sum(sizes.values()) > 12 * MiB
