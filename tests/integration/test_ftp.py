"""The native FTP backend against a stock vsftpd: no Globus tools, no GridFTP commands, real bytes."""

from __future__ import annotations

import json
import os
import time

from .conftest import MiB, kill_after_progress, labferry, popen_labferry, sha256_of, write_random

GRIDFTP_ONLY = ("MODE E", "MLSR", "SPAS", "OPTS RETR", "ERET", "ESTO", "CKSM")


def _anon(vsftpd, name: str, size: int, seed: int) -> str:
    digest = write_random(vsftpd.anon / name, size, seed)
    os.chmod(vsftpd.anon / name, 0o644)
    return digest


def _last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_an_anonymous_file_over_several_connections_with_only_announced_commands(vsftpd, tmp_path, ferry_home):
    """Against vsftpd, ftp:// stopped on '500 Unknown command' (MLST, which it does not announce)."""
    digest = _anon(vsftpd, "reads.fastq", 48 * MiB, seed=61)
    mark = len(vsftpd.commands())
    proc = labferry("copy", vsftpd.url("reads.fastq"), f"{tmp_path}/", "--streams", "4", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert out["backend"] == "ftp" and out["streams"] == 4
    assert sha256_of(tmp_path / "reads.fastq") == digest == out["sha256"]
    sent = vsftpd.commands()[mark:]
    assert sum(c.startswith("RETR reads.fastq") for c in sent) >= 4
    assert any(c.startswith("REST ") and c != "REST 0" for c in sent)
    assert not [c for c in sent if c.upper().startswith(GRIDFTP_ONLY + ("MLST", "MLSD"))], sent
    assert not list(tmp_path.glob("*.part*"))


def test_a_password_user_and_an_absolute_path(vsftpd, tmp_path, ferry_home):
    data = vsftpd.user_root / "run9.bam"
    digest = write_random(data, 6 * MiB, seed=62)
    vsftpd.give(data)
    proc = labferry("copy", vsftpd.url("run9.bam", user=True), str(tmp_path / "a.bam"), env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "a.bam") == digest
    absolute = vsftpd.url("", user=True) + str(data)  # ftp://host//abs/path: absolute, as RFC 1738 reads it
    assert f"{vsftpd.port}//" in absolute
    proc = labferry("copy", absolute, str(tmp_path / "b.bam"), env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "b.bam") == digest
    assert vsftpd.password not in proc.stdout + proc.stderr


def test_a_wrong_password_and_a_missing_file_are_said_at_once(vsftpd, tmp_path, ferry_home):
    url = vsftpd.url("run9.bam", user=True).replace(vsftpd.password, "wrong")
    proc = labferry("copy", url, str(tmp_path / "x"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "Wrong user or password for" in proc.stderr and "Retrying" not in proc.stderr
    assert "wrong" not in proc.stderr.replace("Wrong", "")
    proc = labferry("copy", vsftpd.url("no-such.fastq"), str(tmp_path / "y"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "has no file at" in proc.stderr
    assert os.listdir(tmp_path) == []


def test_resume_after_kill_only_while_size_and_date_match(vsftpd, tmp_path, ferry_home):
    digest = _anon(vsftpd, "long.fastq", 64 * MiB, seed=63)
    dest = tmp_path / "long.fastq"
    args = ("copy", vsftpd.url("long.fastq"), str(dest), "--streams", "2", "--json")
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
    new = _anon(vsftpd, "long.fastq", 64 * MiB, seed=64)  # replaced on the server: same name, same size
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


def test_a_site_profile_sends_its_keyring_password(vsftpd, tmp_path, ferry_home):
    """A site profile's secret was never sent to an FTP server (exit 3)."""
    data = vsftpd.user_root / "profile.bam"
    digest = write_random(data, 2 * MiB, seed=67)
    vsftpd.give(data)
    env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyrings.alt.file.PlaintextKeyring",
               XDG_DATA_HOME=str(tmp_path / "xdg"))
    add = labferry("sites", "add", "core-ftp", "--protocol", "ftp", "--host", "127.0.0.1", "--port", str(vsftpd.port),
                   "--user", vsftpd.user, "--ask-secret", env_home=ferry_home, env=env, input=vsftpd.password + "\n")
    assert add.returncode == 0, add.stderr
    proc = labferry("copy", "site:core-ftp/profile.bam", str(tmp_path / "p.bam"), env_home=ferry_home, env=env)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "p.bam") == digest
