"""Which data channel a GridFTP job uses: parallel TCP streams, or UDT (``--transport tcp|udt|auto``).

UDT is GridFTP's UDP-based transport (``globus-url-copy -udt``): its rate depends less on the round trip than one
TCP stream's, but it is one flow (stream mode: any ``-p`` makes the copy hang), it costs more CPU, and
globus-url-copy asks for it only on ``gsiftp://``. Measured on this machine's emulated 1 Gbit/s paths it beat
one TCP stream and never 32 (docs/benchmarks.md), so ``auto`` picks it only where a preflight of that host
measured it faster than the TCP streams it would otherwise use (``TransferOptions.transport_advice``, filled by
the front door). If UDT then fails to start (the server no longer allows it, or this computer lacks the driver),
``auto`` says so and goes over TCP; an explicit ``--transport udt`` fails in that sentence instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from ..core.base import Result, Sink, TransferRequest
from ..core.options import read_options
from ..core.registry import scheme_of
from .address import SCHEMES
from .faults import NoUdt
from .options import GridftpOptions


@dataclass(frozen=True)
class Choice:
    udt: bool
    auto: bool  # chosen by --transport auto (a UDT that fails to start falls back to TCP)
    why: str | None = None  # a note for the job, when auto chose something worth saying


def gsi_only(request: TransferRequest) -> bool:
    """Whether every GridFTP end of the request is gsiftp:// (UDT is asked for together with GSI)."""
    ends = [u for u in (request.source, request.dest) if scheme_of(u) in SCHEMES]
    return bool(ends) and all(scheme_of(u) == "gsiftp" for u in ends)


def choose(request: TransferRequest) -> Choice:
    asked = read_options(GridftpOptions, request.options.backend_options).transport
    if asked != "auto":
        return Choice(asked == "udt", False)
    advice = request.options.transport_advice or {}
    if advice.get("transport") != "udt":
        return Choice(False, True)  # TCP, as always: nothing measured UDT faster
    if not gsi_only(request):
        return Choice(False, True, "A preflight measured UDT faster to this host, but UDT works only on gsiftp:// "
                                   "addresses, so this copy went over TCP.")
    why = advice.get("why") or "a preflight measured it faster"
    return Choice(True, True, f"UDT chosen by --transport auto: {why}.")


def pinned(request: TransferRequest, transport: str) -> TransferRequest:
    """The request with its transport decided (``tcp`` or ``udt``), as the copy's plan reads it."""
    backend_options = dict(request.options.backend_options, transport=transport)
    return replace(request, options=replace(request.options, backend_options=backend_options))


async def run(request: TransferRequest, sink: Sink, route: Callable[[TransferRequest, Sink], Awaitable[Result]]
              ) -> Result:
    """``route`` the request over the chosen transport; under ``auto``, over TCP when UDT fails to start."""
    choice = choose(request)
    notes = [choice.why] if choice.why else []
    try:
        result = await route(pinned(request, "udt" if choice.udt else "tcp"), sink)
    except NoUdt as exc:
        if not (choice.auto and choice.udt):
            raise
        fell_back = (f"UDT did not start ({exc.reason}), so --transport auto sent this copy over TCP. Measure the "
                     "path again (labferry preflight) to refresh the choice.")
        sink.note(fell_back)
        notes.append(fell_back)
        result = await route(pinned(request, "tcp"), sink)
    result.notes[:0] = notes
    return result
