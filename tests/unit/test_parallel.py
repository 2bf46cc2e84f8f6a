"""How ``ParallelTransfer`` sizes leases: by each stream's own rate once TCP has left slow start."""

import time

from backends.streams.chunks import ChunkMap
from backends.streams.parallel import ParallelTransfer

MiB = 1024 * 1024


def _running(rates: dict[int, float], *, ramping: bool = False) -> ParallelTransfer:
    """A transfer of 1 GiB with 256 MiB left, 8 streams, streams' recent rates as given (bytes/s)."""
    chunks = ChunkMap(1024 * MiB, [(0, 768 * MiB)])
    run = ParallelTransfer(chunks, streams=8, rtt_s=0.05)
    run.asks_ahead = True  # as SSH downloads do
    run.first_byte_at = time.monotonic() - (0.2 if ramping else 5.0)
    run._stream_rates = dict(rates)
    run.rate = sum(rates.values())
    run._workers = set(range(8))  # counted, never awaited
    return run


def test_a_slow_stream_gets_a_lease_that_lasts_as_long_as_a_fast_ones():
    rates = {n: 16 * MiB for n in range(1, 8)} | {8: 8 * MiB}  # one connection that lost packets runs at half
    run = _running(rates)
    fast, slow = run._lease_size(1), run._lease_size(8)
    assert 1.8 < fast / slow < 2.2
    assert abs(fast / rates[1] - slow / rates[8]) < 0.1  # the same time on the wire


def test_while_streams_ramp_up_every_lease_is_sized_alike():
    run = _running({n: (16 if n < 8 else 8) * MiB for n in range(1, 9)}, ramping=True)
    assert run._lease_size(1) == run._lease_size(8)


def test_a_stream_with_no_rate_yet_gets_the_average_share():
    run = _running({n: 16 * MiB for n in range(1, 8)})
    assert run._lease_size(99) == run._lease_size(None)


def test_where_a_lease_costs_a_round_trip_every_stream_gets_the_average():
    run = _running({n: (16 if n < 8 else 8) * MiB for n in range(1, 9)})
    run.asks_ahead = False  # HTTPS: smaller leases would mean more idle round trips for the slow stream
    assert run._lease_size(1) == run._lease_size(8)
