"""The preflight's reasoning on recorded sweeps (figures measured with wanem and globus-url-copy)."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.preflight.measure import measure, step_seconds
from app.preflight.recommend import (
    RttStats,
    SweepPoint,
    analyse,
    choose_streams,
    choose_transport,
    knee,
    loss_reading,
    mathis_loss,
    weighted_by_streams,
)
from app.store import Store
from backends.core.base import ProbeResult, TransferOptions
from backends.host.hosttcp import HostTcp


def sweep_of(figures: dict[int, float]) -> list[SweepPoint]:
    return [SweepPoint(n, v) for n, v in figures.items()]


# bare globus-url-copy -p sweeps, 1 GiB, docs/benchmarks.md
SWEEP_50MS = sweep_of({1: 224, 2: 403, 4: 884, 8: 869, 16: 885, 32: 866})
SWEEP_100MS = sweep_of({1: 33, 2: 74, 4: 150, 8: 310, 16: 619, 32: 769})
SWEEP_LOOPBACK = sweep_of({1: 5840, 2: 4371, 4: 4445})

SMALL_BUFFERS = HostTcp(True, "linux", "cubic", ("reno", "cubic", "bbr"), "pfifo_fast", 212992, 212992,
                        (4096, 131072, 6291456), (4096, 16384, 4194304), 0)
TUNED = HostTcp(True, "linux", "bbr", ("reno", "cubic", "bbr"), "fq", 268435456, 268435456,
                (4096, 131072, 268435456), (4096, 16384, 268435456), 1)


def test_the_knee_is_the_fewest_streams_near_the_best_not_the_most():
    assert knee(SWEEP_50MS) == 4  # 884 of 885: more streams buy nothing
    assert knee(SWEEP_100MS) == 32  # 619 is 80 % of 769: not yet
    assert knee(SWEEP_LOOPBACK) == 1
    assert knee([]) == 1


def test_mathis_bound_matches_the_formula_and_falls_with_rate():
    # 31 Mbit/s over 100 ms (curl in DEVELOPERS.md): (1.2247 * 1448 / (0.1 * 3.875e6)) ** 2
    assert mathis_loss(31, 100) == pytest.approx((1.2247 * 1448 / (0.1 * 31e6 / 8)) ** 2, rel=1e-3)
    assert mathis_loss(31, 100) > mathis_loss(187, 50) > 0
    assert mathis_loss(0, 50) is None


def test_loss_is_not_blamed_when_one_stream_fills_the_path_or_buffers_hold_it():
    assert loss_reading(5840, 0.3, 5840, TUNED)[0] is None
    p, why = loss_reading(33, 100, 769, TUNED)
    assert p is not None and p > 1e-5 and "loss" in why
    # 6 MiB of autotuning at 100 ms holds one stream to ~500 Mbit/s: the buffers, not the network
    p, why = loss_reading(480, 100, 950, SMALL_BUFFERS)
    assert p is None and "buffers" in why


def test_recent_transfers_outrank_the_probe_but_old_ones_fade():
    now = time.time()
    recent = [{"streams": 64, "throughput_mbps": 900, "started": now - 3600},
              {"streams": 64, "throughput_mbps": 880, "started": now - 7200}]
    streams, why = choose_streams(SWEEP_100MS, recent, now)  # the probe's knee: 32 at 769
    assert streams == 64 and "earlier transfers" in why
    old = [{"streams": 64, "throughput_mbps": 950, "started": now - 120 * 86400}]
    assert weighted_by_streams(old, now)[64] < 100  # four half-lives
    assert choose_streams(SWEEP_100MS, old, now)[0] == 32
    # the log does not override the sweep with a count that did no better
    same = [{"streams": 8, "throughput_mbps": 870, "started": now}, {"streams": 4, "throughput_mbps": 880,
                                                                        "started": now}]
    assert choose_streams(SWEEP_50MS, same, now)[0] == 4


def test_analysis_gives_bdp_sysctl_lines_and_the_gridftp_buffer():
    rtt = RttStats([100.4, 100.1, 100.9, 100.2])
    seen = {}

    def rule(streams, rtt_s, bottleneck_bps):
        seen.update(streams=streams, rtt_s=rtt_s, bps=bottleneck_bps)
        return 4 * 1024 * 1024, "4 MiB per stream"

    a = analyse(url="ftp://dtn.example.org/", backend="gridftp", host="dtn.example.org", rtt=rtt,
                sweep=SWEEP_100MS, tcp=SMALL_BUFFERS, tcp_bs_rule=rule)
    d = a.to_dict()
    assert d["rtt_ms"] == 100.1 and d["rtt"]["median_ms"] == pytest.approx(100.3)
    assert d["bdp_bytes"] == int(769e6 / 8 * 0.1001)
    assert d["recommended_streams"] == 32 and d["sweep"] == {"1": 33, "2": 74, "4": 150, "8": 310, "16": 619,
                                                             "32": 769}
    lines = "\n".join(d["sysctl"])
    assert "net.core.rmem_max" in lines and "net.ipv4.tcp_rmem" in lines and "tcp_congestion_control = bbr" in lines
    assert all(item["reason"] for item in d["sysctl_reasons"])
    assert d["gridftp_tcp_bs"] == 4 * 1024 * 1024 and seen == {"streams": 32, "rtt_s": pytest.approx(0.1001),
                                                               "bps": 769e6}
    assert d["loss_estimate"] and d["recommended_backend"] == "gridftp"
    tuned = analyse(url="x", backend="https", host="h", rtt=rtt, sweep=SWEEP_100MS, tcp=TUNED).to_dict()
    assert tuned["sysctl"] == []


def test_protocol_advice_comes_from_measured_transfers():
    a = analyse(url="x", backend="ssh", host="h", rtt=RttStats([50]), sweep=SWEEP_50MS, tcp=TUNED,
                per_backend={"ssh": 300.0, "gridftp": 850.0, "https": 820.0})
    assert a.recommendation.backend == "ssh", "the address's own protocol stays: another is only named"
    # the sweep just measured SSH at 885 Mbit/s uncapped: that, not an older transfer's 300, is compared
    assert "fastest" in a.recommendation.backend_why and "ssh 885" in a.recommendation.backend_why
    from app.preflight.recommend import choose_backend

    kept, why = choose_backend("ssh", 300.0, {"ssh": 120.0, "gridftp": 850.0, "https": 820.0})
    assert kept == "ssh" and "gridftp 850" in why and "use gridftp where" in why, why


class RecordedBackend:
    """Plays back a recorded sweep through the probe interface (the sweep's control logic under test)."""

    name = "recorded"

    def __init__(self, figures: dict[int, float], ranges: bool = True) -> None:
        self.figures, self.ranges, self.asked = figures, ranges, []

    async def probe(self, url, streams, seconds, options):
        self.asked.append(streams)
        n = streams if self.ranges else 1
        return ProbeResult(n, int(self.figures[n] * 1e6 / 8 * seconds), seconds, 0.2)


def run_measure(backend, **kw):
    async def go():
        from aiohttp import web

        app = web.Application()
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            return await measure(backend, f"https://127.0.0.1:{port}/big.bin", TransferOptions(), quick=True, **kw)
        finally:
            await runner.cleanup()

    return asyncio.run(go())


def test_the_sweep_stops_when_two_doublings_stop_paying():
    backend = RecordedBackend({1: 224, 2: 403, 4: 884, 8: 869, 16: 885, 32: 866, 64: 860})
    m = run_measure(backend)
    assert backend.asked == [1, 2, 4, 8, 16] and len(m.rtt.samples_ms) >= 3
    backend = RecordedBackend({1: 33, 2: 74, 4: 150, 8: 310, 16: 619, 32: 769, 64: 850})
    run_measure(backend, max_streams=64)
    assert backend.asked == [1, 2, 4, 8, 16, 32, 64]


def test_a_server_without_ranges_ends_the_sweep_with_a_note():
    backend = RecordedBackend({1: 300}, ranges=False)
    m = run_measure(backend)
    assert backend.asked == [1, 2] and [p.streams for p in m.sweep] == [1]
    assert "range requests" in m.notes[0]


def test_steps_grow_with_the_round_trip_within_bounds():
    assert step_seconds(0.3, False) == 1.2 and step_seconds(100, False) == 2.0
    assert step_seconds(50, True) <= 1.0


def test_preflights_are_kept_and_expire(ferry_home):
    from app.preflight import fresh_streams

    with Store() as store:
        store.preflights.add({"host": "dtn", "backend": "https", "url": "https://u:secret@dtn/x",
                              "recommended_streams": 16, "measured_at": time.time() - 3 * 86400})
        assert fresh_streams(store, "dtn", "https") == 16
        assert "secret" not in store.conn.execute("SELECT url FROM preflights").fetchone()[0]
        store.settings.set("preflight_max_age_days", "2")
        assert fresh_streams(store, "dtn", "https") is None  # older than the setting: measure again
        assert fresh_streams(store, "dtn", "ssh") is None


class ModelPool:
    """Streams whose aggregate rate follows a recorded real sweep (bytes grow with the clock)."""

    def __init__(self, rates: dict[int, float]) -> None:
        self.rates, self.running, self.total, self.at = rates, 0, 0.0, time.monotonic()
        self.calls: list[tuple[str, int]] = []

    def _advance(self) -> None:
        now = time.monotonic()
        self.total += self.rates.get(self.running, 0.0) * 1e6 / 8 * (now - self.at)
        self.at = now

    async def start(self, count: int) -> None:
        self._advance()
        self.running += count
        self.calls.append(("start", count))

    async def stop(self, count: int) -> None:
        self._advance()
        self.running -= count
        self.calls.append(("stop", count))

    def moved(self) -> int:
        self._advance()
        return int(self.total)


def test_sweep_down_loads_the_path_first_then_drops_streams_level_by_level():
    from backends.host.netprobe import sweep_down

    real = {1: 27, 2: 53, 4: 110, 8: 388, 16: 656, 32: 872, 64: 917}  # 100 ms/1e-3, 1 GiB transfers
    pool, seen = ModelPool(real), []
    levels = asyncio.run(sweep_down(pool, [1, 2, 4, 8, 16, 32, 64], 0.25, 100.0, lambda r: seen.append(r.streams)))
    assert pool.calls[0] == ("start", 64) and pool.calls[-1] == ("stop", 1) and pool.running == 0
    assert [r.streams for r in levels] == seen == [64, 32, 16, 8, 4, 2, 1]
    assert all(r.rtt_ms == 100.0 for r in levels)
    measured = {r.streams: r.bytes * 8 / r.seconds / 1e6 for r in levels}
    for n, rate in real.items():
        assert measured[n] == pytest.approx(rate, rel=0.15)
    assert knee(sweep_of(measured)) == 32


def test_a_loopback_round_trip_of_microseconds_is_not_reported_as_zero():
    # The kernel times a loopback handshake in µs (4 µs here); rounding it to 0.01 ms read as "no round trip".
    d = RttStats([0.004, 0.006]).to_dict()
    assert d["min_ms"] == 0.004 and d["samples_ms"] == [0.004, 0.006] and d["jitter_ms"] == 0.002


def test_another_transport_is_recommended_only_where_it_measured_clearly_faster():
    # globus-url-copy over wanem, 1 GiB: UDT 95 Mbit/s at 200 ms/1e-3, where -p 1 moved 27 and -p 32 579
    one_stream = sweep_of({1: 27})
    chosen, why = choose_transport(one_stream, 1, {"udt": 95.0})
    assert chosen == "udt" and why == "UDT at 95 Mbit/s and TCP at 27 Mbit/s with 1 stream"
    assert choose_transport(sweep_of({1: 27, 32: 579}), 32, {"udt": 95.0})[0] == "tcp"
    assert choose_transport(one_stream, 1, {"udt": 29.0})[0] == "tcp"  # within the margin: TCP stays
    assert choose_transport(one_stream, 1, {"udt": None}) == ("tcp", "TCP at 27 Mbit/s with 1 stream; UDT could "
                                                                       "not be measured")
    assert choose_transport(one_stream, 1, {}) == (None, "")


def test_a_sweep_cut_while_still_growing_does_not_recommend_its_last_count():
    """gsiftp:// over wanem at 100 ms / 1e-3 (``gridftp_wan.py udt``): the sweep's budget ended at 4 streams
    (25, 156, 319 Mbit/s), UDT read 138. Recommending 4 made real copies run at 134 Mbit/s; 64 moved 582."""
    rtt = RttStats([100.4, 100.6])
    cut = analyse(url="gsiftp://h/", backend="gridftp", host="h", rtt=rtt, sweep=sweep_of({1: 25, 2: 156, 4: 319}),
                  tcp=TUNED, transports={"udt": 138.0}, sweep_cut=True)
    assert cut.recommendation.streams == 64 and "still grew" in cut.recommendation.why
    assert cut.recommendation.transport == "tcp" and "still growing" in cut.recommendation.transport_why
    # a slower TCP start than UDT does not make UDT the choice while TCP still grows
    assert choose_transport(sweep_of({1: 10, 2: 30, 4: 60}), 64, {"udt": 95.0}, growing=True)[0] == "tcp"
    # gsiftp:// at 200 ms / 1e-3: 5-second probes of 1 and 2 streams ended before their first byte, UDT read 95
    unknown = choose_transport(sweep_of({1: 0.0, 2: 0.0}), 64, {"udt": 95.5}, growing=True)
    assert unknown[0] == "tcp" and "TCP moved nothing within its probes" in unknown[1]
    # at 200 ms / 1e-3 the budget ended after one 8-second probe: 8 Mbit/s, UDT 66. Not a reason for UDT
    single = analyse(url="gsiftp://h/", backend="gridftp", host="h", rtt=RttStats([200.2]), sweep=sweep_of({1: 8.4}),
                     tcp=TUNED, transports={"udt": 65.8}, sweep_cut=True)
    assert single.recommendation.streams == 64 and single.recommendation.transport == "tcp"
    # a sweep that ended at the user's --max-streams 4 is not cut; nor is a server with one stream (no ranges),
    # nor a cut sweep that had flattened
    limited = analyse(url="gsiftp://h/", backend="gridftp", host="h", rtt=rtt,
                      sweep=sweep_of({1: 25, 2: 156, 4: 319}), tcp=TUNED, max_streams=4)
    assert limited.recommendation.streams == 4
    assert analyse(url="https://h/x", backend="https", host="h", rtt=rtt, sweep=sweep_of({1: 300}),
                   tcp=TUNED).recommendation.streams == 1
    flat = analyse(url="gsiftp://h/", backend="gridftp", host="h", rtt=rtt, sweep=sweep_of({1: 300, 2: 600, 4: 620}),
                   tcp=TUNED, sweep_cut=True)
    assert flat.recommendation.streams in (2, 4)
