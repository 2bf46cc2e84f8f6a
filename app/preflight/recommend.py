"""From a measured path to advice: streams, TCP buffer, host settings, protocol.

Pure functions over numbers (a sweep of stream counts and rates, round-trip samples,
benchmark-log rows, this host's TCP settings), so they are unit-tested on recorded
sweeps. The reasoning, in short:

* one TCP stream moves at most its window / RTT, and on a lossy path at most
  MSS / (RTT·√p)·C (Mathis et al.); streams add up until the bottleneck is full;
* so the sweep's best aggregate estimates the bottleneck, the single stream gives a
  rough loss rate, and the stream count to use is the **knee**: the fewest streams
  that already reach nearly the best rate (more streams cost logins, memory and
  fairness to others on the path, and buy nothing);
* the transfers Ferry actually made to that host (the benchmark log) outrank a
  short probe when they clearly did better with another count: recent ones weigh
  more, since paths change.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field

from app.units import counted
from backends.host.hosttcp import Advice, HostTcp, advise
from backends.streams.tuner import initial_streams

#: the knee: the fewest streams reaching this share of the best swept rate
KNEE_SHARE = 0.93
#: a doubling that adds less than this share of the rate so far has flattened the curve
FLAT_GAIN = 0.08
#: Mathis et al.'s constant for periodic loss with delayed ACKs off: sqrt(3/2)
MATHIS_C = math.sqrt(1.5)
#: the segment size assumed when the path's MSS is unknown (Ethernet MTU 1500 with timestamps)
DEFAULT_MSS = 1448
#: a benchmark-log row's throughput counts half after this many days (paths and their loads change)
HALF_LIFE_DAYS = 30.0
#: real transfers must beat the sweep's choice by this much to override it
LOG_MARGIN = 1.05
#: another transport (GridFTP's UDT) must beat the recommended TCP streams by this much: it costs more CPU,
#: and a short probe of it is rougher than a sweep
TRANSPORT_MARGIN = 1.1


@dataclass
class SweepPoint:
    streams: int
    mbps: float
    bytes: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, probe) -> SweepPoint:
        """A backend's ``ProbeResult`` as a point of the sweep."""
        return cls(probe.streams, probe.mbps, probe.bytes, probe.seconds)


@dataclass
class RttStats:
    samples_ms: list[float]

    @property
    def min_ms(self) -> float | None:
        return min(self.samples_ms) if self.samples_ms else None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.samples_ms) if self.samples_ms else None

    @property
    def jitter_ms(self) -> float | None:
        """Mean difference between consecutive samples (RFC 3550's idea, unsmoothed)."""
        s = self.samples_ms
        if len(s) < 2:
            return 0.0 if s else None
        return sum(abs(a - b) for a, b in zip(s, s[1:], strict=False)) / (len(s) - 1)

    def to_dict(self) -> dict:
        return {"samples_ms": [_ms(x) for x in self.samples_ms], "min_ms": _ms(self.min_ms),
                "median_ms": _ms(self.median_ms), "jitter_ms": _ms(self.jitter_ms)}


def _ms(x: float | None) -> float | None:
    """Milliseconds to the microsecond (the kernel's resolution): a loopback round trip of 4 µs is not 0."""
    return round(x, 3) if x is not None else None


def flattened(sweep: list[SweepPoint]) -> bool:
    """Whether the last doubling stopped paying (the sweep may end there)."""
    if len(sweep) < 2:
        return False
    before, last = sweep[-2], sweep[-1]
    return last.mbps < before.mbps * (1 + FLAT_GAIN)


def knee(sweep: list[SweepPoint], share: float = KNEE_SHARE) -> int:
    """The fewest streams whose rate reaches ``share`` of the best in the sweep."""
    if not sweep:
        return 1
    best = max(p.mbps for p in sweep)
    return min(p.streams for p in sweep if p.mbps >= share * best)


def mathis_loss(single_mbps: float, rtt_ms: float, mss: int = DEFAULT_MSS) -> float | None:
    """The loss rate at which one Reno stream would run at ``single_mbps`` (a rough estimate: cubic and BBR
    reach more at the same loss, so the real loss rate is likely higher)."""
    if single_mbps <= 0 or rtt_ms <= 0:
        return None
    rate_bytes = single_mbps * 1e6 / 8
    return (MATHIS_C * mss / (rtt_ms / 1000 * rate_bytes)) ** 2


def weighted_by_streams(rows: list[dict], now: float | None = None) -> dict[int, float]:
    """Benchmark-log rows → stream count → mean Mbit/s, each row discounted by its age (half-life)."""
    now = now or time.time()
    values: dict[int, list[float]] = {}
    for row in rows:
        if not row.get("streams"):
            continue
        age_days = max(0.0, (now - row["started"]) / 86400)
        values.setdefault(int(row["streams"]), []).append(row["throughput_mbps"] * 0.5 ** (age_days / HALF_LIFE_DAYS))
    return {n: sum(v) / len(v) for n, v in values.items()}


@dataclass
class Recommendation:
    streams: int
    why: str
    tcp_bs: int | None = None  # GridFTP's -tcp-bs, when forcing a buffer beats autotuning
    tcp_bs_why: str = ""
    backend: str | None = None
    backend_why: str = ""
    transport: str | None = None  # "tcp" or another the backend has (udt); None: nothing else to choose from
    transport_why: str = ""


@dataclass
class Analysis:
    """Everything the CLI prints and the wizard shows; ``to_dict`` is the ``--json`` object."""

    url: str
    backend: str
    host: str
    rtt: RttStats
    sweep: list[SweepPoint]
    bottleneck_mbps: float
    loss_estimate: float | None
    loss_note: str
    bdp_bytes: int
    recommendation: Recommendation
    tcp: HostTcp
    advice: list[Advice]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    measured_at: float = field(default_factory=time.time)
    transports: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        rec = self.recommendation
        return {
            "url": self.url, "backend": self.backend, "host": self.host,
            "measured_at": self.measured_at, "seconds": round(self.seconds, 2),
            "rtt_ms": _ms(self.rtt.min_ms), "rtt": self.rtt.to_dict(),
            "sweep": {str(p.streams): round(p.mbps, 1) for p in self.sweep},
            "bottleneck_mbps": round(self.bottleneck_mbps, 1),
            "loss_estimate": self.loss_estimate, "loss_note": self.loss_note,
            "bdp_bytes": self.bdp_bytes,
            "recommended_streams": rec.streams, "streams_why": rec.why,
            "recommended_backend": rec.backend, "backend_why": rec.backend_why,
            "gridftp_tcp_bs": rec.tcp_bs, "tcp_bs_why": rec.tcp_bs_why,
            "transports": {k: (round(v, 1) if v is not None else None) for k, v in self.transports.items()},
            "recommended_transport": rec.transport, "transport_why": rec.transport_why,
            "sysctl": [a.line for a in self.advice],
            "sysctl_reasons": [asdict(a) for a in self.advice],
            "host_tcp": self.tcp.to_dict(),
            "notes": list(self.notes),
        }


def streams_phrase(n: int) -> str:
    """"1 stream", "8 streams": the words every preflight message uses."""
    return counted(n, "stream")


def choose_streams(sweep: list[SweepPoint], log_rows: list[dict], now: float | None = None) -> tuple[int, str]:
    """The sweep's knee, unless real transfers to this host clearly did better with another count."""
    k = knee(sweep)
    best = max(sweep, key=lambda p: p.mbps) if sweep else None
    why = (f"{streams_phrase(k)} reached {next(p.mbps for p in sweep if p.streams == k):.0f} Mbit/s, within "
           f"{100 - KNEE_SHARE * 100:.0f} % of the best measured ({best.mbps:.0f} Mbit/s with {best.streams})"
           if best else "nothing was measured; one stream")
    learned = weighted_by_streams(log_rows, now)
    if learned:
        top = max(learned, key=learned.get)
        baseline = learned.get(k) or next((p.mbps for p in sweep if p.streams == k), 0.0)
        if top != k and learned[top] >= LOG_MARGIN * baseline:
            return top, (f"{streams_phrase(top)}: earlier transfers to this host averaged {learned[top]:.0f} "
                         f"Mbit/s with that count (recent ones weigh more), better than the {baseline:.0f} Mbit/s "
                         f"expected with {k}")
    return k, why


def cut_while_growing(sweep: list[SweepPoint], cut: bool) -> bool:
    """Whether the sweep stopped on its time budget (``cut``) while each doubling still paid, or after one count:
    more streams were not tried.

    Backends that probe one count at a time (GridFTP: each probe ≥ 5 s and a login) may stop at 4 streams on a
    long path where 32 are needed: at 100 ms / 1e-3 a gsiftp:// sweep read 25, 156, 319 Mbit/s for 1, 2, 4; at
    200 ms / 1e-3 it stopped after one stream (8 Mbit/s in 8 s), which says nothing of how streams add up."""
    return cut and bool(sweep) and not flattened(sweep)


def choose_transport(sweep: list[SweepPoint], streams: int, transports: dict[str, float | None],
                     growing: bool = False) -> tuple[str | None, str]:
    """TCP with the recommended streams, unless another transport measured clearly faster (``TRANSPORT_MARGIN``).

    ``growing``: the sweep stopped while TCP still grew with streams, so TCP with ``streams`` is taken to reach
    the last rate scaled by the streams (a trend, not a measurement: it only keeps another transport from being
    chosen on a cut sweep). The sentence completes "the preflight measured …" (the job's note under ``auto``)."""
    measured = {name: rate for name, rate in transports.items() if rate}
    if not transports:
        return None, ""
    last = sweep[-1] if sweep else None
    if growing and last and streams > last.streams:
        tcp = last.mbps * streams / last.streams
        tcp_words = f"TCP at {last.mbps:.0f} Mbit/s with {streams_phrase(last.streams)} and still growing"
    else:
        tcp = next((p.mbps for p in sweep if p.streams == streams), max((p.mbps for p in sweep), default=0.0))
        tcp_words = f"TCP at {tcp:.0f} Mbit/s with {streams_phrase(streams)}"
    if not measured:
        return "tcp", f"{tcp_words}; {', '.join(n.upper() for n in transports)} could not be measured"
    if tcp <= 0:  # the probes ended before their first byte: TCP's rate is unknown, not zero
        return "tcp", (f"TCP moved nothing within its probes (logins and slow start on a long path) and "
                       f"{', '.join(f'{n.upper()} at {r:.0f} Mbit/s' for n, r in measured.items())}; another "
                       "transport is chosen only when it measured faster than TCP")
    top = max(measured, key=measured.get)
    top_words = f"{top.upper()} at {measured[top]:.0f} Mbit/s"
    if measured[top] >= TRANSPORT_MARGIN * tcp:
        return top, f"{top_words} and {tcp_words}"
    return "tcp", (f"{tcp_words} and {top_words} (another transport must be {TRANSPORT_MARGIN:.1f}× faster to be "
                   "chosen)")


def loss_reading(single_mbps: float, rtt_ms: float, bottleneck_mbps: float, tcp: HostTcp) -> tuple[float | None, str]:
    """The Mathis loss bound from one stream, and what it means in words."""
    if single_mbps <= 0:
        return None, "one stream moved nothing; no loss estimate"
    if rtt_ms < 1:
        return None, "the path is too short (under 1 ms) for loss to limit a stream; no loss estimate"
    buffer_cap = tcp.max_rate_mbps(rtt_ms) if tcp.available else None
    if single_mbps >= 0.8 * bottleneck_mbps:
        return None, ("one stream alone nearly filled the path, so loss is too low to estimate (or the path is "
                      "short): parallel streams add little here")
    if buffer_cap and single_mbps >= 0.8 * buffer_cap:
        return None, (f"one stream was held by this host's TCP buffers ({buffer_cap:.0f} Mbit/s at this round "
                      "trip), not by loss: raise the buffers (below) before blaming the network")
    p = mathis_loss(single_mbps, rtt_ms)
    return p, (f"one stream at {single_mbps:.0f} Mbit/s over {rtt_ms:.0f} ms fits a loss rate of about {p:.0e} "
               "(Mathis model for Reno; cubic and BBR hold more at the same loss, so the real rate may be higher): "
               "loss, not bandwidth, limits single streams on this path")


def choose_backend(backend: str, bottleneck_mbps: float, per_backend: dict[str, float]) -> tuple[str, str]:
    """The protocol to use for this address: the one it names, with what earlier transfers and comparisons to the
    host measured beside it. Another protocol that was faster there is named, never put in its place: the same
    host may serve other data another way (a DTN's web server beside its SFTP), and a site that speaks SFTP was
    once told to use HTTPS."""
    if per_backend:
        # the preflight just measured this protocol uncapped: compared with the others' uncapped transfers only
        per_backend = {**per_backend, backend: max(per_backend.get(backend, 0.0), bottleneck_mbps)}
        top = max(per_backend, key=per_backend.get)
        ranked = ", ".join(f"{b} {v:.0f}" for b, v in sorted(per_backend.items(), key=lambda kv: -kv[1]))
        if top == backend:
            return backend, f"fastest in Ferry's transfers and comparisons to this host (Mbit/s: {ranked})"
        return backend, (f"this address is {backend}; {top} was faster in earlier transfers and comparisons to this "
                         f"host (Mbit/s: {ranked}): use {top} where this server offers the same data that way")
    return backend, (f"{backend} reached {bottleneck_mbps:.0f} Mbit/s here; no other protocol has been measured to "
                     "this host yet (run a comparison to rank them)")


def analyse(*, url: str, backend: str, host: str, rtt: RttStats, sweep: list[SweepPoint], tcp: HostTcp,
            log_rows: list[dict] | None = None, per_backend: dict[str, float] | None = None,
            tcp_bs_rule=None, now: float | None = None, transports: dict[str, float | None] | None = None,
            max_streams: int = 64, sweep_cut: bool = False) -> Analysis:
    """The whole recommendation. ``tcp_bs_rule(streams, rtt_s, bottleneck_bps)`` → (bytes|None, why), GridFTP's;
    ``sweep_cut``: the sweep stopped on its time budget, below ``max_streams``."""
    rtt_ms = rtt.min_ms or 0.0
    bottleneck = max((p.mbps for p in sweep), default=0.0)
    single = next((p.mbps for p in sweep if p.streams == 1), 0.0)
    loss, loss_note = loss_reading(single, rtt_ms, bottleneck, tcp) if sweep else (None, "nothing was measured")
    streams, why = choose_streams(sweep, log_rows or [], now)
    growing = cut_while_growing(sweep, sweep_cut)
    if growing and streams <= sweep[-1].streams:
        table = initial_streams(rtt_ms / 1000, None, max_streams, 1)
        if table > streams:
            streams, why = table, (f"{streams_phrase(table)}, as for a {rtt_ms:.0f} ms round trip: the rate still grew "
                                   f"with each doubling up to {streams_phrase(sweep[-1].streams)} when the sweep "
                                   "stopped, so fewer would leave the path idle")
    top, top_why = choose_backend(backend, bottleneck, per_backend or {})
    rec = Recommendation(streams, why, backend=top, backend_why=top_why)
    rec.transport, rec.transport_why = choose_transport(sweep, streams, transports or {}, growing)
    if tcp_bs_rule is not None and rtt_ms:
        rec.tcp_bs, rec.tcp_bs_why = tcp_bs_rule(streams, rtt_ms / 1000, bottleneck * 1e6)
    # the host should carry the path's BDP in one stream (an scp or single HTTPS stream); cubic suffers with loss
    needs = advise(tcp, rtt_ms, bottleneck, streams, lossy=loss is not None and loss > 1e-5)
    notes = []
    if len(sweep) >= 2 and not flattened(sweep) and sweep[-1].streams >= 64:
        notes.append("The rate still grew at 64 streams: the path is very lossy or long; Ferry's maximum is 64.")
    return Analysis(url, backend, host, rtt, sweep, bottleneck, loss, loss_note, needs.bdp_bytes, rec, tcp,
                    needs.advice, notes=notes, transports=dict(transports or {}))
