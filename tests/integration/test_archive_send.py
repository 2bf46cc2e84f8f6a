"""``labferry copy FOLDER sftp://…/ --pack``: a folder sent as one tar made as it goes, never written here.

The archive is the one ``labferry pack`` writes (GNU tar extracts it byte-exact, ``ls`` reads its index); it goes
over the SSH upload streams with every range checked on the server, resumes by range after a kill, and is
refused when a source changes under it or when the protocol cannot send a file made on demand."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

import pytest

from .conftest import MiB, labferry, popen_labferry, tree_digests, write_random
from .test_ssh_folders import fresh_target


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_folder(root, small: int = 400, large: int = 1, large_size: int = 8 * MiB):
    """A run folder as sequencers leave it: many small files in nested folders, a few large ones, a link."""
    for i in range(small):
        sub = root / f"lane{i % 4}" / f"s{i % 13:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"sample_{i:04d}.vcf").write_bytes(os.urandom(200 + i * 37 % 9000))
    for i in range(large):
        write_random(root / f"reads_{i}.bam", large_size, seed=70 + i)
    (root / "empty").mkdir()
    os.symlink("lane0/s00/sample_0000.vcf", root / "first.vcf")
    return root


def extracted(archive, into):
    into.mkdir()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(into)], check=True)
    return into


def test_a_folder_goes_as_one_archive_that_tar_and_ls_read(sshd, tmp_path, ferry_home):
    source = run_folder(tmp_path / "run7")
    before = sorted(p.name for p in tmp_path.iterdir())
    target = fresh_target(sshd)
    proc = labferry("copy", str(source), sshd.url(str(target)) + "/", *sshd.args(), "--pack", "--streams", "4",
                    "--json", env_home=ferry_home, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    archive = target / "run7.tar"
    assert out["verified"] is True and "computed by the server" in out["verify_method"]
    assert out["sha256"] == subprocess.run(["sha256sum", str(archive)], capture_output=True, text=True,
                                           check=True).stdout.split()[0]
    assert not (target / "run7.tar.part").exists()
    got = extracted(archive, tmp_path / "out")
    assert tree_digests(got / "run7") == tree_digests(source)
    assert os.readlink(got / "run7" / "first.vcf") == "lane0/s00/sample_0000.vcf"
    assert (got / "run7" / "empty").is_dir()
    listing = labferry("ls", str(archive), env_home=ferry_home)
    assert listing.returncode == 0 and "run7/reads_0.bam" in listing.stdout, listing.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])  # only what tar made here
    assert not [p for p in ferry_home.rglob("*") if p.is_file() and p.stat().st_size > 4 * MiB]


def test_an_archive_named_in_dest_and_sent_to_an_sftp_only_account(sshd_sftp_only, tmp_path, ferry_home):
    source = run_folder(tmp_path / "run8", small=120)
    target = fresh_target(sshd_sftp_only)
    proc = labferry("copy", str(source), sshd_sftp_only.url(str(target / "batch.tar")), *sshd_sftp_only.args(),
                    "--pack", "--streams", "3", "--json", env_home=ferry_home, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = extracted(target / "batch.tar", tmp_path / "out")
    assert tree_digests(got / "run8") == tree_digests(source)


def test_a_folder_goes_as_one_archive_to_an_ftp_server(ftp_server, tmp_path, ferry_home):
    """vsftpd and ProFTPD: STOR of NAME.tar.part from the made archive, then the rename; ProFTPD's HASH checks
    the whole archive at its final name."""
    source = run_folder(tmp_path / "run12", small=150)
    target = ftp_server.user_root / "packed"
    target.mkdir(exist_ok=True)
    ftp_server.give(target)
    proc = labferry("copy", str(source), ftp_server.url("packed/", user=True), "--pack", "--json",
                    env_home=ferry_home, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["sha256"] == hashlib.sha256((target / "run12.tar").read_bytes()).hexdigest()
    if ftp_server.name == "proftpd":
        assert out["verified"] and "HASH" in out["verify_method"]
    got = extracted(target / "run12.tar", tmp_path / "out")
    assert tree_digests(got / "run12") == tree_digests(source)
    assert not (target / "run12.tar.part").exists()


def test_a_folder_goes_as_one_archive_to_a_gridftp_server(gridftp, tmp_path, ferry_home):
    """globus-gridftp-server on its ftp:// address: globus-url-copy reads the archive made on demand from its
    stdin over four parallel streams into NAME.tar.part; the server's sha256 of it matched, Ferry renames it and
    checks it again at its final name. Over gsiftp:// the tools cannot rename nor be asked for a checksum of
    what came from a pipe: refused in one sentence."""
    source = run_folder(tmp_path / "run14", small=150, large=1, large_size=24 * MiB)
    target = gridftp.data / "packed"
    target.mkdir(exist_ok=True)
    gridftp.give(target)
    proc = labferry("copy", str(source), gridftp.url(target, folder=True), "--pack", "--streams", "4", "--json",
                    "--backend", "gridftp", env_home=ferry_home, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["backend"] == "gridftp" and out["streams"] == 4
    assert out["sha256"] == hashlib.sha256((target / "run14.tar").read_bytes()).hexdigest()
    assert out["verified"] is True and "at its final name, computed by the destination server" in out["verify_method"]
    assert sorted(os.listdir(target)) == ["run14.tar"]
    got = extracted(target / "run14.tar", tmp_path / "out")
    assert tree_digests(got / "run14") == tree_digests(source)
    assert not [p for p in ferry_home.rglob("*") if p.is_file() and p.stat().st_size > 4 * MiB]
    refused = labferry("copy", str(source), f"gsiftp://127.0.0.1:{gridftp.port}{target}/", "--pack",
                       env_home=ferry_home)
    assert refused.returncode == 2 and "gsiftp://" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_a_killed_pack_upload_goes_on_by_range(sshd, tmp_path, ferry_home):
    source = run_folder(tmp_path / "run9", small=200, large=2, large_size=48 * MiB)
    target = fresh_target(sshd)
    args = ("copy", str(source), sshd.url(str(target)) + "/", *sshd.args(), "--pack", "--streams", "2", "--json")
    proc = popen_labferry(*args, "--limit-rate", "16M", env_home=ferry_home)
    done, deadline = 0, time.monotonic() + 90
    while done < 40 * MiB and time.monotonic() < deadline:
        time.sleep(0.2)
        done = _recorded(ferry_home)
    proc.kill()
    proc.wait()
    assert done >= 40 * MiB and not (target / "run9.tar").exists()
    second = labferry(*args, env_home=ferry_home, timeout=300)
    assert second.returncode == 0, second.stderr
    out = result_of(second)
    assert out["resumed_from"] >= 40 * MiB and "Resuming run9.tar" in second.stderr
    got = extracted(target / "run9.tar", tmp_path / "out")
    assert tree_digests(got / "run9") == tree_digests(source)


def test_a_source_changed_while_it_is_sent_stops_the_upload(sshd, tmp_path, ferry_home):
    source = run_folder(tmp_path / "run10", small=50, large=2, large_size=32 * MiB)
    target = fresh_target(sshd)
    proc = popen_labferry("copy", str(source), sshd.url(str(target)) + "/", *sshd.args(), "--pack", "--streams",
                          "1", "--limit-rate", "8M", env_home=ferry_home)
    deadline = time.monotonic() + 60
    while _recorded(ferry_home) < 4 * MiB and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(source / "reads_1.bam", "ab") as fh:
        fh.write(b"appended while the archive was on its way")
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 5, err
    assert "reads_1.bam changed while it was packed" in err and "Traceback" not in err
    assert not (target / "run10.tar").exists()


@pytest.mark.parametrize("case", ["remote source", "compressed name", "https", "relay"])
def test_pack_refuses_what_it_cannot_send_in_one_sentence(sshd, nginx, tmp_path, ferry_home, case):
    local = run_folder(tmp_path / "run11", small=3, large=0)
    src, dest, extra = {
        "remote source": (sshd.url(str(sshd.home)), str(tmp_path), []),
        "compressed name": (str(local), sshd.url(str(sshd.home / "run11.tar.zst")), []),
        "https": (str(local), nginx.url("/upload/run11.tar"), []),
        "relay": (str(local), sshd.url(str(sshd.home)) + "/", ["--via", "site:dtn"]),  # never a folder relayed
    }[case]
    proc = labferry("copy", src, dest, *sshd.args(), "--pack", *extra, env_home=ferry_home)
    assert proc.returncode == 2, proc.stderr
    assert "--pack" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _recorded(home) -> int:
    """Bytes an upload's resume record says the server has checked."""
    done = 0
    for path in home.rglob("uploads/*.json"):
        try:
            done += sum(end - start for start, end in json.loads(path.read_text()).get("done", []))
        except (OSError, ValueError):
            continue
    return done
