"""Which bytes a stream of a ``ParallelTransfer`` moves next: a fresh lease sized to last about twenty round
trips (guided self-scheduling, capped in time), one asked for ahead, or the back of the slowest stream's lease
once nothing is left, split so that both halves end together.

A mixin: ``parallel.ParallelTransfer`` holds the state it reads (the chunk map, the rates, the round trip).
"""

from __future__ import annotations

import time
from typing import Any

from .chunks import Lease

KiB, MiB = 1024, 1024 * 1024
MAX_LEASE = 64 * MiB
MIN_LEASE = 256 * KiB
FIRST_LEASE = 4 * MiB  # while no rate is known (the start, slow start)
LEASE_RTTS = 20  # a lease lasts about this many round trips: ~5 % idle per stream, a short hash tail
MIN_LEASE_SECONDS = 0.25  # on a LAN, RTT-sized leases would be tiny: keep each request meaningful
RAMP_SECONDS = 1.0  # leases stay FIRST_LEASE-sized this long after the first byte (TCP is in slow start)
STEAL_RTTS = 4  # a steal costs the thief a round trip (a new channel on SSH): only steal what outlasts it
MIN_STEAL_SECONDS = 0.005


class LeasePolicy:
    """How leases are sized, asked for ahead and stolen (see the module's docstring)."""

    def take_lease(self, stream: Any, number: int) -> Lease | None:
        """Stream ``number``'s next lease (a protocol that asks ahead keeps the one it already asked for)."""
        return self._next_lease(number)

    def lease_ahead(self, current: Lease) -> Lease | None:
        """A fresh lease (never a stolen one) for the stream moving ``current`` to ask for before it ends."""
        if self.past_deadline():
            return None
        number = self._lease_stream.get(current.id)
        lease = self._fresh_lease(self._lease_size(number))
        if lease is not None and number is not None:
            self._lease_stream[lease.id] = number
        return lease

    def _fresh_lease(self, size: int) -> Lease | None:
        if self.arriving is None:
            return self.chunks.lease(size)
        # a lease worth its fixed cost (an SSH upload's channel and shell): wait for that much, unless it ends the file
        return self.chunks.lease_within(size, self.arriving.ready(), min_bytes=max(self.lease_floor, MIN_LEASE))

    def _next_lease(self, number: int | None = None) -> Lease | None:
        lease = self._fresh_lease(self._lease_size(number))
        if lease is None:
            lease = self.reclaim()
        waiting = self.arriving is not None and self.chunks.pending_bytes > 0  # wait for more, do not split
        if lease is None and self.steal and self.chunks.size_known and not waiting:
            lease = self.chunks.steal(self.steal_floor, rank=self._seconds_left, worth=self._worth_stealing,
                                     keep=self._victim_share)
        return lease

    def _stream_rate(self) -> float:
        return self.rate / max(1, len(self._workers))

    def _lease_size(self, number: int | None = None) -> int:
        """Guided self-scheduling (half of the stream's share of what is left), capped in time.

        A lease costs its stream one idle round trip, so it should last many RTTs;
        but the hasher can only follow the oldest unfinished lease, so leases must
        not last long either: about ``LEASE_RTTS`` round trips of the stream's rate.
        A protocol that asks ahead sizes both by the stream's own rate once TCP has left slow
        start: on a lossy path one connection may run at half the others' rate for seconds
        (traced at 50 ms: one of 8 SSH streams at 78 Mbit/s, the others at 160), and an
        average-sized last lease on it ended 0.3-0.7 s after the rest. Where each lease costs
        an idle round trip (HTTPS), smaller leases for slow streams cost more than they saved
        (100 ms, 1e-3, 64 streams: 1.5 % slower), so there every stream gets the average.
        """
        ramping = self.first_byte_at is None or time.monotonic() - self.first_byte_at < RAMP_SECONDS
        share = 1 / max(1, self.target)
        rate = self._stream_rate()
        own = None if ramping or number is None or not self.asks_ahead else self._stream_rates.get(number)
        if own and self.rate > 0:
            share = min(2 * share, max(share / 4, own / self.rate))
            rate = share * self.rate
        guided = int(self.chunks.pending_bytes * share / 2)
        cap = int(rate * max(self.rtt_s or 0.0, MIN_LEASE_SECONDS / LEASE_RTTS) * LEASE_RTTS)
        if ramping:
            cap = max(cap, FIRST_LEASE)
        return int(min(MAX_LEASE, max(self.lease_floor, min(guided, cap))))

    def reclaim(self) -> Lease | None:
        """A lease some stream asked for ahead but has not begun, handed to an idle stream whole.

        Protocols that ask ahead (SSH) override this; by default nothing is asked ahead.
        """
        return None

    def _worth_stealing(self, lease: Lease) -> bool:
        """Half of what the lease's stream has left must take it longer than the thief's request.

        Judged by that stream's own rate, not the average: at the end the lease left over is
        usually on a stream that lost packets and runs at a fraction of the others' rate.
        """
        return self._seconds_left(lease) >= STEAL_RTTS * max(self.rtt_s or 0.0, MIN_STEAL_SECONDS)

    def _seconds_left(self, lease: Lease) -> float:
        return lease.remaining / self._lease_rate(lease)

    def _lease_rate(self, lease: Lease) -> float:
        """How fast the lease is moving now: its average since it began, or its stream's recent rate when that
        is lower. A stream that has just lost packets (or waits out a retransmission timeout) slows down long
        after its lease began; judged by the average it kept most of its lease at a steal and ended 0.3-0.4 s
        after every other stream (traced on SSH at 50 ms: two leases of 7.5 MB moving at 4 MB/s)."""
        began = self._lease_began.get(lease.id)
        done = lease.cursor - lease.start
        if began is None or done <= 0:
            return max(self._stream_rate(), 1.0)
        average = done / max(1e-3, time.monotonic() - began)
        recent = self._stream_rates.get(self._lease_stream.get(lease.id, -1))
        return max(average if recent is None else min(average, recent), 1.0)

    def _victim_share(self, lease: Lease) -> float:
        """Split so that both halves end together: the victim keeps its rate's share of the rest
        (the thief is assumed to run at least at the average stream's rate)."""
        victim = self._lease_rate(lease)
        thief = max(self._stream_rate(), victim)
        return victim / (victim + thief)
