"""Measuring a path: round trips, then a short sweep of stream counts through the backend's ``probe``.

Runs on the engine's loop (the GUI asks the engine; the CLI runs its own loop). Each
sweep step is a real transfer of the site's data with N streams for a few seconds,
discarded; counts double (1, 2, 4 … 64) until two doublings in a row stop paying or
the time budget is spent, so a LAN is done in a few steps and a long lossy path gets
the counts it needs. Steps are sized from the round trip: long enough for the new
streams to leave slow start, short enough that the whole preflight stays near 15 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from backends.base import TransferOptions
from backends.errors import BadRequest, TransferError, Unreachable
from backends.netprobe import connect_time

from .recommend import FLAT_GAIN, RttStats, SweepPoint

DEFAULT_PORTS = {"https": 443, "http": 80, "sftp": 22, "scp": 22, "ftp": 21, "gsiftp": 2811, "sshftp": 22}
COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: the sweep's budget (seconds); the round trips and set-up come on top
BUDGET_S = 17.0
QUICK_BUDGET_S = 6.0
#: what one probe may spend on connecting and logging in before its data (SSH logins queue at sshd)
PROBE_SETUP_S = 30.0


@dataclass
class Progress:
    """What the wizard's live plot and the CLI's lines show while measuring."""

    phase: str  # "rtt" | "sweep" | "done"
    message: str
    point: SweepPoint | None = None
    rtt: RttStats | None = None


@dataclass
class Measurement:
    rtt: RttStats
    sweep: list[SweepPoint]
    seconds: float
    notes: list[str] = field(default_factory=list)


def endpoint(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise BadRequest(f"'{url}' is not a valid address (bad port or brackets).") from None
    if not parts.hostname or parts.scheme not in DEFAULT_PORTS:
        raise BadRequest(f"Ferry can measure https://, sftp://, scp:// and ftp:// (GridFTP) sites; '{url}' is not "
                         "one of them.")
    return parts.hostname, port or DEFAULT_PORTS[parts.scheme]


async def round_trips(host: str, port: int, count: int) -> RttStats:
    """``count`` TCP handshakes one after another (each is one round trip, with no server work)."""
    samples = []
    for _ in range(count):
        spent = await connect_time(host, port, timeout=5.0)
        if spent is not None:
            samples.append(spent * 1000)
    if not samples:
        raise Unreachable(f"Ferry could not connect to {host} port {port}. Check the address, and that the server "
                          "is running and not blocked by a firewall.")
    return RttStats(samples)


def step_seconds(rtt_ms: float, quick: bool) -> float:
    """About 18 round trips per step (the probes count only the later half, past slow start)."""
    low, high = (0.6, 1.0) if quick else (1.2, 1.8)
    return min(high, max(low, 18 * rtt_ms / 1000))


async def measure(backend, url: str, options: TransferOptions, *, quick: bool = False,
                  on_progress: Callable[[Progress], None] | None = None, max_streams: int = 64) -> Measurement:
    began = time.monotonic()
    say = on_progress or (lambda p: None)
    host, port = endpoint(url)
    say(Progress("rtt", f"Measuring round trips to {host}…"))
    rtt = await round_trips(host, port, 3 if quick else 6)
    say(Progress("rtt", f"Round trip {rtt.min_ms:.1f} ms (median {rtt.median_ms:.1f}, jitter {rtt.jitter_ms:.1f})",
                 rtt=rtt))
    step = step_seconds(rtt.min_ms, quick)
    budget = QUICK_BUDGET_S if quick else BUDGET_S
    sweep: list[SweepPoint] = []
    notes: list[str] = []
    sweep_began = time.monotonic()
    for count in COUNTS:
        if count > max_streams:
            break
        say(Progress("sweep", f"{count} stream{'s' if count > 1 else ''}…"))
        result = await _probe(backend, url, count, step, options, host)
        if result.rtt_ms:
            rtt.samples_ms.append(result.rtt_ms)
        point = SweepPoint(result.streams, result.mbps, result.bytes, result.seconds)
        if result.streams < count:
            notes.append(f"The server does not accept range requests, so {backend.name} can use only one stream "
                         "here. Ask its administrators to enable them, or use another protocol.")
            if not any(p.streams == point.streams for p in sweep):
                sweep.append(point)
                say(Progress("sweep", f"{point.streams} stream: {point.mbps:.0f} Mbit/s", point=point))
            break
        sweep.append(point)
        say(Progress("sweep", f"{count} stream{'s' if count > 1 else ''}: {point.mbps:.0f} Mbit/s", point=point))
        if _flat_twice(sweep):
            break
        elapsed = time.monotonic() - sweep_began
        if elapsed + (elapsed / len(sweep)) * 1.3 > budget:  # the next step (longer: more streams) would overrun
            notes.append(f"The sweep stopped at {count} streams to stay within its time budget.")
            break
    if not sweep:
        raise TransferError(f"Nothing could be measured to {host}.")
    say(Progress("done", "Measured."))
    return Measurement(rtt, sweep, time.monotonic() - began, notes)


async def _probe(backend, url: str, count: int, step: float, options: TransferOptions, host: str):
    """One step; a server that stops answering ends the preflight in words, not a hang."""
    limit = PROBE_SETUP_S + count * 0.5 + step * 2
    try:
        return await asyncio.wait_for(backend.probe(url, count, step, options), limit)
    except asyncio.TimeoutError:
        raise Unreachable(f"Measuring {host} with {count} stream{'s' if count > 1 else ''} took over {limit:.0f} s "
                          "(the server stopped answering); try again later.") from None


def _flat(pair: list[SweepPoint]) -> bool:
    return len(pair) == 2 and pair[1].mbps < pair[0].mbps * (1 + FLAT_GAIN)


def _flat_twice(sweep: list[SweepPoint]) -> bool:
    """Two doublings in a row that stopped paying: one alone may be noise."""
    return len(sweep) >= 3 and _flat(sweep[-3:-1]) and _flat(sweep[-2:])
