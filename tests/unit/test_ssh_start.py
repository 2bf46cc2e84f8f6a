"""Where SSH's ``--streams auto`` starts, by the path's round trip (no network: the rule alone)."""

from __future__ import annotations

from backends.core.base import TransferOptions
from backends.ssh.options import SshOptions
from backends.ssh.session import _auto_streams

GIB = 1 << 30


def start(rtt_s: float | None, size: int | None = GIB, **options) -> int:
    return _auto_streams(rtt_s, size, TransferOptions(**options), SshOptions())


def test_a_lan_starts_with_one_stream():
    assert start(0.0005) == 1


def test_a_medium_path_starts_with_one_wave_of_logins():
    assert start(0.02) == 8
    assert start(0.05) == 8


def test_a_long_path_starts_with_several_waves_of_logins():
    assert start(0.1) == 32
    assert start(0.08) == 32


def test_the_long_path_start_respects_the_stream_limit_and_the_file():
    assert start(0.1, max_streams=12) == 12
    assert start(0.1, size=40 * 1024 * 1024) == 10  # 4 MiB per stream at least


def test_a_count_learned_from_the_benchmark_log_wins():
    assert start(0.1, initial_streams=8) == 8
