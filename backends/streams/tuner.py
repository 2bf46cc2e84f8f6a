"""``--streams auto``: how many parallel streams one file gets, decided as it runs.

On a long path one TCP stream is capped by its window (window / RTT) and by loss
(Mathis: MSS / (RTT * sqrt(p))); streams add up until the bottleneck link is
full. So the tuner starts with a guess from the round-trip time, then doubles
the stream count while the aggregate rate keeps growing with it, and stops at the
knee: when the streams just added brought less than half of their fair share.
It keeps watching after that: a rate that falls well below its best on a path without a
queue means the knee was judged on a transient, and the doubling goes on.
aria2 stops at 16 whatever the path; the tuner may go to 64.

Pure logic (times and byte counts in, a stream count out), so it is unit-tested
on recorded traces. Shared by every backend that opens parallel streams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: a doubling must raise the rate by at least this share of the streams' fair share
GAIN = 0.5
#: below this round trip a stream is limited by CPU (its cipher, its copies), not by its window
LAN_RTT = 0.002
#: a round trip this much longer than the idle path's means the bottleneck's queue is filling: the link is full
QUEUE_GROWTH = 1.3
#: a step's second half asks for up to this many round trips under load, one after another, and keeps the
#: longest: cubic flows fill a drop-tail queue and drain it again, so one sample may fall in a trough
#: (traced at 50 ms with 8 SSH streams on a full link: 62 ms in one run, 76 and 86 ms in others, idle 51)
LOAD_SAMPLES = 3
#: a verdict waits at most this many round trips past the step's end for the loaded round trip it asked for
ANSWER_WAIT_RTTS = 3
#: a step whose last quarter ran this much faster than the quarter before, while the round trip has begun to
#: grow, is still filling the link: it is judged once the rate levels off (at most ``MAX_STRETCH`` times its
#: length), when the queue shows. Judged mid-ramp, 8 SSH streams at 50 ms looked like 730-900 Mbit/s on a
#: link they fill and the round trip had grown only 20 %: the tuner logged in 8 more streams, whose key
#: exchanges cost 6 % of the transfer's rate. Without a queue (loss-bound streams, 100 ms / 1e-3) the step is
#: not stretched: judged at its rising top, the streams' rate before their first losses, every doubling
#: looked too small and auto stopped at 16 streams where 32 did better
RISING = 1.1
MAX_STRETCH = 2.0
QUEUE_HINT = 1.1
#: the longest a first step waits out slow start (0.8 s: 16 RTT at 50 ms; at 100 ms growth must not wait longer)
FIRST_STEP_CAP = 0.8
#: once settled, the tuner keeps watching: a rate that falls below this share of the best it showed since means
#: the verdict was taken on a transient. Loss-bound streams run at their slow-start top for seconds before their
#: first losses bring each down to its share (traced at 100 ms / 1e-3: 16 SSH streams at 830-990 Mbit/s for 5 s,
#: then 810, 790, 670 ... 530 over the next 6 s, where 32 would have held the link)
DECAY = 0.8
#: the settled rate is judged over windows this long (at least ``WATCH_RTTS`` round trips)
WATCH_SECONDS = 1.0
WATCH_RTTS = 10
#: more streams are tried again only while at least this much transfer time is left (new SSH logins take 1-2 s
#: at 100 ms before they carry data)
REOPEN_LEFT_SECONDS = 3.0
MAX_REOPENS = 3
#: a capped transfer whose streams already move this share of the cap has enough of them: more could only
#: take turns at the same token bucket, each arriving with a burst of unpaid data (traced at 50 ms under a
#: 200 Mbit/s cap: auto doubled HTTPS to 64 streams, whose debts made the rate swing from 50 to 950 Mbit/s
#: in quarter seconds and average 150)
CAPPED_ENOUGH = 0.85
#: a capped transfer starts with one stream per this much of its cap (50 Mbit/s): a stream that sleeps most
#: of the time for the bucket lets its TCP window close, and many such streams wake with bursts of unpaid
#: data. Measured at 50 ms / 1e-4 under a 200 Mbit/s cap, HTTPS: 4 streams held 197 Mbit/s, 8 193, 16 190,
#: 32 147 (swinging from 30 to 490 each second); more are added only while the rate stays below the cap
CAPPED_STREAM_RATE = 50e6 / 8


def initial_streams(rtt_s: float | None, size: int | None, maximum: int, min_bytes_per_stream: int) -> int:
    """A starting guess: more streams the longer the path, never more than the file can use."""
    if size is not None and size < 2 * min_bytes_per_stream:
        return 1
    rtt_ms = (rtt_s or 0.0) * 1000
    # measured on emulated 1 Gbit/s paths: 32 streams fill 50 ms at loss 1e-4, 64 are needed at 100 ms/1e-3
    steps = ((2, 2), (5, 4), (20, 8), (35, 16), (80, 32))
    guess = next((n for limit, n in steps if rtt_ms < limit), 64)
    if size is not None:
        guess = min(guess, max(1, size // min_bytes_per_stream))
    return max(1, min(guess, maximum))


@dataclass
class StreamTuner:
    start: int
    maximum: int = 64
    rtt_s: float = 0.05
    #: the first step lasts at least this many round trips: a protocol whose extra streams are dear (an SSH
    #: login each) judges its first count after slow start, not during it, which flatters every doubling
    first_step_rtts: float = 0.0
    #: the rate cap (bytes/s) the streams pay, when there is one: no doubling past it, no reopening below it
    ceiling: float | None = None
    streams: int = field(init=False)
    settled: bool = field(init=False, default=False)
    history: list[tuple[int, float]] = field(init=False, default_factory=list)  # (streams, rate)

    def __post_init__(self) -> None:
        self.streams = self._within_cap(max(1, min(self.start, self.maximum)))
        self.settled = self.streams >= self.maximum
        self._step_began: float | None = None
        self._samples: list[tuple[float, int]] = []
        self._loaded_rtt: float | None = None  # this step's round trip under load, when the backend measured it
        self._rtt_pending = False  # a round trip under load asked for and not answered yet
        self._rtt_answers = 0
        self.full_link = False  # settled because the path's queue was filling, not by a doubling's verdict
        self.reopens = 0  # times a settled count was doubled again because the rate fell (``_watch_settled``)
        self._watch: list[tuple[float, int]] = []  # (time, bytes) since settling
        self._best = 0.0  # the best windowed rate since settling
        self._decayed_at: float | None = None  # when the rate was seen to fall; a loaded round trip decides

    def start_for_rtt(self, rtt_s: float) -> int:
        """A round trip measured before any data: a long path starts with more streams, a LAN with fewer
        (there each stream costs CPU - its cipher, its copies - and brings no window: on loopback, 2 cores,
        8 HTTPS streams were 8 % slower than 1 to 4)."""
        self.rtt_s = rtt_s
        if not self.history:  # the first count has not been judged yet (on a LAN data may already flow)
            guess = min(initial_streams(rtt_s, None, self.maximum, 1), self.maximum)
            streams = min(self.streams, guess) if rtt_s < LAN_RTT else self._within_cap(max(self.streams, guess))
            if streams != self.streams:
                self.streams, self._step_began, self._samples = streams, None, []
            self.settled = self.streams >= self.maximum
        return self.streams

    def _within_cap(self, streams: int) -> int:
        if not self.ceiling:
            return streams
        return min(streams, max(1, math.ceil(self.ceiling / CAPPED_STREAM_RATE)))

    @property
    def step_seconds(self) -> float:
        """Long enough for new streams to connect and leave slow start."""
        return max(0.4, 6 * self.rtt_s)

    def wants_loaded_rtt(self, now: float) -> bool:
        """Whether the caller should measure the path's round trip now, for this step's verdict.

        A doubling is an experiment, and on SSH a dear one (a login per stream, real CPU on both ends).
        When the current streams already fill the bottleneck its queue grows and round trips get longer
        (traced at 50 ms: 62-90 ms under 8 SSH streams); more streams could only share that link. Asked in
        the step's second half (the queue builds only once the streams have left slow start), one sample
        at a time, ``LOAD_SAMPLES`` at most.
        """
        if self.settled and self._decayed_at is not None and not self._rtt_pending and self.rtt_s:
            if self._rtt_answers >= LOAD_SAMPLES:
                return False
            self._rtt_pending = True  # the rate fell: is the link full (others share it now) or not?
            return True
        if self.settled or self._rtt_pending or self._step_began is None or not self.rtt_s:
            return False
        elapsed = now - self._step_began
        if elapsed < 0.5 * self._step_length():
            return False
        if self._rtt_answers >= (LOAD_SAMPLES if elapsed < self._step_length() else 2 * LOAD_SAMPLES):
            return False  # (a step stretched while the rate still rose asks a few more)
        self._rtt_pending = True
        return True

    def loaded_rtt(self, rtt_s: float | None) -> None:
        """A round trip measured while the current streams run (see ``wants_loaded_rtt``); the longest counts."""
        self._rtt_pending = False
        self._rtt_answers += 1
        if rtt_s is not None:
            self._loaded_rtt = max(self._loaded_rtt or 0.0, rtt_s)

    def _step_length(self) -> float:
        first = min(self.first_step_rtts * self.rtt_s, FIRST_STEP_CAP)
        return self.step_seconds if self.history else max(self.step_seconds, first)

    def observe(self, now: float, total_bytes: int, left_bytes: int | None = None) -> int:
        """Feed the running byte count (and, when known, how many bytes are still to move);
        returns how many streams should be running."""
        if self.settled:
            return self._watch_settled(now, total_bytes, left_bytes)
        if self._step_began is None:
            if total_bytes == 0:
                return self.streams  # the clock starts with the first byte, not the handshakes
            self._step_began = now
        self._samples.append((now, total_bytes))
        elapsed = now - self._step_began
        if elapsed < self._step_length():
            return self.streams
        if self._rtt_pending and not self._rtt_answers and \
                elapsed < self._step_length() + ANSWER_WAIT_RTTS * self.rtt_s:
            return self.streams  # the step's first round trip under load is on its way: it may settle the count
        if elapsed < MAX_STRETCH * self._step_length() and self._queue_building() and \
                self._rising(now, self._step_length() / 4):
            return self.streams
        rate = self._recent_rate(now, elapsed / 2)
        self.history.append((self.streams, rate))
        if self.ceiling and rate >= CAPPED_ENOUGH * self.ceiling:
            self._settle(now, total_bytes, rate)  # the cap, not the path, holds the rate
            return self.streams
        if len(self.history) >= 2:
            (n0, r0), (n1, r1) = self.history[-2], self.history[-1]
            fair_share = r0 / n0 if n0 else 0.0
            if r1 - r0 < GAIN * fair_share * (n1 - n0):
                self._settle(now, total_bytes, rate)  # the knee: more streams no longer pay
                if r1 < r0 and self.rtt_s < LAN_RTT:
                    # on a LAN the ends are CPU-bound (a cipher per stream): back to the last count. On a long
                    # path a slower step is new streams still in slow start, not a verdict on them.
                    self.streams = n0
                return self.streams
        if self._loaded_rtt is not None and self._loaded_rtt >= QUEUE_GROWTH * self.rtt_s:
            self._settle(now, total_bytes, rate)
            self.full_link = True  # the link is full: another doubling could only share it
            return self.streams
        return self._double(now, total_bytes)

    def _double(self, now: float, total_bytes: int) -> int:
        self.streams = min(self.maximum, self.streams * 2)
        self.settled = self.streams >= self.maximum
        self._step_began = now
        self._samples = [(now, total_bytes)]
        self._forget_rtt()
        return self.streams

    def _forget_rtt(self) -> None:
        """A new question about the path (a step, a settled count, a fall): earlier answers do not count."""
        self._loaded_rtt, self._rtt_pending, self._rtt_answers = None, False, 0

    def _settle(self, now: float, total_bytes: int, rate: float) -> None:
        self.settled = True
        self._watch, self._best, self._decayed_at = [(now, total_bytes)], rate, None
        self._forget_rtt()

    def _watch_settled(self, now: float, total_bytes: int, left_bytes: int | None) -> int:
        """A settled count is doubled again when the rate falls well below its best since (``DECAY``), while
        enough is left to move, unless a round trip under load says the link is full: then the streams are
        sharing it with someone else's traffic and more of them would only push that aside."""
        if self.streams >= self.maximum or self.reopens >= MAX_REOPENS or self.rtt_s < LAN_RTT or not self._watch:
            return self.streams  # (on a LAN a slower second is the disk or the CPU, never a window)
        if self.ceiling and self._best >= CAPPED_ENOUGH * self.ceiling:
            return self.streams  # a capped job's rate falls when other jobs pay the same global cap: not a window
        self._watch.append((now, total_bytes))
        window = max(WATCH_SECONDS, WATCH_RTTS * self.rtt_s)
        while len(self._watch) > 2 and self._watch[1][0] <= now - window:
            self._watch.pop(0)
        (t0, b0), (t1, b1) = self._watch[0], self._watch[-1]
        if t1 - t0 < window:
            return self.streams
        rate = (b1 - b0) / (t1 - t0)
        if self._decayed_at is None:
            self._best = max(self._best, rate)
            enough_left = left_bytes is None or left_bytes >= rate * REOPEN_LEFT_SECONDS
            if rate < DECAY * self._best and enough_left:
                self._decayed_at = now  # ask the path's round trip under load first (``wants_loaded_rtt``)
                self._forget_rtt()
            return self.streams
        if self._rtt_answers < LOAD_SAMPLES and now - self._decayed_at < (LOAD_SAMPLES + ANSWER_WAIT_RTTS) * self.rtt_s:
            return self.streams  # the round trips asked are on their way
        if self._loaded_rtt is not None and self._loaded_rtt >= QUEUE_GROWTH * self.rtt_s:
            self._best, self._decayed_at = rate, None  # a full link, shared now: this is the new level
            return self.streams
        self.reopens += 1
        # the next verdict weighs the doubling against the level the rate fell to: the window's last quarter
        # (the whole window still holds some of the old top, against which any doubling looks too small)
        recent = [(t, b) for t, b in self._watch if t >= now - window / 4]
        if len(recent) >= 2 and recent[-1][0] > recent[0][0]:
            rate = (recent[-1][1] - recent[0][1]) / (recent[-1][0] - recent[0][0])
        self.history.append((self.streams, rate))
        self.full_link = False
        self._watch, self._decayed_at = [], None
        return self._double(now, total_bytes)

    def _queue_building(self) -> bool:
        return self._loaded_rtt is not None and self._loaded_rtt >= QUEUE_HINT * self.rtt_s

    def _rising(self, now: float, quarter: float) -> bool:
        """Whether the last ``quarter`` of the step ran ``RISING`` times faster than the one before it."""
        last, before = self._rate_between(now - quarter, now), self._rate_between(now - 2 * quarter, now - quarter)
        return before > 0 and last >= RISING * before

    def _rate_between(self, start: float, end: float) -> float:
        inside = [s for s in self._samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        (t0, b0), (t1, b1) = inside[0], inside[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0

    def _recent_rate(self, now: float, span: float) -> float:
        """Bytes per second over the last ``span`` seconds of the current step."""
        since = now - span
        older = [s for s in self._samples if s[0] <= since]
        t0, b0 = older[-1] if older else self._samples[0]
        t1, b1 = self._samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
