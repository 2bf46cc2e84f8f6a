"""What the store advises for ``--streams auto``: a fresh preflight of the host, else its benchmark log."""

from __future__ import annotations

import time

from .preflights import DEFAULT_MAX_AGE_DAYS

#: Settings key: days after which a measurement is redone before it is trusted
MAX_AGE_KEY = "preflight_max_age_days"


def max_age_days(store) -> float:
    try:
        return float(store.settings.get(MAX_AGE_KEY) or DEFAULT_MAX_AGE_DAYS)
    except ValueError:
        return DEFAULT_MAX_AGE_DAYS


def fresh_streams(store, host: str, backend: str) -> int | None:
    """The stream count a recent preflight recommended for this host and backend (``--streams auto``)."""
    result = store.preflights.latest(host, backend, max_age_days=max_age_days(store))
    return int(result["recommended_streams"]) if result and result.get("recommended_streams") else None


def fresh_transport(store, host: str, backend: str) -> dict | None:
    """What a recent preflight of this host measured about its transports (``--transport auto``), or None."""
    result = store.preflights.latest(host, backend, max_age_days=max_age_days(store))
    if not result or not result.get("recommended_transport"):
        return None
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(result["measured_at"]))
    return {"transport": result["recommended_transport"],
            "why": f"the preflight of {when} measured {result['transport_why']}"}


def advised_streams(store, host: str, backend: str) -> int | None:
    """A fresh preflight of the host first, then the fastest recent transfer there."""
    return fresh_streams(store, host, backend) or store.benchmarks.best_streams(host, backend)


def advised(store, options, host: str | None, backend: str):
    """``options`` with what the store knows of the route, where the user left it open: the streams ``auto``
    starts from (a fresh preflight of the host, then the fastest recent transfer there), the path's best rate
    (what ``--compress auto`` weighs the compressor's speed against; compressed transfers are logged at their
    wire rate) and a fresh preflight's transport advice (``--transport auto``: GridFTP's UDT)."""
    from dataclasses import replace

    if not host:
        return options
    if options.streams == "auto" and not options.initial_streams:
        options = replace(options, initial_streams=advised_streams(store, host, backend))
    if not options.path_rate:
        mbps = store.benchmarks.best_by_backend(host).get(backend)
        options = replace(options, path_rate=int(mbps * 1e6 / 8) if mbps else None)
    if not options.transport_advice:
        options = replace(options, transport_advice=fresh_transport(store, host, backend))
    return options
