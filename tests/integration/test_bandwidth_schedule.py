"""A bandwidth schedule (``--bwlimit``, rclone's form) followed by a running transfer as the clock passes a
boundary: a real nginx download capped at 4 MiB/s until a moment a few seconds ahead, then free. What arrived
is measured on disk as it comes (the resume record's bytes, which a download writes only as they come off the
wire), before and after the boundary."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .conftest import MiB, popen_labferry, sha256_of, write_random

CAP = 4 * MiB


def _clock(offset: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(time.time() + offset))


def _arrived(dest: Path) -> int:
    try:
        return sum(e - s for s, e in json.loads(dest.with_name(dest.name + ".part.ferry").read_text())["done"])
    except (OSError, ValueError, KeyError):
        return 0


def test_a_running_download_follows_the_schedule_across_a_boundary(nginx, tmp_path, ferry_home):
    digest = write_random(nginx.data / "scheduled.bin", 160 * MiB, seed=492)
    dest = tmp_path / "scheduled.bin"
    boundary = 9.0
    schedule = f"{_clock(-3600)},4M {_clock(boundary)},off"  # 4 MiB/s now; no cap from a few seconds ahead
    began = time.monotonic()
    proc = popen_labferry("copy", nginx.url("scheduled.bin"), str(dest), "--ca-file", nginx.ca_file,
                          "--bwlimit", schedule, "--json", env_home=ferry_home)
    samples = []
    # the schedule names whole seconds: the boundary comes up to a second before ``boundary``, so the capped
    # part is sampled until 1.5 s before it (sampling to 0.5 s before counted uncapped bytes one run in five)
    while time.monotonic() - began < boundary - 1.5 and proc.poll() is None:
        samples.append((time.monotonic() - began, _arrived(dest)))
        time.sleep(0.25)
    out, err = proc.communicate(timeout=120)
    spent = time.monotonic() - began
    assert proc.returncode == 0, err
    assert sha256_of(dest) == digest
    (t0, b0), (t1, b1) = next(s for s in samples if s[1] > 0), samples[-1]
    capped = (b1 - b0) / (t1 - t0)
    assert 0.6 * CAP < capped < 1.4 * CAP, f"{capped / MiB:.1f} MiB/s under a 4 MiB/s cap"
    after = (160 * MiB - b1) / max(spent - t1, 1e-3)
    assert after > 3 * CAP, f"{after / MiB:.1f} MiB/s once the schedule said off"
    assert json.loads(out.strip().splitlines()[-1])["sha256"] == digest


def test_a_schedule_that_cannot_be_read_is_one_sentence_and_exit_2(nginx, tmp_path, ferry_home):
    from .conftest import labferry

    proc = labferry("copy", nginx.url("scheduled.bin"), str(tmp_path / "x"), "--bwlimit", "8h,10M",
                    env_home=ferry_home)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "'8h,10M' is not a schedule entry" in proc.stderr, proc.stderr
