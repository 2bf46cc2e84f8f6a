"""The preflight of a relay (``labferry preflight TARGET --via site:NAME``): is the path through the DTN faster?

Three measurements, one after another (at once they would share the last mile and spoil each other): the
direct path from here to TARGET, the first hop from here to the relay's host, and the second hop, measured by
the agent on that host to TARGET as it sees it. A relay is a pipeline: it moves at the slower hop's rate, each
hop with at most the relay's streams (``app.requests.RELAY_MAX_STREAMS``). It is recommended when that beats the
direct path by ``GAIN`` or more, in one sentence that says why.
"""

from __future__ import annotations

#: the relay is worth its extra hop when it is at least this much faster than the direct path
GAIN = 1.2


def best_rate(analysis: dict, max_streams: int | None = None) -> tuple[float, int]:
    """The best Mbit/s of a preflight's sweep with at most ``max_streams`` streams, and that count."""
    points = [(rate, int(n)) for n, rate in analysis["sweep"].items() if max_streams is None or int(n) <= max_streams]
    if not points:
        return 0.0, 0
    return max(points)


def verdict(direct: dict, first: dict, second: dict, via: str, max_streams: int) -> dict:
    """Pure: the three preflights' figures → the relay's estimate and the sentence that recommends it or not."""
    direct_rate, direct_streams = best_rate(direct)
    first_rate, first_streams = best_rate(first, max_streams)
    second_rate, second_streams = best_rate(second, max_streams)
    relay_rate = min(first_rate, second_rate)
    ratio = relay_rate / direct_rate if direct_rate else float("inf")
    slower = "the last mile" if first_rate <= second_rate else "the backbone"
    figures = (f"through {via} about {relay_rate:.0f} Mbit/s (last mile {first_rate:.0f} with {first_streams} "
               f"streams, backbone {second_rate:.0f} with {second_streams}; {slower} sets the pace) against "
               f"{direct_rate:.0f} Mbit/s direct with {direct_streams}")
    if ratio >= GAIN:
        why = f"Send it via {via}: {figures}, {ratio:.1f}× faster."
    elif ratio >= 1.0:
        why = f"Copy directly: {figures}; the relay would gain only {ratio:.2f}×, less than its extra hop is worth."
    else:
        why = f"Copy directly: {figures}."
    return {"via": via, "recommend_relay": ratio >= GAIN, "ratio": round(ratio, 2), "why": why,
            "relay_mbps": round(relay_rate, 1), "direct_mbps": round(direct_rate, 1),
            "first_hop": {"host": first["host"], "mbps": round(first_rate, 1), "streams": first_streams,
                          "rtt_ms": first.get("rtt_ms")},
            "second_hop": {"host": second["host"], "mbps": round(second_rate, 1), "streams": second_streams,
                           "rtt_ms": second.get("rtt_ms")},
            "direct": {"host": direct["host"], "mbps": round(direct_rate, 1), "streams": direct_streams,
                       "rtt_ms": direct.get("rtt_ms")}}
