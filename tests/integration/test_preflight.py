"""Preflight and protocol comparison against the real local servers (nginx, sshd, globus-gridftp-server)."""

from __future__ import annotations

import json
import shutil
import sqlite3

from .conftest import MiB, labferry, write_random
from .test_https_errors import assert_clean_failure

KEYS = ("rtt_ms", "bdp_bytes", "recommended_streams", "recommended_backend", "sweep", "sysctl")


def last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def stored(home) -> list[sqlite3.Row]:
    conn = sqlite3.connect(home / "ferry.sqlite3")
    conn.row_factory = sqlite3.Row
    return conn.execute("SELECT * FROM preflights ORDER BY id").fetchall()


def check_result(out: dict, backend: str) -> None:
    assert all(k in out for k in KEYS), out.keys()
    assert out["backend"] == backend and out["rtt_ms"] > 0 and out["rtt"]["samples_ms"]
    assert out["sweep"]["1"] > 0
    # a swept count, unless the sweep's time budget ended it while it still grew (then the round trip's count)
    cut = any(n.startswith("The sweep stopped at") for n in out["notes"]) and "as for a" in out["streams_why"]
    assert str(out["recommended_streams"]) in out["sweep"] or cut, out
    assert isinstance(out["sysctl"], list) and out["seconds"] <= 20


def test_https_preflight_measures_recommends_and_is_remembered(nginx, big_file, ferry_home):
    proc = labferry("preflight", nginx.url("big.bin"), "--ca-file", nginx.ca_file, "--json", "--quick",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    check_result(out, "https")
    assert "Round trip" in proc.stdout and "Use " in proc.stdout
    rows = stored(ferry_home)
    assert len(rows) == 1 and rows[0]["recommended_streams"] == out["recommended_streams"]
    # a recent measurement is reused when asked; an older one would be redone
    again = labferry("preflight", nginx.url("big.bin"), "--ca-file", nginx.ca_file, "--json", "--if-older", "1",
                     env_home=ferry_home)
    assert again.returncode == 0 and "reusing" in again.stderr and last_json(again) == out
    assert len(stored(ferry_home)) == 1
    # older than the Settings' age (7 days by default): measured again
    conn = sqlite3.connect(ferry_home / "ferry.sqlite3")
    with conn:
        conn.execute("UPDATE preflights SET started = started - 8 * 86400")
    redo = labferry("preflight", nginx.url("big.bin"), "--ca-file", nginx.ca_file, "--json", "--quick", "--if-older",
                    env_home=ferry_home)
    assert redo.returncode == 0 and "reusing" not in redo.stderr and len(stored(ferry_home)) == 2


def test_ssh_preflight_reads_zeros_without_a_test_file_and_applies_to_the_site(sshd, ferry_home):
    added = labferry("sites", "add", "lab", "--host", "127.0.0.1", "--port", str(sshd.port), "--user", sshd.user,
                     "--key", str(sshd.key), "--known-hosts", str(sshd.known_hosts), env_home=ferry_home)
    assert added.returncode == 0, added.stderr
    proc = labferry("preflight", "site:lab", "--json", "--quick", "--max-streams", "4", "--apply",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    check_result(out, "ssh")
    assert max(int(n) for n in out["sweep"]) <= 4
    shown = json.loads(labferry("sites", "show", "lab", "--json", env_home=ferry_home).stdout)
    assert shown["streams"] == str(out["recommended_streams"])
    assert stored(ferry_home)[0]["site"] == "lab"


def test_ssh_preflight_of_a_named_file(sshd, remote_big, ferry_home):
    proc = labferry("preflight", sshd.url(str(remote_big.path)), *sshd.args(), "--json", "--quick",
                    "--max-streams", "2", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    check_result(last_json(proc), "ssh")


def test_gridftp_preflight_reads_the_servers_dev_zero(gridftp, ferry_home):
    proc = labferry("preflight", gridftp.url("/"), "--backend", "gridftp", "--json", "--quick", "--max-streams", "4",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    check_result(out, "gridftp")
    assert "tcp_bs_why" in out and out["tcp_bs_why"]


def test_a_server_refusing_ranges_gets_one_stream_and_says_why(nginx, big_file, ferry_home):
    proc = labferry("preflight", nginx.url("norange/big.bin"), "--ca-file", nginx.ca_file, "--json", "--quick",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    assert out["sweep"].keys() == {"1"} and out["recommended_streams"] == 1
    assert any("range requests" in n for n in out["notes"])


def test_unreachable_host_fails_in_one_sentence(ferry_home):
    from tests.servers.nginx import free_port

    proc = labferry("preflight", f"https://127.0.0.1:{free_port()}/big.bin", env_home=ferry_home)
    assert_clean_failure(proc, 4, words=("could not connect",))


def test_a_site_whose_password_was_never_given(sshd, ferry_home, tmp_path):
    empty_home = tmp_path / "nobody-home"  # no ~/.ssh keys or agent to fall back on
    empty_home.mkdir()
    env = {"HOME": str(empty_home), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    import os

    env = dict(os.environ, **env)
    env.pop("SSH_AUTH_SOCK", None)
    labferry("sites", "add", "pw", "--host", "127.0.0.1", "--port", str(sshd.port), "--user", sshd.user,
             "--known-hosts", str(sshd.known_hosts), env_home=ferry_home, env=env)
    proc = labferry("preflight", "site:pw", env_home=ferry_home, env=env)
    assert_clean_failure(proc, words=("needs a password",))
    assert "--ask-secret" in proc.stderr


def test_bad_targets_are_refused_before_measuring(nginx, plain_file, ferry_home):
    small = nginx.data / "small.bin"
    write_random(small, 1 * MiB, seed=3)
    proc = labferry("preflight", nginx.url("small.bin"), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, words=("too small to measure",))
    proc = labferry("preflight", "gopher://example.org/x", env_home=ferry_home)
    assert_clean_failure(proc, words=("no backend",))
    proc = labferry("preflight", "site:nosuch", env_home=ferry_home)
    assert_clean_failure(proc, 2, words=("no site called",))


def test_compare_ranks_protocols_on_one_path_and_logs_the_runs(nginx, sshd, ferry_home, tmp_path):
    digest = write_random(nginx.data / "same.bin", 80 * MiB, seed=9)
    shutil.copy(nginx.data / "same.bin", sshd.home / "same.bin")
    sshd.give(sshd.home / "same.bin")
    plot = tmp_path / "compare.png"
    proc = labferry("compare", nginx.url("same.bin"), sshd.url(str(sshd.home / "same.bin")), "--rounds", "2",
                    "--ca-file", nginx.ca_file, *sshd.args(), "--plot", str(plot), "--json", env_home=ferry_home,
                    timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    assert {row["backend"] for row in out["table"]} == {"https", "ssh"}
    assert all(row["runs"] == 2 and row["failed"] == 0 and row["median_mbps"] > 0 for row in out["table"])
    assert max(row["efficiency"] for row in out["table"]) <= 1.0
    assert out["recommended_backend"] == out["table"][0]["backend"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    conn = sqlite3.connect(ferry_home / "ferry.sqlite3")
    assert conn.execute("SELECT COUNT(*) FROM benchmarks WHERE bytes = ?", (80 * MiB,)).fetchone()[0] == 4
    assert conn.execute("SELECT COUNT(*) FROM preflights WHERE kind = 'compare'").fetchone()[0] == 1
    assert not list(tmp_path.glob("ferry-compare-*")) and digest
    # the preflight's protocol advice now names these runs beside the address's own protocol, which it keeps (a
    # host may serve other data another way: an SFTP site was once told to use HTTPS)
    pre = labferry("preflight", nginx.url("same.bin"), "--ca-file", nginx.ca_file, "--json", "--quick",
                   env_home=ferry_home)
    advice = last_json(pre)
    assert advice["recommended_backend"] == "https"
    fastest = out["table"][0]["backend"]
    assert fastest in advice["backend_why"] and (fastest == "https" or "was faster" in advice["backend_why"])
