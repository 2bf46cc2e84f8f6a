"""Measuring a path: round trips, then a sweep of stream counts through the backend.

Runs on the engine's loop (the GUI asks the engine; the CLI runs its own loop). Backends
that can drop streams while running (HTTPS, SSH: ``sweep``) are measured **from above**:
the path is loaded with 64 streams, then 32, 16 … 1, in one run (``netprobe.sweep_down``),
because a short probe started from nothing sees streams before their first losses and
flatters the small counts (measured: the knee came out at 16 streams at 100 ms/1e-3 where
real 1 GiB transfers need 32, and at 1 stream at 20 ms/1e-5 where they need 4).
Backends that fix their streams at the start (GridFTP) get one ``probe`` per count,
doubling until two doublings in a row stop paying or the budget is spent. Levels last
about 20 round trips (1.2–2 s), so the whole preflight stays under 20 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from app.units import format_ms
from backends.core.abilities import PathProber, Sweeper, TransportProber
from backends.core.base import TransferOptions
from backends.core.errors import BadRequest, TransferError, Unreachable
from backends.host.netprobe import connect_time

from .recommend import RttStats, SweepPoint, flattened, streams_phrase

DEFAULT_PORTS = {"https": 443, "http": 80, "sftp": 22, "scp": 22, "ftp": 21, "gsiftp": 2811, "sshftp": 22}
COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: the sweep's budget (seconds); the round trips and set-up come on top
BUDGET_S = 17.0
QUICK_BUDGET_S = 6.0
#: the longest probe of another transport (GridFTP's UDT reads for 8 s: it grows its rate slowly)
TRANSPORT_PROBE_S = 20.0
#: what one probe may spend on connecting and logging in before its data (SSH logins queue at sshd)
PROBE_SETUP_S = 30.0


@dataclass
class Progress:
    """What the wizard's live plot and the CLI's lines show while measuring."""

    phase: str  # "rtt" | "sweep" | "done"
    message: str
    point: SweepPoint | None = None
    rtt: RttStats | None = None
    #: once the round trip is known: how long the rest should take (levels × their length, logins on top)
    expected_s: float | None = None


@dataclass
class Measurement:
    rtt: RttStats
    sweep: list[SweepPoint]
    seconds: float
    notes: list[str] = field(default_factory=list)
    #: other transports measured beside the TCP sweep (GridFTP's UDT): name → Mbit/s, None where it failed
    transports: dict[str, float | None] = field(default_factory=dict)
    #: the sweep stopped on its time budget, not because more streams stopped paying
    cut: bool = False


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
    """About 20 round trips per level (each is judged over its later part, after the change)."""
    low, high = (0.6, 1.0) if quick else (1.2, 2.0)
    return min(high, max(low, 20 * rtt_ms / 1000))


def expected_seconds(backend, counts: list[int], step: float, budget: float) -> float:
    """What the sweep should take once the round trip is known, said before it starts so that the wait is
    announced rather than promised in general: a sweep down loads the path for one level, then holds every count
    for one level; a sweep up stops at its budget. Logins (64 at once for SSH) come on top: about 2 s here."""
    if isinstance(backend, Sweeper):
        return (len(counts) + 1) * step + 2.0
    return min(budget, len(counts) * step * 1.5) + 2.0


async def measure(backend, url: str, options: TransferOptions, *, quick: bool = False,
                  on_progress: Callable[[Progress], None] | None = None, max_streams: int = 64) -> Measurement:
    if not isinstance(backend, (Sweeper, PathProber)):
        raise TransferError(f"{backend.name} transfers cannot be measured like a server; run the preflight on "
                            "one of the hosts instead.")
    began = time.monotonic()
    say = on_progress or (lambda p: None)
    host, port = endpoint(url)
    say(Progress("rtt", f"Measuring round trips to {host}…"))
    rtt = await round_trips(host, port, 3 if quick else 6)
    step = step_seconds(rtt.min_ms, quick)
    counts = [n for n in COUNTS if n <= max_streams] or [1]
    expected = expected_seconds(backend, counts, step, QUICK_BUDGET_S if quick else BUDGET_S)
    say(Progress("rtt", f"Round trip {format_ms(rtt.min_ms)} (median {format_ms(rtt.median_ms)}, jitter "
                        f"{format_ms(rtt.jitter_ms)}); about {expected:.0f} s to go",
                 rtt=rtt, expected_s=expected))
    cut = False  # a sweep down always reaches its last count
    if isinstance(backend, Sweeper):
        sweep, notes = await _sweep_down(backend, url, counts, step, options, host, say)
    else:
        sweep, notes, cut = await _sweep_up(backend, url, counts, step, options, host, say,
                                            QUICK_BUDGET_S if quick else BUDGET_S)
    if not sweep:
        raise TransferError(f"Nothing could be measured to {host}.")
    transports: dict[str, float | None] = {}
    if isinstance(backend, TransportProber):
        transports = await _other_transports(backend, url, step, options, host, say, notes)
    say(Progress("done", "Measured."))
    return Measurement(rtt, sweep, time.monotonic() - began, notes, transports, cut)


async def _other_transports(backend, url: str, step: float, options: TransferOptions, host: str, say,
                            notes: list[str]) -> dict[str, float | None]:
    """One probe per other transport the backend has to this URL (GridFTP's UDT): its rate, or None and a note."""
    rates: dict[str, float | None] = {}
    for name in backend.transports(url):
        label = name.upper()
        say(Progress("sweep", f"{label}…"))
        try:
            point = SweepPoint.of(await _bounded(backend.probe_transport(url, name, step, options),
                                                 PROBE_SETUP_S + TRANSPORT_PROBE_S, f"{host} over {label}"))
        except TransferError as exc:
            rates[name] = None
            reason = getattr(exc, "reason", None)  # a short cause, where the backend gives one
            notes.append(f"{label} was not measured ({reason}), so --transport auto keeps to TCP on this path."
                         if reason else f"{label} was not measured: {exc}")
            continue
        rates[name] = point.mbps
        say(Progress("sweep", f"{label}: {point.mbps:.0f} Mbit/s"))
    return rates


async def _sweep_down(backend, url: str, counts: list[int], step: float, options: TransferOptions, host: str,
                      say) -> tuple[list[SweepPoint], list[str]]:
    """Backends that can drop streams while running: one run, from the most streams down."""

    def level(result) -> None:
        point = SweepPoint.of(result)
        say(Progress("sweep", f"{streams_phrase(point.streams)}: {point.mbps:.0f} Mbit/s", point=point))

    say(Progress("sweep", f"Loading the path with {streams_phrase(max(counts))}, then fewer…"))
    limit = PROBE_SETUP_S + max(counts) * 0.5 + step * (len(counts) + 1) * 2
    results = await _bounded(backend.sweep(url, counts, step, options, level), limit, host)
    notes = []
    if len(results) == 1 and results[0].streams < max(counts):
        notes.append(_NO_RANGES.format(backend=backend.name))
    return sorted((SweepPoint.of(r) for r in results), key=lambda p: p.streams), notes


async def _sweep_up(backend, url: str, counts: list[int], step: float, options: TransferOptions, host: str, say,
                    budget: float) -> tuple[list[SweepPoint], list[str], bool]:
    """Backends that fix their streams at the start (GridFTP): one probe per count, doubling while it pays.
    Also returns whether the time budget ended it (rather than the rate, or the last count)."""
    sweep: list[SweepPoint] = []
    notes: list[str] = []
    began = time.monotonic()
    for count in counts:
        say(Progress("sweep", f"{streams_phrase(count)}…"))
        limit = PROBE_SETUP_S + count * 0.5 + step * 2
        point = SweepPoint.of(await _bounded(backend.probe(url, count, step, options), limit,
                                             f"{host} with {streams_phrase(count)}"))
        if point.streams < count:
            notes.append(_NO_RANGES.format(backend=backend.name))
            if any(p.streams == point.streams for p in sweep):
                break
        sweep.append(point)
        say(Progress("sweep", f"{streams_phrase(point.streams)}: {point.mbps:.0f} Mbit/s", point=point))
        if point.streams < count or (flattened(sweep) and flattened(sweep[:-1])):
            break  # one stream is all there is, or two doublings in a row stopped paying (one may be noise)
        elapsed = time.monotonic() - began
        if elapsed + (elapsed / len(sweep)) * 1.3 > budget:  # the next step (longer: more streams) would overrun
            notes.append(f"The sweep stopped at {streams_phrase(count)} to stay within its time budget.")
            return sweep, notes, count != counts[-1]
    return sweep, notes, False


_NO_RANGES = ("The server does not accept range requests, so {backend} can use only one stream here. Ask its "
              "administrators to enable them, or use another protocol.")


async def _bounded(work, limit: float, what: str):
    """A sweep or a probe; a server that stops answering ends the preflight in words, not a hang."""
    try:
        return await asyncio.wait_for(work, limit)
    except asyncio.TimeoutError:
        raise Unreachable(f"Measuring {what} took over {limit:.0f} s (the server stopped answering); try again "
                          "later.") from None
