"""``labferry copy URL/NAME.tar DEST/ --unpack``: an archive on a server unpacked into DEST as it arrives.

Against nginx (HTTPS, ranged streams), OpenSSH (SFTP) and vsftpd/ProFTPD: the members land byte-exact with
their links, folders and modes, each checked against the archive's index; members appear (as part files) while
the archive is still arriving; a member whose bytes do not match the index is not restored and the archive is
kept; Ctrl-C keeps what arrived and the same command goes on by range; a hostile archive writes nothing outside
DEST; what ``--unpack`` cannot do is one sentence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from .conftest import MiB, labferry, popen_labferry, tree_digests
from .test_archive import _hostile
from .test_archive_send import run_folder
from .test_ssh_folders import fresh_target


def _packed(tmp_path: Path, ferry_home: Path, into: Path, name: str = "run7.tar", **kw) -> Path:
    """A run folder packed by ``labferry pack`` into ``into/name``; returns the source folder."""
    source = run_folder(tmp_path / "src" / "run7", **kw)
    into.mkdir(parents=True, exist_ok=True)
    made = labferry("pack", str(source), str(into / name), "-q", env_home=ferry_home, timeout=300)
    assert made.returncode == 0, made.stderr
    return source


def _unpacked(url: str, dest: Path, ferry_home: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    dest.mkdir(parents=True, exist_ok=True)
    proc = labferry("copy", url, str(dest) + "/", "--unpack", "--json", *args, env_home=ferry_home, timeout=300)
    out = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    return proc, out


def test_an_archive_over_https_unpacks_byte_exact_and_checked_against_its_index(nginx, tmp_path, ferry_home):
    source = _packed(tmp_path, ferry_home, nginx.data / "fetch1", large=2, large_size=6 * MiB)
    dest = tmp_path / "dest"
    proc, out = _unpacked(nginx.url("fetch1/run7.tar"), dest, ferry_home, "--ca-file", nginx.ca_file,
                          "--streams", "4")
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(dest / "run7") == tree_digests(source)
    assert os.readlink(dest / "run7" / "first.vcf") == "lane0/s00/sample_0000.vcf"
    assert (dest / "run7" / "empty").is_dir()
    assert sorted(p.name for p in dest.iterdir()) == ["run7"]  # the archive removed, no part files left
    assert out["verified"] is True and "matched the archive's index" in out["verify_method"]
    assert out["dest"] == str(dest / "run7")


def test_members_appear_while_the_archive_is_still_arriving(nginx, tmp_path, ferry_home):
    """nginx's /slow/ sends 2 MB/s a connection: with one stream the 12 MiB archive takes ~6 s, and members are
    written (as part files, named only once checked) long before it ends."""
    _packed(tmp_path, ferry_home, nginx.data / "fetch2", small=200, large=2, large_size=5 * MiB)
    dest = tmp_path / "dest"
    dest.mkdir()
    proc = popen_labferry("copy", nginx.url("slow/fetch2/run7.tar"), str(dest) + "/", "--unpack", "--streams", "1",
                          "--ca-file", nginx.ca_file, env_home=ferry_home)
    seen_while_arriving, deadline = 0, time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if (dest / "run7.tar.part").exists():
            seen_while_arriving = max(seen_while_arriving, len(list((dest / "run7").rglob("*.part")))
                                      if (dest / "run7").exists() else 0)
        time.sleep(0.2)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert seen_while_arriving >= 100, seen_while_arriving
    assert len(list((dest / "run7").rglob("*.vcf"))) == 200 + 1 and not list(dest.rglob("*.part"))


def test_a_zstd_archive_over_sftp_and_a_gnu_tar_over_ftp(sshd, ftp_server, tmp_path, ferry_home):
    target = fresh_target(sshd)
    source = _packed(tmp_path, ferry_home, target, name="run7.tar.zst", small=120)
    proc, out = _unpacked(sshd.url(str(target / "run7.tar.zst")), tmp_path / "a", ferry_home, *sshd.args())
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "a" / "run7") == tree_digests(source)
    assert out["verified"] is True
    served = ftp_server.anon / "fetch3"
    served.mkdir(exist_ok=True)
    subprocess.run(["tar", "-cf", str(served / "gnu.tar"), "-C", str(source.parent), "run7"], check=True)
    proc, out = _unpacked(ftp_server.url("fetch3/gnu.tar"), tmp_path / "b", ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "b" / "run7") == tree_digests(source)
    assert "sizes checked (the archive has no index)" in out["verify_method"]
    assert any("has no index" in note for note in out["notes"])


def test_a_member_that_does_not_match_the_index_is_not_restored_and_the_archive_is_kept(nginx, tmp_path,
                                                                                          ferry_home):
    _packed(tmp_path, ferry_home, nginx.data / "fetch4", small=30, large=0)
    archive = nginx.data / "fetch4" / "run7.tar"
    data = bytearray(archive.read_bytes())
    at = data.index(b"run7/lane1/s01/sample_0001.vcf")  # its header; its data starts at the next block
    data[(at // 512 + 1) * 512 + 10] ^= 0xFF
    archive.write_bytes(bytes(data))
    dest = tmp_path / "dest"
    proc, _ = _unpacked(nginx.url("fetch4/run7.tar"), dest, ferry_home, "--ca-file", nginx.ca_file)
    assert proc.returncode == 6, proc.stderr
    assert "sample_0001.vcf does not match its checksum" in proc.stderr and "kept at" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (dest / "run7" / "lane1" / "s01" / "sample_0001.vcf").exists()
    assert len(list((dest / "run7").rglob("*.vcf"))) == 29 + 1  # the others, and the link first.vcf
    assert (dest / "run7.tar").is_file() and not list(dest.rglob("*.part"))


def test_ctrl_c_keeps_what_arrived_and_the_same_command_goes_on(nginx, tmp_path, ferry_home):
    source = _packed(tmp_path, ferry_home, nginx.data / "fetch5", small=100, large=1, large_size=16 * MiB)
    dest = tmp_path / "dest"
    dest.mkdir()
    argv = ("copy", nginx.url("slow/fetch5/run7.tar"), str(dest) + "/", "--unpack", "--streams", "1",
            "--ca-file", nginx.ca_file)
    proc = popen_labferry(*argv, env_home=ferry_home)
    record = dest / "run7.tar.part.ferry"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (record.exists() and b'"done": [[0, ' in record.read_bytes()
                                                   and len(list(dest.rglob("*.vcf.part"))) >= 50):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert (dest / "run7.tar.part").exists() and record.exists()
    assert not list((dest / "run7").rglob("*.part")) if (dest / "run7").exists() else True
    kept = sum(e - s for s, e in json.loads(record.read_text())["done"])
    again = labferry(*argv, "--json", env_home=ferry_home, timeout=120)
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout.strip().splitlines()[-1])
    assert out["resumed_from"] >= kept > 0
    assert tree_digests(dest / "run7") == tree_digests(source)
    assert sorted(p.name for p in dest.iterdir()) == ["run7"]


def test_a_hostile_archive_writes_nothing_outside_dest(nginx, tmp_path, ferry_home):
    (nginx.data / "fetch6").mkdir(exist_ok=True)
    _hostile(nginx.data / "fetch6" / "evil.tar")
    box = tmp_path / "box"
    dest = box / "dest"
    proc, _ = _unpacked(nginx.url("fetch6/evil.tar"), dest, ferry_home, "--ca-file", nginx.ca_file)
    assert "Traceback" not in proc.stderr
    outside = [p for p in box.rglob("*") if dest not in p.parents and p != dest]
    assert outside == [] and not (tmp_path / "escape.txt").exists() and not Path("/abs/escape.txt").exists()
    assert (dest / "run" / "ok.txt").read_text() == "from run/ok.txt\n"
    assert not os.path.lexists(dest / "run" / "etc") and not os.path.lexists(dest / "run" / "hard")
    for path in dest.rglob("*"):
        assert not path.is_symlink() or not os.path.isabs(os.readlink(path)), path


def test_what_unpack_cannot_do_is_one_sentence(nginx, tmp_path, ferry_home):
    url = nginx.url("fetch1/run7.tar")
    for args, words in (([nginx.url("big.bin"), str(tmp_path) + "/"], "opens .tar, .tar.zst and .tzst"),
                        ([url, str(tmp_path / "one.tar")], "DEST as a folder"),
                        ([url, str(tmp_path) + "/", "--via", "site:dtn"], "do not go through a relay"),
                        ([url, str(tmp_path) + "/", "--pack"], "opposite directions")):
        proc = labferry("copy", *args, "--unpack", env_home=ferry_home)
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was fetched or made


def test_an_archive_over_gridftp_unpacks_too(gridftp, tmp_path, ferry_home):
    """globus-url-copy writes the part file itself (a prefix record): the follower reads what it has written."""
    into = gridftp.data / "fetch7"
    source = _packed(tmp_path, ferry_home, into, small=80, large=1, large_size=6 * MiB)
    gridftp.give(into)
    proc, out = _unpacked(gridftp.url(into / "run7.tar"), tmp_path / "dest", ferry_home, "--streams", "2",
                          "--backend", "gridftp")
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "dest" / "run7") == tree_digests(source)
    assert out["verified"] is True and "matched the archive's index" in out["verify_method"]
