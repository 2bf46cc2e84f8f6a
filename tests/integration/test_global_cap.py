"""The global bandwidth cap (Settings) holds across every job of the process, whatever path each takes.

Before, each job had its own bucket and the SSH folder tar streams and SFTP-only accounts none at all: three
jobs under a cap of C ran at 3 C, and a folder of small files was not capped at all. The bound checked here
is a lower bound on time (the cap cannot be beaten), never an upper one; the 5 % figure over 20 s is measured
by tests/bench/global_cap.py.
"""

from __future__ import annotations

import time

from app.engine import Engine, RetryPolicy
from app.requests import Defaults, Overrides, resolve
from app.store import Store

from .conftest import MiB, sha256_of, write_random

CAP = 8 * MiB  # bytes per second, all jobs together


def test_three_jobs_over_three_paths_share_one_global_cap(nginx, sshd, tmp_path, ferry_home):
    web = write_random(nginx.data / "cap-web.bin", 12 * MiB, seed=91)
    remote = sshd.home / f"cap-{time.monotonic_ns()}"
    (remote / "small").mkdir(parents=True)
    big = write_random(remote / "big.bin", 12 * MiB, seed=92)
    smalls = {f"small/f{i:03}.fq": write_random(remote / "small" / f"f{i:03}.fq", 96 * 1024, seed=100 + i)
              for i in range(128)}  # 12 MiB of small files: the tar streams
    sshd.give(remote)
    ssh = {"identity": str(sshd.key), "known_hosts": str(sshd.known_hosts)}
    defaults = Defaults(limit_rate=CAP)
    with Store() as store:
        requests = [
            resolve(nginx.url("cap-web.bin"), tmp_path / "web.bin", Overrides(ca_file=nginx.ca_file), store=store,
                    defaults=defaults),
            resolve(sshd.url(str(remote / "big.bin")), tmp_path / "big.bin", Overrides(backend_options=ssh),
                    store=store, defaults=defaults),
            resolve(sshd.url(str(remote / "small")) + "/", tmp_path / "small", Overrides(backend_options=ssh),
                    store=store, defaults=defaults),
        ]
    assert all(r.options.shared_limit == CAP and r.options.limit_rate is None for r in requests)
    began = time.monotonic()
    with Engine(max_jobs=3, retry=RetryPolicy(max_retries=0)) as engine:
        jobs = [r.submit_to(engine) for r in requests]
        finals = [engine.wait(j.id, timeout=120) for j in jobs]
    seconds = time.monotonic() - began
    assert [f.state.value for f in finals] == ["done"] * 3, [f.error for f in finals]
    assert sha256_of(tmp_path / "web.bin") == web and sha256_of(tmp_path / "big.bin") == big
    assert all(sha256_of(tmp_path / "small" / rel.split("/", 1)[1]) == d for rel, d in smalls.items())
    # 36 MiB at 8 MiB/s together take 4.5 s at least, less the buckets' first bursts (1 MiB each)
    assert seconds >= 36 * MiB / CAP * 0.85, seconds
