"""Ctrl-C and SIGTERM end a command within seconds at every stage, with the README's exit status (130/143), a
summary whose byte count is what is on disk, and no traceback; the same command then resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.integration.conftest import MiB, write_random

from .conftest import files_below


def started(*args: str, home, env: dict | None = None) -> subprocess.Popen:
    """``labferry ARGS`` with Ctrl-C's default handling (a test run as a background job inherits SIGINT ignored)."""
    env = dict(env or os.environ, LABFERRY_HOME=str(home))
    return subprocess.Popen([sys.executable, "-m", "app", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def stop(proc: subprocess.Popen, signum: int) -> tuple[int, str, float]:
    """Send ``signum``; (exit status, stderr, seconds until it ended)."""
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"still running 30 s after signal {signum}: {err[-2000:]}")
    took = time.monotonic() - sent
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return proc.returncode, err, took


@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_a_folder_is_still_being_listed(hostile_http, dest, ferry_home, signum, status):
    proc = started("copy", hostile_http.url("/slow/"), f"{dest}/", home=ferry_home)
    time.sleep(3)  # one listing in (2 s a page), the walk goes on
    rc, err, took = stop(proc, signum)
    assert rc == status and took < 10, (rc, took, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith("labferry: stopped") and "Run the same command again" in last, err
    assert files_below(dest) == {}


def test_sigterm_mid_file_says_what_is_kept_on_disk_and_the_same_command_resumes(nginx, tmp_path, ferry_home):
    write_random(nginx.data / "sig-big.bin", 64 * MiB, seed=811)
    url = nginx.url("sig-big.bin", scheme="http")
    proc = started("copy", url, str(tmp_path), "--limit-rate", "8M", home=ferry_home)
    record = tmp_path / "sig-big.bin.part.ferry"
    deadline = time.monotonic() + 30
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)
    rc, err, took = stop(proc, signal.SIGTERM)
    assert rc == 143 and took < 10, err
    done = sum(e - s for s, e in json.loads(record.read_text())["done"])
    assert 0 < done < 64 * MiB
    from app.units import format_bytes

    assert f"{format_bytes(done)} of 64.0 MiB kept in {tmp_path / 'sig-big.bin'}.part" in err, (done, err)
    again = subprocess.run([sys.executable, "-m", "app", "copy", url, str(tmp_path), "--json"], capture_output=True,
                           text=True, env=dict(os.environ, LABFERRY_HOME=str(ferry_home)), timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["resumed_from"] >= done
    assert (tmp_path / "sig-big.bin").read_bytes() == (nginx.data / "sig-big.bin").read_bytes()
