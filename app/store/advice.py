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
