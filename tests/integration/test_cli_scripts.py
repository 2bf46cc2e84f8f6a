"""``labferry copy`` in a batch job's log: stderr is a file, not a terminal. Progress comes as plain lines every
few seconds (LABFERRY_PROGRESS_EVERY), never carriage returns; -q leaves only the summary; -v adds what happens
underneath; nothing is coloured, so NO_COLOR holds."""

from __future__ import annotations

import os

from .conftest import MiB, labferry, write_random


def _copy(nginx, tmp_path, home, *flags: str, name: str = "logged.bin"):
    write_random(nginx.data / name, 6 * MiB, seed=491)
    return labferry("copy", nginx.url(f"slow/{name}"), str(tmp_path), "--ca-file", nginx.ca_file, "--streams", "1",
                    *flags, env_home=home, env=dict(os.environ, LABFERRY_PROGRESS_EVERY="0.5", NO_COLOR="1"))


def test_progress_in_a_log_is_plain_lines(nginx, tmp_path, ferry_home):
    proc = _copy(nginx, tmp_path, ferry_home)
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if "%" in line and "ETA" in line]
    assert len(progress) >= 2, proc.stderr  # about 3 s at 2 MB/s: a line every half second
    assert "\r" not in proc.stderr and "\033" not in proc.stderr


def test_quiet_leaves_the_summary_and_verbose_adds_what_happens_underneath(nginx, tmp_path, ferry_home):
    (tmp_path / "q").mkdir()
    quiet = _copy(nginx, tmp_path / "q", ferry_home, "-q", name="quiet.bin")
    assert quiet.returncode == 0, quiet.stderr
    assert not any("ETA" in line for line in quiet.stderr.splitlines()), quiet.stderr
    (tmp_path / "v").mkdir()
    loud = _copy(nginx, tmp_path / "v", ferry_home, "-v", name="loud.bin")
    assert loud.returncode == 0, loud.stderr
    assert "labferry: [" in loud.stderr, loud.stderr  # the log's lines, named by where they come from
