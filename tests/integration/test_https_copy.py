"""A researcher copies a file from a lab's HTTPS server with `labferry copy` (real nginx, TLS)."""

from __future__ import annotations

import json
import os
import time

import pytest

from app.store import Store

from .conftest import MiB, kill_after_progress, labferry, popen_labferry, sha256_of, write_random


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_download_is_byte_exact_and_verified_by_the_published_sidecar(nginx, big_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("big.bin"), str(tmp_path), "--ca-file", nginx.ca_file, "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    dest = tmp_path / "big.bin"
    assert sha256_of(dest) == big_file.sha256 == out["sha256"]
    assert out["verified"] is True and "big.bin.sha256" in out["verify_method"]
    assert out["bytes"] == big_file.size and out["backend"] == "https"
    assert out["streams"] >= 2 and out["throughput_mbps"] > 0 and out["seconds"] > 0
    assert not (tmp_path / "big.bin.part").exists() and not (tmp_path / "big.bin.part.ferry").exists()
    with Store() as store:
        [row] = store.history.query()
        assert row["outcome"] == "done" and row["sha256"] == big_file.sha256 and row["verified"] == 1
        [bench] = store.benchmarks.recent()
        assert bench["backend"] == "https" and bench["peer_host"] == "127.0.0.1"
        assert bench["bytes"] >= big_file.size and bench["streams"] == out["streams"]
        assert store.jobs.all() == []  # done jobs leave the queue


def test_given_checksum_is_verified_and_fixed_streams_are_used(nginx, plain_file, tmp_path, ferry_home):
    dest = tmp_path / "copy.bin"
    proc = labferry("copy", nginx.url("plain.bin"), str(dest), "--ca-file", nginx.ca_file, "--streams", "6",
                    "--checksum", f"sha256:{plain_file.sha256}", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["verified"] is True and out["verify_method"].startswith("sha256 you gave")
    assert out["streams"] == 6
    assert sha256_of(dest) == plain_file.sha256


def test_md5_sidecar_is_used_when_no_sha256_is_published(nginx, tmp_path, ferry_home):
    import hashlib

    data = os.urandom(3 * MiB)
    (nginx.data / "withmd5.bin").write_bytes(data)
    (nginx.data / "withmd5.bin.md5").write_text(hashlib.md5(data).hexdigest() + "  withmd5.bin\n")
    proc = labferry("copy", nginx.url("withmd5.bin"), str(tmp_path), "--ca-file", nginx.ca_file, "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["verified"] is True and "withmd5.bin.md5" in out["verify_method"]
    assert out["sha256"] == hashlib.sha256(data).hexdigest()


def test_plain_http_works_and_without_a_checksum_says_it_is_unverified(nginx, plain_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("plain.bin", scheme="http"), str(tmp_path), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["verified"] is False and "no checksum" in out["verify_method"]
    assert out["sha256"] == plain_file.sha256 == sha256_of(tmp_path / "plain.bin")


def test_server_without_ranges_falls_back_to_one_stream_and_says_so(nginx, big_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("norange/big.bin"), str(tmp_path), "--ca-file", nginx.ca_file,
                    "--streams", "8", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["streams"] == 1
    assert "does not support byte ranges" in proc.stderr
    assert sha256_of(tmp_path / "big.bin") == big_file.sha256


def test_limit_rate_caps_the_transfer(nginx, tmp_path, ferry_home):
    (nginx.data / "eight.bin").write_bytes(os.urandom(8 * MiB))
    began = time.monotonic()
    proc = labferry("copy", nginx.url("eight.bin"), str(tmp_path), "--ca-file", nginx.ca_file,
                    "--limit-rate", "4M", "--streams", "4", "--json", env_home=ferry_home)
    spent = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    # 8 MiB at 4 MiB/s cannot take less than ~1.75 s (one burst of 0.5 MiB is allowed up front)
    assert spent >= 1.7, spent


def test_resume_after_sigkill_fetches_little_more_than_the_file(nginx, big_file, tmp_path, ferry_home):
    """The client is SIGKILLed mid-transfer, run again, and finishes from where it was."""
    uri = "/slow/big.bin"
    dest = tmp_path / "big.bin"
    before = nginx.body_bytes(uri)
    args = ("copy", nginx.url(uri), str(dest), "--ca-file", nginx.ca_file, "--streams", "4", "--json")
    proc = popen_labferry(*args, env_home=ferry_home)
    done = kill_after_progress(proc, tmp_path / "big.bin.part.ferry", 30 * MiB)
    assert done >= 30 * MiB, "the first run made no progress"
    assert not dest.exists()
    second = labferry(*args, env_home=ferry_home, timeout=180)
    assert second.returncode == 0, second.stderr
    out = result_of(second)
    assert out["resumed_from"] >= 30 * MiB
    assert sha256_of(dest) == big_file.sha256
    time.sleep(0.5)  # nginx logs a request when its connection closes
    fetched = nginx.body_bytes(uri) - before
    streams = 4
    assert fetched <= big_file.size + streams * 4 * MiB, f"fetched {fetched} bytes for a {big_file.size} file"


def test_file_replaced_on_the_server_mid_transfer_restarts_cleanly(nginx, tmp_path, ferry_home):
    name = "changing.bin"
    path = nginx.data / name
    write_random(path, 40 * MiB, seed=10)
    dest = tmp_path / name
    proc = popen_labferry("copy", nginx.url(f"slow/{name}"), str(dest), "--ca-file", nginx.ca_file,
                          "--streams", "4", "--json", env_home=ferry_home)
    state = tmp_path / f"{name}.part.ferry"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not state.exists():
        time.sleep(0.1)
    time.sleep(1.0)
    replacement = nginx.data / "changing.new"
    new_digest = write_random(replacement, 40 * MiB + 12345, seed=11)
    os.replace(replacement, path)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["restarts"] >= 1
    assert "changed" in stderr
    assert sha256_of(dest) == new_digest == out["sha256"]


@pytest.mark.parametrize("streams", ["1", "3", "auto"])
def test_small_and_odd_sized_files_arrive_exactly(nginx, tmp_path, ferry_home, streams):
    for size in (0, 1, 65537, 3 * MiB + 7):
        name = f"odd-{size}.bin"
        data = os.urandom(size)
        (nginx.data / name).write_bytes(data)
        proc = labferry("copy", nginx.url(name), str(tmp_path / f"{streams}-{name}"), "--ca-file", nginx.ca_file,
                        "--streams", streams, env_home=ferry_home)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / f"{streams}-{name}").read_bytes() == data


def test_history_and_queue_commands_show_what_happened(nginx, plain_file, tmp_path, ferry_home):
    labferry("copy", nginx.url("plain.bin"), str(tmp_path), "--ca-file", nginx.ca_file, env_home=ferry_home)
    labferry("copy", nginx.url("missing.bin"), str(tmp_path), "--ca-file", nginx.ca_file, env_home=ferry_home)
    hist = labferry("history", "--json", env_home=ferry_home)
    rows = json.loads(hist.stdout)
    assert [r["outcome"] for r in rows] == ["failed", "done"]
    assert "HTTP 404" in rows[0]["error"]
    text = labferry("history", env_home=ferry_home).stdout
    assert "plain.bin" in text and "failed" in text
    queue = labferry("queue", env_home=ferry_home).stdout
    assert "missing.bin" in queue and "failed" in queue
    version = labferry("--version", env_home=ferry_home)
    assert version.returncode == 0 and version.stdout.startswith("labferry ")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_a_stopped_copy_is_paused_says_so_in_json_and_resumes(nginx, tmp_path, ferry_home, how):
    """SIGTERM (a batch system's kill) left the job "running" with no word; Ctrl-C printed no JSON line."""
    import signal

    write_random(nginx.data / f"stop-{how}.bin", 8 * MiB, seed=81)
    dest = tmp_path / f"stop-{how}.bin"
    args = ("copy", nginx.url(f"slow/stop-{how}.bin"), str(dest), "--ca-file", nginx.ca_file, "--json",
            "--streams", "2")
    proc = popen_labferry(*args, env_home=ferry_home)
    state = dest.with_name(dest.name + ".part.ferry")
    deadline = time.monotonic() + 30
    while not state.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(getattr(signal, how))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == (143 if how == "SIGTERM" else 130), err
    assert "Run the same command again to resume" in err and "Traceback" not in err
    line = json.loads(out.strip().splitlines()[-1])
    assert line["ok"] is False and line["state"] == "paused"
    with Store() as store:
        [job] = store.jobs.all()
        assert job.state.value == "paused"
    done = labferry(*args[:2], str(dest), "--ca-file", nginx.ca_file, "--json", env_home=ferry_home)
    assert done.returncode == 0, done.stderr
    assert result_of(done)["resumed_from"] > 0
