"""The native FTP backend against a stock vsftpd and ProFTPD: no Globus tools, no GridFTP commands, real bytes."""

from __future__ import annotations

import json
import os
import time

from .conftest import (
    MiB,
    ftp_server_started,
    kill_after_progress,
    labferry,
    popen_labferry,
    sha256_of,
    tree_digests,
    write_random,
)

GRIDFTP_ONLY = ("MODE E", "MLSR", "SPAS", "OPTS RETR", "ERET", "ESTO", "CKSM")


def _anon(vsftpd, name: str, size: int, seed: int) -> str:
    digest = write_random(vsftpd.anon / name, size, seed)
    os.chmod(vsftpd.anon / name, 0o644)
    return digest


def _last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_an_anonymous_file_over_several_connections_with_only_announced_commands(ftp_server, tmp_path, ferry_home):
    """Against ftp_server, ftp:// stopped on '500 Unknown command' (MLST, which it does not announce)."""
    digest = _anon(ftp_server, "reads.fastq", 48 * MiB, seed=61)
    mark = len(ftp_server.commands())
    # capped at 48 MiB/s so the file takes a second: on a busy loopback one stream could otherwise fetch it all
    # before a second one has logged in (seen once in a full run, streams: 1)
    proc = labferry("copy", ftp_server.url("reads.fastq"), f"{tmp_path}/", "--streams", "4", "--json",
                    "--limit-rate", "48M", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    # streams are counted while connected: on loopback the file may be done before the fourth has logged in
    assert out["backend"] == "ftp" and 2 <= out["streams"] <= 4
    assert sha256_of(tmp_path / "reads.fastq") == digest == out["sha256"]
    sent = ftp_server.commands()[mark:]
    assert sum(c.startswith("RETR reads.fastq") for c in sent) >= 4
    assert any(c.startswith("REST ") and c != "REST 0" for c in sent)
    assert not [c for c in sent if c.upper().startswith(GRIDFTP_ONLY)], sent
    if ftp_server.name == "vsftpd":  # it does not announce MLST: never asked for it
        assert not [c for c in sent if c.upper().startswith(("MLST", "MLSD"))], sent
    assert not list(tmp_path.glob("*.part*"))


def test_a_password_user_and_an_absolute_path(ftp_server, tmp_path, ferry_home):
    data = ftp_server.user_root / "run9.bam"
    digest = write_random(data, 6 * MiB, seed=62)
    ftp_server.give(data)
    proc = labferry("copy", ftp_server.url("run9.bam", user=True), str(tmp_path / "a.bam"), env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "a.bam") == digest
    # ftp://host//abs/path: absolute, as RFC 1738 reads it
    absolute = ftp_server.url("", user=True) + ftp_server.absolute(data)
    assert f"{ftp_server.port}//" in absolute
    proc = labferry("copy", absolute, str(tmp_path / "b.bam"), env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "b.bam") == digest
    assert ftp_server.password not in proc.stdout + proc.stderr


def test_a_wrong_password_and_a_missing_file_are_said_at_once(ftp_server, tmp_path, ferry_home):
    url = ftp_server.url("run9.bam", user=True).replace(ftp_server.password, "wrong")
    proc = labferry("copy", url, str(tmp_path / "x"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "Wrong user or password for" in proc.stderr and "Retrying" not in proc.stderr
    assert "wrong" not in proc.stderr.replace("Wrong", "")
    proc = labferry("copy", ftp_server.url("no-such.fastq"), str(tmp_path / "y"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "has no file at" in proc.stderr
    assert os.listdir(tmp_path) == []


def test_resume_after_kill_only_while_size_and_date_match(ftp_server, tmp_path, ferry_home):
    digest = _anon(ftp_server, "long.fastq", 64 * MiB, seed=63)
    dest = tmp_path / "long.fastq"
    args = ("copy", ftp_server.url("long.fastq"), str(dest), "--streams", "2", "--json")
    proc = popen_labferry(*args, "--limit-rate", "16M", env_home=ferry_home)
    recorded = kill_after_progress(proc, dest.with_name("long.fastq.part.ferry"), 16 * MiB)
    assert recorded >= 16 * MiB
    proc = labferry(*args, env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert out["resumed_from"] >= recorded and sha256_of(dest) == digest

    dest.unlink()
    proc = popen_labferry(*args, "--limit-rate", "16M", env_home=ferry_home)
    kill_after_progress(proc, dest.with_name("long.fastq.part.ferry"), 16 * MiB)
    time.sleep(1.1)  # MDTM has one-second steps
    new = _anon(ftp_server, "long.fastq", 64 * MiB, seed=64)  # replaced on the server: same name, same size
    proc = labferry(*args, env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert out["resumed_from"] == 0 and sha256_of(dest) == new


def test_a_servers_connection_limit_lowers_the_streams(vsftpd_limited, tmp_path, ferry_home):
    """max_per_ip=3: the fourth connection gets 421. The job goes on with what the server took."""
    digest = _anon(vsftpd_limited, "wide.fastq", 32 * MiB, seed=65)
    proc = labferry("copy", vsftpd_limited.url("wide.fastq"), str(tmp_path / "w"), "--streams", "8", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert sha256_of(tmp_path / "w") == digest
    assert 1 <= out["streams"] <= 2  # one connection is the lead's (sizes, dates, checksums)
    assert any("took at most" in note for note in out["notes"]), out["notes"]


def test_a_lead_connection_closed_for_idleness_during_a_long_copy_logs_in_again(tmp_path_factory, tmp_path,
                                                                                 ferry_home):
    """vsftpd closes a login with no command for idle_session_timeout (300 s by default: a fraction of a 300 GB
    copy). The lead connection sits idle while the streams work; its last look at the file logs in again."""
    with ftp_server_started(tmp_path_factory, "vsftpd", "vsftpd-idle", idle_seconds=2) as server:
        digest = _anon(server, "slow.fastq", 24 * MiB, seed=67)
        proc = labferry("copy", server.url("slow.fastq"), str(tmp_path / "s"), "--streams", "2", "--limit-rate",
                        "6M", "--json", env_home=ferry_home)
        assert proc.returncode == 0, proc.stderr
        out = _last_json(proc)
        assert sha256_of(tmp_path / "s") == digest
        assert out["retries"] == 0 and out["seconds"] > 3, out  # the copy outlasted the server's idle timeout


def test_a_published_sidecar_is_compared(vsftpd, tmp_path, ferry_home):
    digest = _anon(vsftpd, "sum.bin", 3 * MiB, seed=66)
    (vsftpd.anon / "sum.bin.sha256").write_text(f"{digest}  sum.bin\n")
    os.chmod(vsftpd.anon / "sum.bin.sha256", 0o644)
    proc = labferry("copy", vsftpd.url("sum.bin"), str(tmp_path / "s"), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert out["verified"] is True and "sum.bin.sha256" in out["verify_method"]
    (vsftpd.anon / "sum.bin.sha256").write_text(f"{'0' * 64}  sum.bin\n")
    proc = labferry("copy", vsftpd.url("sum.bin"), str(tmp_path / "t"), "--json", env_home=ferry_home)
    assert proc.returncode == 6, proc.stderr
    assert not (tmp_path / "t").exists()


def test_a_site_profile_sends_its_keyring_password(vsftpd, tmp_path, ferry_home, secret_service):
    """A site profile's secret was never sent to an FTP server (exit 3)."""
    data = vsftpd.user_root / "profile.bam"
    digest = write_random(data, 2 * MiB, seed=67)
    vsftpd.give(data)
    env = dict(os.environ, **secret_service.env)  # the password goes to a real Secret Service
    add = labferry("sites", "add", "core-ftp", "--protocol", "ftp", "--host", "127.0.0.1", "--port", str(vsftpd.port),
                   "--user", vsftpd.user, "--ask-secret", env_home=ferry_home, env=env, input=vsftpd.password + "\n")
    assert add.returncode == 0, add.stderr
    proc = labferry("copy", "site:core-ftp/profile.bam", str(tmp_path / "p.bam"), env_home=ferry_home, env=env)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "p.bam") == digest


def _ftp_tree(server, top: str) -> dict[str, str]:
    digests = {}
    for rel, size, seed in (("r1.fq", 9000, 80), ("lane2/r2.fq", 7000, 81), ("lane2/qc/report.txt", 300, 82),
                            ("big.bam", 20 * MiB, 83), ("empty.txt", 0, 84)):
        path = server.anon / top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        digests[rel] = write_random(path, size, seed)
    sidecar = server.anon / top / "r1.fq.sha256"
    sidecar.write_text(f"{digests['r1.fq']}  r1.fq\n")
    digests["r1.fq.sha256"] = sha256_of(sidecar)
    for path in [server.anon / top, *(server.anon / top).rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return digests


def test_a_folder_with_sub_folders_small_and_large_files(ftp_server, tmp_path, ferry_home):
    """FTP folders stopped on '500 MLSR not understood' (a GridFTP command) or were refused."""
    digests = _ftp_tree(ftp_server, "run5")
    mark = len(ftp_server.commands())
    proc = labferry("copy", ftp_server.url("run5/"), f"{tmp_path}/", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "run5") == digests
    assert not list(tmp_path.rglob("*.part*"))
    out = _last_json(proc)
    assert "6 files (5 one request each, 1 in parallel streams)" in out["verify_method"], out["verify_method"]
    assert "sha256 published beside it matched (1 file)" in out["verify_method"]
    sent = ftp_server.commands()[mark:]
    assert not [c for c in sent if c.upper().startswith(GRIDFTP_ONLY)], sent
    logins = sum(c.startswith("USER") for c in sent)
    assert logins <= 4 + 1 + 8, sent  # the lead, the small files' pool, the large file's streams: not one per file
    again = labferry("copy", ftp_server.url("run5"), f"{tmp_path}/", "--sync", env_home=ferry_home)
    assert again.returncode == 0, again.stderr
    if ftp_server.name == "proftpd":  # MLSD gives exact dates: nothing is fetched again
        assert "6 files are already here" in again.stderr, again.stderr
    assert tree_digests(tmp_path / "run5") == digests


def test_proftpd_is_asked_with_mlst_and_its_hash_is_compared(proftpd, tmp_path, ferry_home):
    digest = _anon(proftpd, "hashed.bam", 24 * MiB, seed=85)
    mark = len(proftpd.commands())
    proc = labferry("copy", proftpd.url("hashed.bam"), f"{tmp_path}/", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert sha256_of(tmp_path / "hashed.bam") == digest and out["verified"], out
    assert "the server's HASH" in out["verify_method"]
    sent = proftpd.commands()[mark:]
    assert any(c.startswith("MLST") for c in sent) and any(c.startswith("HASH") for c in sent), sent
    assert not [c for c in sent if c.upper().startswith(GRIDFTP_ONLY)], sent


def test_uploads_of_a_file_and_a_folder_arrive_under_their_names_once_whole(ftp_server, tmp_path, ferry_home):
    """Uploads over plain FTP were refused."""
    local = tmp_path / "up.bam"
    digest = write_random(local, 12 * MiB, seed=86)
    target = ftp_server.user_root / "inbox"
    target.mkdir(exist_ok=True)
    ftp_server.give(target)
    mark = len(ftp_server.commands())
    proc = labferry("copy", str(local), ftp_server.url("inbox/", user=True), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(target / "up.bam") == digest == _last_json(proc)["sha256"]
    sent = ftp_server.commands()[mark:]
    assert any(c.startswith("STOR inbox/up.bam.part") for c in sent), sent
    assert any(c.startswith("RNTO inbox/up.bam") for c in sent), sent
    if ftp_server.name == "proftpd":
        assert _last_json(proc)["verified"] and "HASH" in _last_json(proc)["verify_method"]
    # the destination's password is neither shown nor stored
    assert ftp_server.password not in proc.stdout + proc.stderr
    stored = b"".join(p.read_bytes() for p in ferry_home.rglob("*") if p.is_file())
    assert ftp_server.password.encode() not in stored
    again = labferry("copy", str(local), ftp_server.url("inbox/", user=True), env_home=ferry_home)
    assert again.returncode == 5 and "already exists" in again.stderr, again.stderr

    tree = tmp_path / "tree"
    digests = {}
    for rel, size in (("a.fq", 4000), ("sub/b.fq", 5000), ("sub/deeper/c.fq", 10)):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        digests[rel] = write_random(tree / rel, size, seed=87 + size)
    proc = labferry("copy", str(tree), ftp_server.url("inbox/", user=True), env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(target / "tree") == digests
    again = labferry("copy", str(tree), ftp_server.url("inbox/", user=True), "--sync", env_home=ferry_home)
    assert again.returncode == 0 and "3 files were already on the server" in again.stderr, again.stderr


def test_an_upload_cut_short_resumes_from_its_part(ftp_server, tmp_path, ferry_home):
    local = tmp_path / "long.bam"
    digest = write_random(local, 48 * MiB, seed=88)
    target = ftp_server.user_root / "resume"
    target.mkdir(exist_ok=True)
    ftp_server.give(target)
    args = ("copy", str(local), ftp_server.url("resume/", user=True), "--json")
    proc = popen_labferry(*args, "--limit-rate", "12M", env_home=ferry_home)
    part = target / "long.bam.part"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not part.exists() or part.stat().st_size < 12 * MiB):
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    kept = part.stat().st_size
    assert kept >= 12 * MiB and not (target / "long.bam").exists()
    proc = labferry(*args, env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert out["resumed_from"] >= 12 * MiB - MiB and sha256_of(target / "long.bam") == digest
    assert "Resuming the upload" in proc.stderr
    assert not part.exists()


def test_explicit_ftps_over_several_connections_verified_with_the_lab_ca(ftps_server, tmp_path, ferry_home):
    """FTPS stood still: aioftp started TLS on a data connection before its RETR, the server only after it."""
    digest = _anon(ftps_server, "secret.fastq", 40 * MiB, seed=91)
    mark = len(ftps_server.commands())
    proc = labferry("copy", ftps_server.url("secret.fastq"), f"{tmp_path}/", "--streams", "4",
                    "--ca-file", ftps_server.ca_file, "--json", env_home=ferry_home, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    # streams are counted while connected: on loopback the file may be done before the fourth has logged in
    assert out["backend"] == "ftp" and 2 <= out["streams"] <= 4
    assert sha256_of(tmp_path / "secret.fastq") == digest == out["sha256"]
    sent = ftps_server.commands()[mark:]
    # every login protected, every data connection too (the server refuses plain ones: TLSRequired, force_*_ssl)
    assert sum(c == "PROT P" for c in sent) >= 4 and sum(c.startswith("RETR secret") for c in sent) >= 4, sent
    assert not [c for c in sent if c.upper().startswith(GRIDFTP_ONLY)], sent

    # without the lab's CA: refused at once, in a sentence, nothing left behind
    proc = labferry("copy", ftps_server.url("secret.fastq"), str(tmp_path / "no-ca"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "could not be verified" in proc.stderr and "--ca-file" in proc.stderr and "Retrying" not in proc.stderr
    assert not list(tmp_path.glob("no-ca*"))

    # plain ftp:// to a server that takes only encrypted logins: the sentence names the ftps:// address
    proc = labferry("copy", ftps_server.url("secret.fastq", scheme="ftp"), str(tmp_path / "plain"),
                    env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "accepts only encrypted logins" in proc.stderr and ftps_server.url("secret.fastq") in proc.stderr


def test_ftps_uploads_a_folder_and_fetches_it_back_for_a_password_user(ftps_server, tmp_path, ferry_home):
    tree = tmp_path / "tree"
    digests = {}
    for rel, size in (("a.fq", 4000), ("sub/b.fq", 5000), ("sub/big.bam", 20 * MiB)):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        digests[rel] = write_random(tree / rel, size, seed=92 + size)
    target = ftps_server.user_root / "tls-inbox"
    target.mkdir(exist_ok=True)
    ftps_server.give(target)
    ca = ("--ca-file", ftps_server.ca_file)
    proc = labferry("copy", str(tree), ftps_server.url("tls-inbox/", user=True), *ca, env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(target / "tree") == digests
    back = tmp_path / "back"
    back.mkdir()
    proc = labferry("copy", ftps_server.url("tls-inbox/tree/", user=True), f"{back}/", *ca, env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(back / "tree") == digests
    assert ftps_server.password not in proc.stdout + proc.stderr


def test_cancelling_an_upload_leaves_another_uploads_part_and_lock(vsftpd, tmp_path, ferry_home, tmp_path_factory):
    """Cancel removes this job's ``NAME.part`` and lock on the server, never a part another upload holds: a job
    refused because another machine writes that name, then cancelled in the queue, leaves the other's bytes."""
    from backends.core.base import TransferRequest
    from backends.ftp.backend import FtpBackend

    local = tmp_path / "held.bam"
    write_random(local, 48 * MiB, seed=89)
    target = vsftpd.user_root / "cancel"
    target.mkdir(exist_ok=True)
    vsftpd.give(target)
    url = vsftpd.url("cancel/", user=True)
    proc = popen_labferry("copy", str(local), url, "--limit-rate", "12M", env_home=ferry_home)
    part, lock = target / "held.bam.part", target / "held.bam.ferry-lock"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not part.exists() or part.stat().st_size < 6 * MiB):
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    kept = part.stat().st_size
    assert lock.is_dir() and [p.name for p in lock.iterdir()][0].startswith("owner~")
    other_machine = tmp_path_factory.mktemp("other-machine")
    FtpBackend().discard(TransferRequest(str(local), url, state_dir=str(other_machine)))
    assert part.stat().st_size == kept and lock.is_dir(), "another job's cancel removed this upload's part"
    FtpBackend().discard(TransferRequest(str(local), url, state_dir=str(ferry_home)))
    assert not part.exists() and not lock.exists()
