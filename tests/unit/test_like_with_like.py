"""Preflight compares protocols only between like runs: an SFTP transfer held to a 20 Mbit/s cap measured the cap,
not the path, and once made Preflight say "use https" beside an uncapped web server found in History."""

from __future__ import annotations

import time

from app.preflight.recommend import choose_backend
from app.store import Store

GiB = 1 << 30


def test_a_capped_transfer_is_kept_for_the_plots_but_never_compared(tmp_path):
    with Store(tmp_path / "ferry.sqlite3") as store:
        now = time.time()
        store.benchmarks.add(job_id=1, backend="ssh", peer_host="dtn", streams=4, bytes=GiB, seconds=430.0,
                             rtt_ms=50, started=now - 60, capped=True)  # 20 Mbit/s: the cap
        store.benchmarks.add(job_id=2, backend="https", peer_host="dtn", streams=8, bytes=GiB, seconds=17.0,
                             rtt_ms=50, started=now - 30)  # 505 Mbit/s
        assert set(store.benchmarks.best_by_backend("dtn")) == {"https"}
        assert len(store.benchmarks.recent("dtn")) == 2  # both still plotted
        per_backend = store.benchmarks.best_by_backend("dtn")
    chosen, why = choose_backend("ssh", 900.0, per_backend)  # the preflight's own sweep: 900 Mbit/s over SFTP
    assert chosen == "ssh" and "fastest" in why and "ssh 900" in why, why
    chosen, why = choose_backend("ssh", 300.0, per_backend)
    assert "https was faster" in why and "ssh 300" in why, why
