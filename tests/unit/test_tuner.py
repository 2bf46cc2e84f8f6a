"""StreamTuner on synthetic paths: it grows while streams pay and stops at the knee."""

from __future__ import annotations

from backends.streams.tuner import StreamTuner, initial_streams

MiB = 1024 * 1024


def run_path(tuner: StreamTuner, per_stream: float, link: float, seconds: float = 20.0, dt: float = 0.1) -> int:
    """Feed the tuner the byte count of a path where each stream gets ``per_stream`` B/s up to ``link``."""
    t, total = 0.0, 0.0
    streams = tuner.streams
    while t < seconds:
        t += dt
        total += min(link, streams * per_stream) * dt
        streams = tuner.observe(t, int(total))
    return streams


def test_loss_limited_long_path_goes_past_sixteen():
    # 100 ms, loss 1e-3: ~28 Mbit/s per stream on a 1 Gbit/s link
    tuner = StreamTuner(start=16, maximum=64, rtt_s=0.1)
    assert run_path(tuner, per_stream=3.5e6, link=125e6) >= 32


def test_clean_path_stops_at_the_knee():
    # each stream alone could fill 40 % of the link: 4 streams are plenty
    tuner = StreamTuner(start=2, maximum=64, rtt_s=0.01)
    final = run_path(tuner, per_stream=50e6, link=125e6)
    assert 4 <= final <= 8 and tuner.settled


def test_never_exceeds_maximum():
    tuner = StreamTuner(start=8, maximum=20, rtt_s=0.05)
    assert run_path(tuner, per_stream=1e6, link=1e9) == 20


def test_waits_for_the_first_byte():
    tuner = StreamTuner(start=4, maximum=64, rtt_s=0.05)
    for i in range(100):
        assert tuner.observe(i * 0.1, 0) == 4


def test_initial_guess_grows_with_rtt_and_respects_small_files():
    assert initial_streams(0.001, 10**12, 64, 4 * MiB) < initial_streams(0.1, 10**12, 64, 4 * MiB)
    assert initial_streams(0.1, 5 * MiB, 64, 4 * MiB) == 1
    assert initial_streams(0.1, 20 * MiB, 64, 4 * MiB) == 5
    assert initial_streams(None, None, 64, 4 * MiB) >= 1


def run_costly_path(tuner: StreamTuner, rate_of, seconds: float = 10.0, dt: float = 0.05) -> int:
    """Like ``run_path``, with the aggregate rate any function of the stream count."""
    t, total = 0.0, 0.0
    streams = tuner.streams
    while t < seconds:
        t += dt
        total += rate_of(streams) * dt
        streams = tuner.observe(t, int(total))
    return streams


def test_goes_back_when_more_streams_were_slower():
    # a LAN where the ends are CPU-bound: a second SSH stream (its login, a second cipher on 2 cores) costs
    tuner = StreamTuner(start=1, maximum=64, rtt_s=0.0005)
    assert run_costly_path(tuner, lambda n: 350e6 if n == 1 else 260e6) == 1 and tuner.settled


def test_first_step_waits_out_slow_start():
    # slow start at 50 ms: the rate climbs for ~0.6 s. A first step judged at 0.4 s (6 RTT) saw the streams
    # mid-ramp and doubled on a full link; a step whose rate still rises is stretched until it levels off
    def ramp(t: float, n: int) -> float:
        return min(1.0, t / 0.6) * min(125e6, n * 30e6)

    clock = {"t": 0.0}

    def rate_of(n: int) -> float:
        return ramp(clock["t"], n)

    short = StreamTuner(start=8, maximum=64, rtt_s=0.05)
    long_first = StreamTuner(start=8, maximum=64, rtt_s=0.05, first_step_rtts=16)
    for tuner in (short, long_first):
        clock["t"], total, streams, judged_at = 0.0, 0.0, tuner.streams, None
        while clock["t"] < 6.0:
            clock["t"] += 0.05
            total += rate_of(streams) * 0.05
            if tuner.wants_loaded_rtt(clock["t"]):  # the bottleneck's queue grows as the link fills
                tuner.loaded_rtt(0.05 * (1 + 0.5 * (rate_of(streams) / 125e6) ** 2))
            streams = tuner.observe(clock["t"], int(total))
            if tuner.history and judged_at is None:
                judged_at = clock["t"]
        assert tuner.history[0][0] == 8 and judged_at >= 0.6  # not before the ramp ended
        assert streams <= 16  # 8 streams filled the link; at most one doubling was tried


def test_a_rising_step_is_stretched_only_so_far():
    # a rate that keeps climbing (a very long slow start) is judged at twice the step's length at the latest
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05)  # step 0.4 s
    t, total = 0.0, 0.0
    while not tuner.history:
        t += 0.05
        total += 1e6 * (1.5 ** (t / 0.05)) * 0.05  # +50 % every tick
        if tuner.wants_loaded_rtt(t):
            tuner.loaded_rtt(0.058)  # a queue has begun to build (1.16 x the idle round trip)
        tuner.observe(t, int(total))
    assert 0.8 <= t < 0.9


def test_a_rising_step_without_a_queue_is_not_stretched():
    # loss-bound streams before their first losses: the rate rises, the round trip stays the path's own
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.1)  # step 0.6 s
    t, total = 0.0, 0.0
    while not tuner.history:
        t += 0.05
        total += 1e6 * (1.2 ** (t / 0.05)) * 0.05
        if tuner.wants_loaded_rtt(t):
            tuner.loaded_rtt(0.103)
        tuner.observe(t, int(total))
    assert t < 0.75 and tuner.streams == 16  # judged at the step's end (0.6 s after the first byte)


def test_measured_round_trip_sets_the_first_count_both_ways():
    lan = StreamTuner(8)
    assert lan.start_for_rtt(0.0001) == 2  # a LAN: streams cost CPU, bring no window
    far = StreamTuner(8)
    assert far.start_for_rtt(0.1) == 64
    judged = StreamTuner(8, rtt_s=0.0001)
    for t in range(0, 20):
        judged.observe(t * 0.1, t * 10_000_000)
    assert judged.history, "the first count was judged"
    assert judged.start_for_rtt(0.0001) == judged.streams  # once judged, a late measurement changes nothing


def test_kernel_round_trip_of_a_loopback_connection():
    import asyncio

    from backends.host.netprobe import connect_time

    async def measure() -> float | None:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        async with server:
            return await connect_time("127.0.0.1", server.sockets[0].getsockname()[1])

    rtt = asyncio.run(measure())
    assert rtt is not None and 0 < rtt < 0.002


def _early_handshakes(monkeypatch=None, stale: bool = False) -> tuple[float | None, float | None, int]:
    """begin_handshake, then connect_time twice, against a loopback server counting its connections."""
    import asyncio

    from backends.host import netprobe

    if stale:
        monkeypatch.setattr(netprobe, "EARLY_SECONDS", 0.0)

    async def measure():
        accepted = []
        server = await asyncio.start_server(lambda r, w: (accepted.append(1), w.close()), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            await asyncio.to_thread(netprobe.begin_handshake, "127.0.0.1", port)  # as a backend's check does
            first = await netprobe.connect_time("127.0.0.1", port)
            await asyncio.sleep(0.05)
            after_first = len(accepted)
            second = await netprobe.connect_time("127.0.0.1", port)
            return first, second, after_first

    return asyncio.run(measure())


def test_a_handshake_begun_early_is_the_round_trip_read_later():
    first, second, connections = _early_handshakes()
    assert first is not None and 0 < first < 0.002
    assert connections == 1  # connect_time used the early handshake instead of making its own
    assert second is not None and 0 < second < 0.002  # it is used once; the next measure is a fresh one


def test_an_answered_early_handshake_is_read_without_waiting():
    import socket
    import time

    from backends.host import netprobe

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert netprobe.answered_rtt("127.0.0.1", port) is None  # none begun
        netprobe.begin_handshake("127.0.0.1", port)
        time.sleep(0.01)  # loopback answers at once
        rtt = netprobe.answered_rtt("127.0.0.1", port)
        assert rtt is not None and 0 < rtt < 0.002
        assert netprobe.answered_rtt("127.0.0.1", port) is None  # used up


def test_a_stale_early_handshake_is_not_used(monkeypatch):
    first, _, connections = _early_handshakes(monkeypatch, stale=True)
    assert first is not None and connections == 2  # closed as too old; connect_time measured afresh


def test_an_early_handshake_to_a_closed_port_reads_as_unknown():
    import asyncio
    import socket

    from backends.host import netprobe

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: refused
        netprobe.begin_handshake("127.0.0.1", port)
        assert asyncio.run(netprobe.connect_time("127.0.0.1", port)) is None


def run_with_queue(tuner: StreamTuner, per_stream: float, link: float, base_rtt: float, queue_rtt: float,
                   seconds: float = 20.0, dt: float = 0.1) -> int:
    """Like ``run_path``, answering the tuner's round-trip questions: ``queue_rtt`` while the link is full."""
    t, total = 0.0, 0.0
    streams = tuner.streams
    while t < seconds:
        t += dt
        total += min(link, streams * per_stream) * dt
        if tuner.wants_loaded_rtt(t):
            tuner.loaded_rtt(queue_rtt if streams * per_stream >= link else base_rtt)
        streams = tuner.observe(t, int(total))
    return streams


def test_a_full_link_settles_without_trying_a_doubling():
    # 50 ms: 8 streams of ~150 Mbit/s fill 1 Gbit/s; the bottleneck's queue lengthens the round trip
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05, first_step_rtts=16)
    assert run_with_queue(tuner, per_stream=19e6, link=125e6, base_rtt=0.05, queue_rtt=0.085) == 8
    assert tuner.settled and tuner.full_link


def test_an_idle_queue_still_lets_loss_limited_streams_double():
    # 100 ms, loss 1e-3: the link is far from full, the round trip stays the path's own
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.1, first_step_rtts=16)
    assert run_with_queue(tuner, per_stream=3.5e6, link=125e6, base_rtt=0.1, queue_rtt=0.14) >= 32
    assert not tuner.full_link


def test_the_round_trip_is_asked_late_in_a_step_one_at_a_time_and_the_longest_counts():
    tuner = StreamTuner(start=4, maximum=64, rtt_s=0.05)  # first step: 0.4 s
    tuner.observe(0.0, 1)  # first byte: the step begins
    assert not tuner.wants_loaded_rtt(0.1)
    assert tuner.wants_loaded_rtt(0.2) and not tuner.wants_loaded_rtt(0.25)  # one question at a time
    tuner.loaded_rtt(0.07)  # a sample in a trough of the queue
    assert tuner.wants_loaded_rtt(0.28)
    tuner.loaded_rtt(0.09)
    assert tuner.wants_loaded_rtt(0.34)
    tuner.loaded_rtt(None)  # a probe that failed
    assert not tuner.wants_loaded_rtt(0.38)  # three answers a step
    assert tuner.observe(0.41, 40_000_000) == 4 and tuner.full_link  # 90 ms >= 1.3 x 50 ms


def test_a_verdict_waits_for_the_round_trip_it_asked_for():
    # the loaded round trip is asked two round trips before the step ends; the step may end before it answers
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05)  # first step: 0.4 s
    tuner.observe(0.0, 1)
    assert not tuner.wants_loaded_rtt(0.15) and tuner.wants_loaded_rtt(0.38)
    assert tuner.observe(0.42, 50_000_000) == 8 and not tuner.settled  # no answer yet: no verdict
    tuner.loaded_rtt(0.085)  # the queue is filling: the link is full
    assert tuner.observe(0.45, 52_000_000) == 8 and tuner.settled and tuner.full_link


def test_an_unanswered_round_trip_does_not_hold_the_verdict_for_long():
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05)
    tuner.observe(0.0, 1)
    assert tuner.wants_loaded_rtt(0.35)
    assert tuner.observe(0.42, 50_000_000) == 8  # waiting for the answer
    assert tuner.observe(0.56, 70_000_000) == 16  # three round trips past the step: decided without it


def run_changing(tuner: StreamTuner, per_stream, link, base_rtt: float, queue_rtt: float, seconds: float = 20.0,
                 size: float | None = None, dt: float = 0.1) -> int:
    """Like ``run_with_queue`` on a path that changes: ``per_stream(t)`` and ``link(t)`` in B/s; ``size``: the
    file's, so the tuner is told how much is left."""
    t, total = 0.0, 0.0
    streams = tuner.streams
    while t < seconds and (size is None or total < size):
        t += dt
        total += min(link(t), streams * per_stream(t)) * dt
        if tuner.wants_loaded_rtt(t):
            tuner.loaded_rtt(queue_rtt if streams * per_stream(t) >= link(t) else base_rtt)
        streams = tuner.observe(t, int(total), None if size is None else max(0, int(size - total)))
    return streams


def _after(when: float, before: float, after: float):
    return lambda t: before if t < when else after


def test_a_count_settled_on_a_transient_is_doubled_again_when_the_rate_falls():
    # 100 ms, 1e-3: streams run at their slow-start top (8 fill the link, the queue shows) until their first
    # losses bring each down to ~32 Mbit/s; the count judged on the top would hold half the link
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.1, first_step_rtts=16)
    final = run_changing(tuner, per_stream=_after(4.0, 16e6, 4e6), link=lambda t: 125e6, base_rtt=0.1,
                         queue_rtt=0.14)
    assert tuner.reopens >= 1 and final >= 32
    assert any(n == 8 for n, _ in tuner.history)  # the fall is in the record the job reports


def test_a_steady_rate_after_settling_keeps_the_count():
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05, first_step_rtts=16)
    assert run_changing(tuner, per_stream=lambda t: 19e6, link=lambda t: 125e6, base_rtt=0.05,
                        queue_rtt=0.085, seconds=30) == 8
    assert tuner.reopens == 0 and tuner.full_link


def test_a_fall_on_a_full_link_is_shared_traffic_not_a_reason_for_more_streams():
    # someone else's transfer takes half the bottleneck: the queue stays full, so the count stays
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.05, first_step_rtts=16)
    assert run_changing(tuner, per_stream=lambda t: 19e6, link=_after(5.0, 125e6, 60e6), base_rtt=0.05,
                        queue_rtt=0.085) == 8
    assert tuner.reopens == 0


def test_no_more_streams_when_little_is_left():
    # the same fall as above, but the file ends within three seconds of it at the fallen rate
    tuner = StreamTuner(start=8, maximum=64, rtt_s=0.1, first_step_rtts=16)
    run_changing(tuner, per_stream=_after(4.0, 16e6, 4e6), link=lambda t: 125e6, base_rtt=0.1, queue_rtt=0.14,
                 size=4.0 * 125e6 + 1.5 * 32e6)
    assert tuner.reopens == 0


def test_a_lan_never_reopens():
    # on a LAN a slower second is the disk or the CPU: more streams would only cost more CPU
    tuner = StreamTuner(start=1, maximum=64, rtt_s=0.0005)
    run_changing(tuner, per_stream=_after(3.0, 400e6, 100e6), link=lambda t: 1.25e9, base_rtt=0.0005,
                 queue_rtt=0.0005)
    assert tuner.reopens == 0


def test_a_capped_transfer_starts_with_one_stream_per_50_mbits_of_its_cap():
    # a 200 Mbit/s cap: 4 streams, whatever the round trip would have asked for
    tuner = StreamTuner(start=16, maximum=64, rtt_s=0.05, ceiling=200e6 / 8)
    assert tuner.streams == 4 and tuner.start_for_rtt(0.1) == 4
    assert StreamTuner(start=16, maximum=64, rtt_s=0.05, ceiling=1e6).streams == 1
    assert StreamTuner(start=16, maximum=64, rtt_s=0.05).streams == 16  # no cap: as before


def test_a_capped_transfer_stops_doubling_at_its_cap():
    # each stream could move 64 Mbit/s, but the cap is 200 Mbit/s: 4 streams are enough
    cap = 200e6 / 8
    tuner = StreamTuner(start=4, maximum=64, rtt_s=0.05, ceiling=cap)
    assert run_path(tuner, per_stream=8e6, link=cap) == 4 and tuner.settled


def test_a_capped_transfer_below_its_cap_still_adds_streams():
    # a lossy path: each stream moves 10 Mbit/s, so 4 streams reach a fifth of a 200 Mbit/s cap
    cap = 200e6 / 8
    tuner = StreamTuner(start=4, maximum=64, rtt_s=0.1, ceiling=cap)
    assert run_path(tuner, per_stream=1.25e6, link=cap) >= 16


def test_a_capped_count_is_not_reopened_when_other_jobs_take_their_share():
    # alone at its cap, then two other jobs pay the same global cap: its rate falls to a third
    cap = 200e6 / 8
    tuner = StreamTuner(start=4, maximum=64, rtt_s=0.05, ceiling=cap)
    final = run_changing(tuner, per_stream=_after(5.0, cap / 4, cap / 12), link=lambda t: 125e6, base_rtt=0.05,
                         queue_rtt=0.05, seconds=30)
    assert final == 4 and tuner.reopens == 0
