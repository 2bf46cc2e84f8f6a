"""The report for IT says what the user chose and what happened: the period History's time filter chose, each
job under the site profile it went to (a web server's jobs once counted under the SSH collaborator on the same
host, matched by IP), an ``http://`` job as HTTP (it was listed as https), and a streams axis without a repeated
tick ("1 2 2 3 4")."""

from __future__ import annotations

import time

from app.reports import gather
from app.sites import Site, SiteBook
from app.store import HistoryFilter, Store
from app.ui.report_charts import value_ticks

GiB = 1 << 30


def _job(store, source: str, *, days_ago: float, backend: str) -> None:
    now = time.time() - days_ago * 86400
    store.history.add(source=source, dest="/data/" + source.rsplit("/", 1)[-1], backend=backend, outcome="done",
                      bytes=GiB, seconds=10.0, throughput_mbps=859.0, streams=8, retries=0, peer_host="10.1.2.3",
                      started=now - 10, finished=now)


def test_jobs_go_to_the_site_they_used_within_the_period_with_their_protocol(tmp_path):
    with Store(tmp_path / "ferry.sqlite3") as store:
        book = SiteBook(store)
        book.save(Site("collab-ssh", "sftp", "10.1.2.3", None, "jdoe", "/data"))
        book.save(Site("collab-web", "https", "10.1.2.3", None, None, "/pub"))
        _job(store, "sftp://10.1.2.3/data/run1.bam", days_ago=1, backend="ssh")
        _job(store, "https://10.1.2.3/pub/run2.bam", days_ago=2, backend="https")
        _job(store, "http://10.1.2.3:8080/pub/run3.bam", days_ago=3, backend="https")
        _job(store, "sftp://10.1.2.3/data/old.bam", days_ago=40, backend="ssh")
        week = time.time() - 7 * 86400
        data = gather(store, filt=HistoryFilter(since=week))  # History's "last 7 days"
    assert data.since == week
    assert {t.source.rsplit("/", 1)[-1]: t.protocol for t in data.transfers} == {
        "run1.bam": "SFTP", "run2.bam": "HTTPS", "run3.bam": "HTTP"}
    assert {s.name: s.transfers for s in data.sites} == {"collab-ssh": 1, "collab-web": 1, "10.1.2.3 (HTTP)": 1}


def test_a_streams_axis_has_no_repeated_tick():
    for low, high in ((1, 4), (1, 3), (2, 64), (1, 1.5)):
        labels = [f"{x:g}" for x in value_ticks(low, high)]
        assert len(labels) == len(set(labels)) >= 2 or high - low < 1, (low, high, labels)
    assert value_ticks(1, 4) == [1, 2, 3, 4]
