"""Folders over SSH: thousands of small files as a stream, large ones in parallel, odd names intact."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from .conftest import MiB, labferry, write_random

WEIRD = ["a b.txt", "quote'd\".txt", "semi;colon.txt", "$(touch pwned).txt", "new\nline.txt", "ünïcødé-数据.txt",
         "-rf", "--checkpoint-action=exec=touch pwned", "back\\slash", "star*.txt", "tab\tname"]


#: the names a download saves WEIRD's under: what Windows or a FAT disk refuse is written %XX (docs/security.md)
SAVED_AS = {"quote'd\".txt": "quote'd%22.txt", "new\nline.txt": "new%0Aline.txt", "back\\slash": "back%5Cslash",
            "star*.txt": "star%2A.txt", "tab\tname": "tab%09name"}


def as_saved(digests: dict) -> dict:
    """A tree's digests under the names a download saves them as."""
    return {SAVED_AS.get(rel, rel): value for rel, value in digests.items()}


def tree_digest(root) -> dict[str, tuple[str, int, int]]:
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            st = os.stat(path)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(path, root)] = (digest, st.st_mode & 0o777, int(st.st_mtime))
    return out


def stamp_folders(root, stamps: dict[str, tuple[int, int]]) -> None:
    """Give folders under ``root`` (``"."``: root itself) a mode and an mtime."""
    for rel, (mode, mtime) in stamps.items():
        os.utime(root / rel, (mtime, mtime))
        os.chmod(root / rel, mode)


def folder_stamps(root, stamps: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """The mode and mtime the folders named in ``stamps`` have under ``root``."""
    return {rel: (os.stat(root / rel).st_mode & 0o777, int(os.stat(root / rel).st_mtime)) for rel in stamps}


def fresh_target(server):
    """A new folder on the server that its test user may write into."""
    target = server.home / f"incoming-{time.monotonic_ns()}"
    target.mkdir()
    server.give(target)
    return target


def upload(server, local, target, ferry_home, *extra: str):
    """``labferry copy LOCAL sftp://…/TARGET/ --json``: the folder arrives as TARGET/LOCAL's name."""
    return labferry("copy", str(local), server.url(str(target)) + "/", *server.args(), "--json", *extra,
                    env_home=ferry_home, timeout=300)


def make_tree(root, small: int, large: int) -> None:
    for i in range(small):
        sub = root / f"d{i % 20:02d}" / ("deep" if i % 7 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"read_{i:05d}.fq"
        path.write_bytes(os.urandom(10 * 1024 if i % 50 else 300))
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
        if i % 11 == 0:
            os.chmod(path, 0o600)
    for i in range(large):
        write_random(root / f"big{i}.bam", 24 * MiB, seed=60 + i)
    (root / "empty-folder").mkdir(exist_ok=True)


@pytest.fixture(scope="module")
def remote_tree(sshd):
    root = sshd.home / "run42"
    if not root.exists():
        make_tree(root, 5000, 2)
        for name in WEIRD:
            (root / name).write_bytes(name.encode() * 3)
        sshd.give(root)
    return root


def test_folder_download_streams_small_files_and_keeps_modes_and_times(sshd, remote_tree, tmp_path, ferry_home):
    began = time.monotonic()
    proc = labferry("copy", sshd.url(str(remote_tree)) + "/", str(tmp_path), *sshd.args(), "--json",
                    env_home=ferry_home, timeout=300)
    spent = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    got = tree_digest(tmp_path / "run42")
    assert got == as_saved(tree_digest(remote_tree))
    assert all(f"{name!r} → {saved!r}" in proc.stderr for name, saved in SAVED_AS.items()), proc.stderr
    assert len(got) == 5002 + len(WEIRD)
    assert out["verified"] is True and "tar stream" in out["verify_method"]
    assert not (tmp_path / "pwned").exists() and not (remote_tree / "pwned").exists()
    assert not (sshd.home / "pwned").exists()
    assert spent < 120  # one round trip per file would be far slower; the real figure is in the benchmark


def test_folder_download_turns_every_logins_first_channel_into_a_tar_stream(sshd, remote_tree, tmp_path,
                                                                           ferry_home):
    # four streams: every connection logs in with a range reader open on the path (a download's first
    # channel), and each of the four tar streams is asked for down one of those, odd names included
    proc = labferry("copy", sshd.url(str(remote_tree)), str(tmp_path), *sshd.args(), "--streams", "4", "--json",
                    env_home=ferry_home, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert tree_digest(tmp_path / "run42") == as_saved(tree_digest(remote_tree))
    assert json.loads(proc.stdout.strip().splitlines()[-1])["verified"] is True
    assert not (sshd.home / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_folder_sync_skips_what_is_already_there(sshd, remote_tree, tmp_path, ferry_home):
    first = labferry("copy", sshd.url(str(remote_tree)), str(tmp_path), *sshd.args(), env_home=ferry_home,
                     timeout=300)
    assert first.returncode == 0, first.stderr
    again = labferry("copy", sshd.url(str(remote_tree)), str(tmp_path), *sshd.args(), env_home=ferry_home)
    assert again.returncode != 0 and "--sync" in again.stderr  # never silently overwritten
    synced = labferry("copy", sshd.url(str(remote_tree)), str(tmp_path), *sshd.args(), "--sync", "--json",
                      env_home=ferry_home)
    assert synced.returncode == 0, synced.stderr
    assert "already here" in synced.stderr
    assert json.loads(synced.stdout.strip().splitlines()[-1])["bytes"] == 0


def test_folder_upload_with_odd_names(sshd, tmp_path, ferry_home):
    local = tmp_path / "outgoing"
    local.mkdir()
    make_tree(local, 600, 1)
    for name in WEIRD:
        (local / name).write_bytes(name.encode() * 5)
    target = sshd.home / "incoming"
    target.mkdir(exist_ok=True)
    sshd.give(target)
    proc = upload(sshd, local, target, ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digest(target / "outgoing") == tree_digest(local)
    assert (target / "outgoing" / "empty-folder").is_dir()
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verified"] is True
    assert not (target / "pwned").exists() and not (tmp_path / "pwned").exists() and not (sshd.home / "pwned").exists()


def test_folder_upload_into_many_new_folders_over_parallel_tar_streams(sshd, tmp_path, ferry_home):
    # 1,600 small files (14 MB: four tar streams) in 400 new folders, each folder's four files spread over the
    # four streams, which unpack side by side on the server: each stream must find (or make) every folder.
    # While only the first stream carried the folders, GNU tar failed a file whose folder another stream
    # created between its failed open and its own mkdir
    local = tmp_path / "run"
    for i in range(1600):
        sub = local / f"lane{i // 200}" / f"tile{i // 4:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"r{i:04d}.fq").write_bytes(os.urandom(9000))
    for _ in range(3):
        target = fresh_target(sshd)
        proc = upload(sshd, local, target, ferry_home)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.strip().splitlines()[-1])["verified"] is True
        assert tree_digest(target / "run") == tree_digest(local)


def test_folder_upload_keeps_read_only_folders_and_folder_times(sshd, tmp_path, ferry_home):
    # a sequencing run made read-only once written, as labs protect raw data: its 1,600 files go over four tar
    # streams into a folder that must stay writable until the last of them is in, then become 0555 again
    local = tmp_path / "run"
    raw = local / "raw"
    (local / "meta").mkdir(parents=True)
    raw.mkdir()
    for i in range(1600):
        (raw / f"r{i:04d}.fq").write_bytes(os.urandom(9000))
    (local / "meta" / "samples.csv").write_text("id,name\n1,a\n")
    stamps = {"raw": (0o555, 1_600_000_123), "meta": (0o750, 1_600_000_456), ".": (0o755, 1_600_000_789)}
    stamp_folders(local, stamps)
    target = fresh_target(sshd)
    try:
        proc = upload(sshd, local, target, ferry_home)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.strip().splitlines()[-1])["verified"] is True
        assert tree_digest(target / "run") == tree_digest(local)
        assert folder_stamps(target / "run", stamps) == stamps

        refused = labferry("copy", str(local), sshd.url(str(target)) + "/", *sshd.args(), env_home=ferry_home)
        assert refused.returncode != 0 and "--sync" in refused.stderr and "Traceback" not in refused.stderr

        # one small file changes in the read-only folder and a large one appears; --sync sends both into the
        # server's 0555 folder (the large one through ranged streams into big.bam.part there)
        os.chmod(raw, 0o755)
        (raw / "r0007.fq").write_bytes(b"changed")
        write_random(raw / "big.bam", 6 * MiB, seed=77)
        os.utime(raw, (1_600_000_123, 1_600_000_123))
        os.chmod(raw, 0o555)
        synced = upload(sshd, local, target, ferry_home, "--sync")
        assert synced.returncode == 0, synced.stderr
        summary = json.loads(synced.stdout.strip().splitlines()[-1])
        assert summary["bytes"] == len(b"changed") + 6 * MiB
        assert summary["retries"] == 0, synced.stderr  # not a failed first try that opened the folder by chance
        assert tree_digest(target / "run") == tree_digest(local)
        st = os.stat(target / "run" / "raw")
        assert (st.st_mode & 0o777, int(st.st_mtime)) == stamps["raw"]
    finally:
        os.chmod(raw, 0o755)  # so pytest can remove its temporary folder
        if (target / "run" / "raw").exists():
            os.chmod(target / "run" / "raw", 0o755)


def test_folder_download_keeps_folder_modes_and_times_and_syncs_into_read_only_ones(sshd, tmp_path, ferry_home):
    remote = sshd.home / f"run-{time.monotonic_ns()}"
    (remote / "raw").mkdir(parents=True)
    (remote / "meta" / "deep").mkdir(parents=True)
    for i in range(300):
        (remote / "raw" / f"r{i:03d}.fq").write_bytes(os.urandom(9000))
    (remote / "meta" / "deep" / "samples.csv").write_text("id,name\n1,a\n")
    sshd.give(remote)
    stamps = {"raw": (0o555, 1_600_000_123), "meta": (0o750, 1_600_000_456), "meta/deep": (0o700, 1_600_000_999)}
    stamp_folders(remote, stamps)
    dest = tmp_path / remote.name  # copied into an existing folder, as cp -r does
    try:
        proc = labferry("copy", sshd.url(str(remote)), str(tmp_path), *sshd.args(), env_home=ferry_home,
                        timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert tree_digest(dest) == tree_digest(remote)
        assert folder_stamps(dest, stamps) == stamps

        os.chmod(remote / "raw", 0o755)  # a file changes in the read-only folder; --sync must fetch it
        (remote / "raw" / "r007.fq").write_bytes(b"changed")
        os.utime(remote / "raw", (1_600_000_123, 1_600_000_123))
        os.chmod(remote / "raw", 0o555)
        again = labferry("copy", sshd.url(str(remote)), str(tmp_path), *sshd.args(), "--sync", "--json",
                         env_home=ferry_home, timeout=300)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout.strip().splitlines()[-1])["bytes"] == len(b"changed"), again.stderr
        assert (dest / "raw" / "r007.fq").read_bytes() == b"changed"
        assert os.stat(dest / "raw").st_mode & 0o777 == 0o555
    finally:
        for folder in (remote / "raw", dest / "raw"):
            if folder.exists():
                os.chmod(folder, 0o755)


def test_folder_upload_sends_what_symlinks_name_and_leaves_out_broken_ones(sshd, tmp_path, ferry_home):
    local = tmp_path / "run"
    (local / "d").mkdir(parents=True)
    (local / "d" / "real.txt").write_text("data\n")
    (local / "d" / "alias.txt").symlink_to("real.txt")  # as scp -r, and as downloads' find -L: the content goes
    (local / "d" / "gone.txt").symlink_to("/nonexistent/file")
    target = fresh_target(sshd)
    proc = upload(sshd, local, target, ferry_home)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["retries"] == 0 and summary["verified"] is True, proc.stderr
    alias = target / "run" / "d" / "alias.txt"
    assert not alias.is_symlink() and alias.read_text() == "data\n"
    assert not os.path.lexists(target / "run" / "d" / "gone.txt") and "gone.txt" in proc.stderr


def test_sftp_only_folder_upload_keeps_folder_modes_and_times(sshd_sftp_only, tmp_path, ferry_home):
    server = sshd_sftp_only  # no commands there: files go over paramiko's SFTP, folders are set one by one
    local = tmp_path / "run"
    (local / "raw").mkdir(parents=True)
    (local / "empty").mkdir()
    for i in range(5):
        (local / "raw" / f"r{i}.fq").write_bytes(os.urandom(3000))
    stamps = {"raw": (0o555, 1_600_000_123), "empty": (0o750, 1_600_000_456), ".": (0o755, 1_600_000_789)}
    stamp_folders(local, stamps)
    target = fresh_target(server)
    try:
        proc = upload(server, local, target, ferry_home)
        assert proc.returncode == 0, proc.stderr
        assert tree_digest(target / "run") == tree_digest(local)
        assert folder_stamps(target / "run", stamps) == stamps
    finally:
        os.chmod(local / "raw", 0o755)
        if (target / "run" / "raw").exists():
            os.chmod(target / "run" / "raw", 0o755)
