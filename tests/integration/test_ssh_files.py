"""A collaborator gave you an SSH account: files both ways over a real sshd."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.servers.nginx import free_port

from .conftest import MiB, kill_after_progress, labferry, popen_labferry, sha256_of, write_random
from .test_https_errors import assert_clean_failure


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("streams", ["1", "8"])
def test_download_big_file_is_exact_and_verified_by_the_server(sshd, remote_big, tmp_path, ferry_home, streams):
    proc = labferry("copy", sshd.url(str(remote_big.path)), str(tmp_path), *sshd.args(), "--streams", streams,
                    "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert sha256_of(tmp_path / "big.bin") == remote_big.sha256 == out["sha256"]
    assert out["verified"] is True and "computed by the server" in out["verify_method"]
    assert out["streams"] == int(streams) and out["backend"] == "ssh"
    assert not (tmp_path / "big.bin.part").exists()
    assert int((tmp_path / "big.bin").stat().st_mtime) == int(remote_big.path.stat().st_mtime)


def test_download_of_a_symlink_relative_to_home_keeps_the_targets_mode_and_time(sshd, remote_big, tmp_path,
                                                                               ferry_home):
    # a file download asks its stat over the first OpenSSH connection (no paramiko login): a path relative
    # to the login folder, a symlink followed, the mode and mtime of the file it points to
    os.chmod(remote_big.path, 0o640)
    os.utime(remote_big.path, (1_600_000_000, 1_600_000_000))
    link = sshd.home / "latest.bin"
    link.unlink(missing_ok=True)
    link.symlink_to("big.bin")
    url = f"sftp://{sshd.user}@{sshd.listen}:{sshd.port}/~/latest.bin"
    proc = labferry("copy", url, str(tmp_path / "got.bin"), *sshd.args(), "--streams", "4", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    got = tmp_path / "got.bin"
    assert sha256_of(got) == remote_big.sha256 and out["verified"] is True
    assert got.stat().st_mode & 0o777 == 0o640 and int(got.stat().st_mtime) == 1_600_000_000
    missing = labferry("copy", f"sftp://{sshd.user}@{sshd.listen}:{sshd.port}/~/nothing-here.bin", str(tmp_path),
                       *sshd.args(), env_home=ferry_home)
    assert missing.returncode != 0 and "There is no file or folder" in missing.stderr


@pytest.mark.parametrize("streams", ["1", "8"])
def test_upload_big_file_is_exact_on_the_server(sshd, tmp_path, ferry_home, streams):
    local = tmp_path / "upload.bin"
    digest = write_random(local, 200 * MiB, seed=51)
    os.chmod(local, 0o640)
    target = sshd.home / f"up-{streams}"
    target.mkdir(exist_ok=True)
    sshd.give(target)
    proc = labferry("copy", str(local), sshd.url(str(target)) + "/", *sshd.args(), "--streams", streams, "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    arrived = target / "upload.bin"
    assert sha256_of(arrived) == digest == out["sha256"]
    assert out["verified"] is True
    assert (arrived.stat().st_mode & 0o777) == 0o640
    assert int(arrived.stat().st_mtime) == int(local.stat().st_mtime)
    assert not (target / "upload.bin.part").exists()


def test_no_verify_skips_the_server_hash(sshd, remote_big, tmp_path, ferry_home):
    proc = labferry("copy", sshd.url(str(remote_big.path)), str(tmp_path), *sshd.args(), "--no-verify", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["sha256"] == remote_big.sha256 and out["verified"] is False
    assert "turned off" in out["verify_method"]


def test_scp_scheme_drives_the_openssh_client(sshd, remote_big, tmp_path, ferry_home):
    proc = labferry("copy", sshd.url(str(remote_big.path), scheme="scp"), str(tmp_path / "x.bin"), *sshd.args(),
                    "--streams", "4", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "x.bin") == remote_big.sha256


def test_sftp_only_account_reads_over_several_sftp_sessions(sshd_sftp_only, tmp_path, ferry_home):
    """ForceCommand internal-sftp: no dd, no sha256sum. With a key, the data still comes over OpenSSH connections,
    each a session of the account's SFTP subsystem reading at offsets; paramiko is not involved."""
    big = sshd_sftp_only.home / "sftponly-big.bin"
    digest = write_random(big, 48 * MiB, seed=52)
    sshd_sftp_only.give(big)
    proc = labferry("copy", sshd_sftp_only.url(str(big)), str(tmp_path), *sshd_sftp_only.args(), "--streams", "4",
                    "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / big.name) == digest
    assert "paramiko" not in proc.stderr
    out = result_of(proc)
    assert out["streams"] == 4, out
    assert out["bytes_fetched"] <= big.stat().st_size + 4 * 64 * 1024 * 64, out  # at most the reads in flight
    assert out["verified"] is False and "no shell access" in out["verify_method"]


def test_sftp_only_account_writes_over_several_sftp_sessions(sshd_sftp_only, tmp_path, ferry_home):
    """An upload to an SFTP-only account: WRITEs at offsets over four SFTP sessions into NAME.part, renamed when
    every write was confirmed; resent after nothing, byte-exact on the server."""
    local = tmp_path / "sftponly-up.bin"
    digest = write_random(local, 40 * MiB, seed=54)
    target = sshd_sftp_only.home / "incoming-sftponly"
    target.mkdir(exist_ok=True)
    sshd_sftp_only.give(target)
    proc = labferry("copy", str(local), sshd_sftp_only.url(str(target) + "/"), *sshd_sftp_only.args(), "--streams",
                    "4", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "paramiko" not in proc.stderr
    assert sha256_of(target / local.name) == digest
    assert not (target / (local.name + ".part")).exists()
    out = result_of(proc)
    assert out["streams"] == 4, out


def test_sftp_only_account_with_a_password_uses_paramiko(sshd_sftp_only, tmp_path, ferry_home):
    """OpenSSH runs in batch mode and takes no password: such a login's data goes over paramiko's SFTP."""
    from tests.servers.sshd import TEST_PASSWORD

    small = sshd_sftp_only.home / "small.bin"
    digest = write_random(small, 12 * MiB, seed=53)
    sshd_sftp_only.give(small)
    url = sshd_sftp_only.url(str(small)).replace(f"{sshd_sftp_only.user}@", f"{sshd_sftp_only.user}:{TEST_PASSWORD}@")
    proc = labferry("copy", url, str(tmp_path), "--known-hosts", str(sshd_sftp_only.known_hosts), "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "small.bin") == digest
    assert "paramiko" in proc.stderr


def test_download_resumes_after_sigkill(sshd, remote_big, tmp_path, ferry_home):
    dest = tmp_path / "big.bin"
    args = ("copy", sshd.url(str(remote_big.path)), str(dest), *sshd.args(), "--streams", "4", "--json")
    proc = popen_labferry(*args, "--limit-rate", "20M", env_home=ferry_home)
    done = kill_after_progress(proc, tmp_path / "big.bin.part.ferry", 60 * MiB)
    assert done >= 60 * MiB and not dest.exists()
    left = list(Path(tempfile.gettempdir()).glob(f"ferry-ssh-{proc.pid}-*"))
    assert left, "a killed Ferry cannot remove its control-socket folder"
    second = labferry(*args, env_home=ferry_home, timeout=180)
    assert second.returncode == 0, second.stderr
    assert not any(p.exists() for p in left), "the next Ferry removes what a killed one left behind"
    out = result_of(second)
    assert out["resumed_from"] >= 60 * MiB
    assert out["bytes_fetched"] <= remote_big.size - out["resumed_from"] + 4 * 4 * MiB
    assert sha256_of(dest) == remote_big.sha256


def test_unknown_host_key_is_refused_then_accepted_when_asked(sshd, remote_big, tmp_path, ferry_home):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    url = sshd.url(str(remote_big.path))
    proc = labferry("copy", url, str(tmp_path / "a.bin"), "--identity", str(sshd.key), "--known-hosts", str(empty),
                    env_home=ferry_home)
    err = assert_clean_failure(proc, 3, words=("not known", "SHA256:", "--accept-new-host-key"))
    assert "SHA256:" in err and empty.read_text() == ""
    proc = labferry("copy", url, str(tmp_path / "b.bin"), "--identity", str(sshd.key), "--known-hosts", str(empty),
                    "--accept-new-host-key", "--streams", "2", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sshd.host_key_line.split()[2] in empty.read_text()


def test_changed_host_key_is_always_refused(sshd, remote_big, tmp_path, ferry_home):
    from tests.servers.sshd import keygen

    other = keygen(tmp_path / "other")
    fake = tmp_path / "known_hosts"
    kind, blob = (tmp_path / "other.pub").read_text().split()[:2]
    fake.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    assert other.exists()
    proc = labferry("copy", sshd.url(str(remote_big.path)), str(tmp_path / "x.bin"), "--identity", str(sshd.key),
                    "--known-hosts", str(fake), "--accept-new-host-key", env_home=ferry_home)
    err = assert_clean_failure(proc, 3, words=("CHANGED",))
    # the entry to remove is [HOST]:PORT in the file Ferry used (ssh-keygen -R 127.0.0.1 removed nothing)
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f '{fake}'" in err
    assert not (tmp_path / "x.bin").exists()
    subprocess.run(["ssh-keygen", "-R", f"[127.0.0.1]:{sshd.port}", "-f", str(fake)], check=True,
                   capture_output=True)
    assert fake.read_text().strip() == ""  # the command said does remove it


def test_a_missing_or_public_identity_file_is_bad_input_at_once(sshd, remote_big, tmp_path, ferry_home):
    """Was retried five times over ~30 s as if the network failed, then exit 4 with raw [Errno 2] text."""
    import time

    url = sshd.url(str(remote_big.path))
    for identity, words in ((tmp_path / "no-such-key", ("does not exist",)),
                            (Path(f"{sshd.key}.pub"), ("is a public key", str(sshd.key)))):
        began = time.monotonic()
        proc = labferry("copy", url, str(tmp_path / "x.bin"), "--identity", str(identity), "--known-hosts",
                        str(sshd.known_hosts), env_home=ferry_home)
        assert_clean_failure(proc, 2, words=words)
        assert time.monotonic() - began < 5


def test_wrong_key_and_wrong_password_are_refused(sshd, remote_big, tmp_path, ferry_home):
    from tests.servers.sshd import keygen

    stranger = keygen(tmp_path / "stranger")
    proc = labferry("copy", sshd.url(str(remote_big.path)), str(tmp_path / "x.bin"), "--identity", str(stranger),
                    "--known-hosts", str(sshd.known_hosts), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("refused the login",))
    url = sshd.url(str(remote_big.path)).replace("sftp://", "sftp://").replace(f"{sshd.user}@",
                                                                                f"{sshd.user}:wrong-password@")
    proc = labferry("copy", url, str(tmp_path / "y.bin"), "--known-hosts", str(sshd.known_hosts),
                    "--identity", str(stranger), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("refused the login",))


@pytest.mark.parametrize("where", ["refused", "unknown host"])
def test_a_server_that_cannot_be_reached_is_one_sentence(sshd, tmp_path, ferry_home, where):
    """The OpenSSH logins connect through Ferry's dialer (Nagle off); its failures read as ssh's own."""
    if where == "refused":
        url, words = f"sftp://{sshd.user}@127.0.0.1:{free_port()}/x.bin", ("refused",)
    else:
        url, words = f"sftp://{sshd.user}@no-such-host.invalid/x.bin", ("no-such-host.invalid",)
    proc = labferry("copy", url, str(tmp_path), *sshd.args(), env_home=ferry_home)
    assert_clean_failure(proc, 4, words=words)
    assert list(tmp_path.iterdir()) == []


def test_remote_path_missing(sshd, tmp_path, ferry_home):
    proc = labferry("copy", sshd.url(str(sshd.home / "no-such-file.bin")), str(tmp_path), *sshd.args(),
                    env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("no-such-file.bin",))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="permissions mean nothing to root's own login")
def test_permission_denied(sshd, tmp_path, ferry_home):
    secret = sshd.root / "secret.bin"
    secret.write_bytes(b"x" * 1000)
    os.chmod(secret, 0o600)  # owned by root, the test user may not read it
    proc = labferry("copy", sshd.url(str(secret)), str(tmp_path), *sshd.args(), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("permission denied",))
    locked = sshd.root / "locked"
    locked.mkdir(exist_ok=True)
    os.chmod(locked, 0o755)
    small = tmp_path / "small.bin"
    small.write_bytes(b"y" * 1000)
    proc = labferry("copy", str(small), sshd.url(str(locked)) + "/", *sshd.args(), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("permission denied",))


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_remote_disk_full(sshd, tmp_path, ferry_home):
    import subprocess

    full = sshd.home / "small-disk"
    full.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(full)], check=True)
    try:
        sshd.give(full)
        local = tmp_path / "big.bin"
        write_random(local, 64 * MiB, seed=53)
        proc = labferry("copy", str(local), sshd.url(str(full)) + "/", *sshd.args(), env_home=ferry_home)
        assert_clean_failure(proc, 5, words=("free",))
        assert not (full / "big.bin").exists()
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)


def test_checking_many_files_at_once_does_not_stall_on_the_ssh_windows(sshd):
    """A folder's check over the paramiko control connection sends every name on stdin and reads every checksum
    back. Sending all the names before reading stalled for good once both outgrew the SSH windows (300,000
    files: the server's sha256sum blocked on its output, Ferry on its input), and "verifying" never ended."""
    import hashlib
    import threading

    from backends.ssh.address import parse_target
    from backends.ssh.control import Control
    from backends.ssh.options import SshOptions

    folder = sshd.home / "many-names"
    folder.mkdir(exist_ok=True)
    name = "n" * 200 + ".vcf"
    (folder / name).write_bytes(b"one small file, named 40,000 times")
    sshd.give(folder)
    options = SshOptions(identity=str(sshd.key), known_hosts=str(sshd.known_hosts))
    target = parse_target(sshd.url(str(folder)), options)
    found: dict = {}

    def check() -> None:
        with Control(target, options).connect() as control:
            found["sums"] = control.sha256_many(str(folder), [name] * 40_000)  # 8 MB of names, 11 MB of sums

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the check stalled: names and checksums filled each other's SSH windows"
    assert found["sums"] == [hashlib.sha256(b"one small file, named 40,000 times").hexdigest()] * 40_000


def test_ctrl_c_during_an_upload_ends_at_once_not_after_the_whole_file_is_hashed(sshd, tmp_path, ferry_home):
    """The whole file's SHA-256 is read in a thread beside the streams. Ctrl-C stopped the streams at once but
    the process then waited for that thread to reach the file's end (30 s on `copy --pack` of 300,000 files;
    minutes on a 300 GB BAM). A 16 GiB sparse file, sent at 2 MiB/s: Ferry ends within seconds of Ctrl-C."""
    import signal
    import time

    local = tmp_path / "huge.bam"
    with open(local, "wb") as fh:
        fh.truncate(16 << 30)  # read back as zeros: hashing it takes ~10 s here, sending it hours
    target = sshd.home / "up-ctrl-c"
    target.mkdir(exist_ok=True)
    sshd.give(target)
    proc = popen_labferry("copy", str(local), sshd.url(str(target)) + "/", *sshd.args(), "--streams", "2",
                          "--limit-rate", "2M", env_home=ferry_home)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    _, err = proc.communicate(timeout=120)
    spent = time.monotonic() - stopped
    assert proc.returncode == 130, err
    assert spent < 4, f"Ferry ended {spent:.1f} s after Ctrl-C"
